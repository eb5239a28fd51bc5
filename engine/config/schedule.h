// Schedules of numeric hyperparameters: a value that follows the number of env
// frames trained on (learning rate decay, entropy annealing, ...).
//
// Scripts write schedules in Lua (scripts/loader/experiment_loader.h,
// docs/lua-api.md "Schedules"); a Lua function of progress is sampled there,
// at load time, into a piecewise schedule. What reaches the engine is only
// this plain data, so evaluating a schedule on the learner runs no Lua,
// allocates nothing and costs a binary search at most.
//
// Ownership: a Schedule is a value; ExperimentConfig::schedules holds one per
// scheduled field. A scheduled field still holds its plain value (the value at
// x = 0), so code that reads the field without knowing about schedules keeps
// working; apply_schedules() moves the fields along as training goes on.
//
// Failures: schedule_problem() says what is wrong with a malformed schedule
// (an expected outcome: the loader reports it against the script). at() and
// apply_schedules() require well-formed schedules on schedulable fields and
// throw std::invalid_argument / std::logic_error otherwise.
//
// Thread-safety: pure functions of their arguments; a Schedule is safe to read
// from any number of threads.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace moonseed::engine {

struct ExperimentConfig;

struct Schedule {
  enum class Kind { kConstant, kLinear, kCosine, kStep, kPiecewise };
  // x is the number of env frames, or progress = frames / stop.frames.
  enum class Axis { kFrames, kProgress };

  Kind kind = Kind::kConstant;
  Axis axis = Axis::kFrames;
  // (x, value) pairs, x strictly increasing; before the first x and after the
  // last the value is held. Per kind:
  //   constant:  {(0, v)}
  //   linear:    {(x0, from), (x1, to)}: a straight line from x0 to x1
  //   cosine:    {(x0, from), (x1, to)}: half a cosine, flat at both ends
  //   step:      {(x0, v0), (b1, v1), ...}: vk from bk on (a value changes
  //              exactly at its boundary)
  //   piecewise: {(x0, y0), (x1, y1), ...}: straight lines between the points
  std::vector<std::pair<double, double>> points;

  // The value at `x`. Requires a well-formed schedule (schedule_problem() ==
  // ""); throws std::logic_error when points is empty.
  double at(double x) const;

  bool operator==(const Schedule& other) const;
  bool operator!=(const Schedule& other) const { return !(*this == other); }
};

struct ScheduledField {
  std::string path;  // "optimizer.lr"
  Schedule schedule;

  bool operator==(const ScheduledField& other) const;
  bool operator!=(const ScheduledField& other) const { return !(*this == other); }
};

// "" when `schedule` is well formed, else what is wrong ("points must have
// strictly increasing x: point 3 (x = 5) follows x = 10"). Well formed: at
// least one point, all finite, x >= 0 (and <= 1 on the progress axis), x
// strictly increasing, exactly one point for constant, two for linear and cosine.
std::string schedule_problem(const Schedule& schedule);

const char* kind_name(Schedule::Kind kind);  // "constant", "linear", ...
const char* axis_name(Schedule::Axis axis);  // "frames", "progress"

// The field at `path` when it may follow a schedule: a number field of reload
// class hot in the schema (schema.h), which a running experiment takes at its
// next training step (optimizer.lr, vtrace.*, ...); nullptr for any other path.
double* schedulable_field(ExperimentConfig& config, const std::string& path);

// The schedule of `path` in config.schedules, nullptr when the field is constant.
const Schedule* find_schedule(const ExperimentConfig& config, const std::string& path);

// Writes every schedule's value at `frames` env frames into its field of
// `config` (progress = frames / stop.frames); other fields are left alone.
// Requires what the loader guarantees: schedulable paths, well-formed
// schedules, stop.frames > 0 when one is on the progress axis; throws
// std::invalid_argument naming the field otherwise. No allocation unless it throws.
void apply_schedules(ExperimentConfig& config, double frames);

}  // namespace moonseed::engine
