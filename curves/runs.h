// Runs read back for plotting and comparing: the run directories under the
// paths a user names, each run's points of metrics.jsonl (is_point) and its config,
// series of one metric against frames or wall time, and the runs that differ
// only by their seed grouped into a mean and a min/max band (docs/plot.md).
//
// Problems a user can fix (a missing directory, no run found) throw
// std::runtime_error with the path; what can be worked around (a torn line,
// no config.lua) is skipped with a base::log_warning. Thread-safe: no state.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "curves/metrics_row.h"

namespace moonseed::curves {

enum class XAxis { kFrames, kTime };
// The metrics.jsonl key of the axis: "frames" or "time_s".
const char* x_key(XAxis x);

struct Point {
  double x = 0;
  double y = 0;
};
using Series = std::vector<Point>;

struct Run {
  std::string dir;             // the directory as found
  std::string id;              // its last path component, e.g. "cartpole_vtrace-20261126-101500"
  std::string name;            // config.lua's `name`; the id when there is no config.lua
  std::optional<int64_t> seed; // config.lua's `seed`
  std::string env;             // config.lua's `env.id`; "" when there is no config.lua
  // config.lua without its `seed` and `runs_dir` lines: runs with equal
  // non-empty keys differ only by seed. "" when there is no config.lua.
  std::string config_key;
  std::vector<MetricsRow> rows;  // the rows that are points (is_point), in file order
};

// The run directories `paths` name, in the order given: a directory holding a
// metrics.jsonl is a run; any other directory is searched below (a run's own
// subdirectories are not), its runs sorted by path. Throws when a path does
// not exist or is not a directory, and when no run is found at all.
std::vector<std::string> find_run_dirs(const std::vector<std::string>& paths);

// Reads one run directory. Lines of metrics.jsonl that are not whole JSON
// objects (a torn last line) are skipped with one warning per run. Throws when
// metrics.jsonl cannot be read.
Run read_run(const std::string& dir);
// The same without metrics.jsonl's rows (`rows` stays empty): enough to group
// runs. Does not throw; a missing config.lua is warned about as above.
Run read_run_config(const std::string& dir);

// Every key with a number in some point row of some run, sorted.
std::vector<std::string> metric_names(const std::vector<Run>& runs);
// Whether some point row of `run` has a number for `metric`.
bool has_metric(const Run& run, const std::string& metric);

// `metric` against `x`, from the rows that have both as numbers (a null, such
// as a mean before the first episode, leaves the row out), x strictly
// increasing: a row whose x is not past the previous one's (a resumed run goes
// back to its checkpoint's counters) replaces the points it does not pass.
Series series(const Run& run, const std::string& metric, XAxis x);

// Runs with the same config apart from the seed, in order of first appearance
// (`runs` indexes into the vector given). A run without config.lua is a group
// of its own. `label` is the config's name, with " (N seeds)" for N > 1 runs
// of N different seeds (" (N runs)" when some share a seed)
// and " #2", " #3"... when several groups share a name.
struct Group {
  std::string label;
  std::vector<size_t> runs;
};
std::vector<Group> group_runs(const std::vector<Run>& runs);
// The same over runs held elsewhere (a subset of a vector, without copying it).
std::vector<Group> group_runs(const std::vector<const Run*>& runs);

// The members' mean, minimum and maximum on a common grid: every member's x
// that lies where all members have points (from the largest first x to the
// smallest last x), each member interpolated linearly there. When those are
// more than `max_points`, the grid is `max_points` evenly spaced x over the
// same span instead. Empty when the members do not overlap or one is empty.
struct Band {
  std::vector<double> x, mean, low, high;
};
Band band(const std::vector<Series>& members, size_t max_points = 2000);

// `s` at `x` by linear interpolation; x must lie within the series' span.
double interpolate(const Series& s, double x);

}  // namespace moonseed::curves
