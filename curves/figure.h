// What a figure of learning curves shows, decided before a drawing tool sees
// it (`moonseed plot` hands it to gnuplot and to its CSV; docs/plot.md): axis
// ticks read at a glance (0, 250k, 500k, 1.5M: one format on an axis), the
// names a reader knows the metrics by (docs/metrics.md), wall time in the unit
// that suits its span, trailing-mean smoothing, and the grid of panels.
//
// Pure functions; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "curves/runs.h"

namespace moonseed::curves {

// Ticks of one axis: positions, their labels, and the axis range they span.
struct Ticks {
  std::vector<double> at;
  std::vector<std::string> labels;
  double low = 0;
  double high = 1;
};
// About `target` ticks over [low, high] at multiples of a step of 1, 2, 2.5 or
// 5 x 10^k. `tight`: the range stays [low, high] and the ticks lie within it
// (an x axis ends at the last point); otherwise the range widens to the ticks
// around the data (a y axis). low == high gets a range around the value.
Ticks nice_ticks(double low, double high, int target = 6, bool tight = false);

// A tick's label for ticks `step` apart: as few digits as tell the ticks apart,
// SI prefixes from a thousand on ("0", "250k", "1.5M", "2G"), plain below
// ("-150", "0.25"), scientific for tiny steps ("2.5e-4"). `si` false: no
// prefix (an axis whose ticks all lie below 10^4 reads 800, 1000, not 800, 1k).
std::string tick_label(double value, double step, bool si = true);

// How a metric is named on a figure: the panel's title ("return (last 100
// episodes)") and the y axis' label ("return"). A key without a name of its
// own is shown as itself.
struct MetricLabel {
  std::string title;
  std::string axis;
};
MetricLabel metric_label(const std::string& metric);

// Wall time in the unit that suits a span of `max_seconds`: seconds up to 10
// minutes, minutes up to 10 hours, hours beyond.
struct TimeUnit {
  double seconds = 1;  // seconds per unit
  std::string name;    // "s", "min", "h"
};
TimeUnit time_unit(double max_seconds);

// Each point's y replaced by the mean of it and the `window` - 1 points
// before it (fewer at the start); window <= 1 leaves the series as it is.
Series smooth(const Series& s, int window);

// Panels of `metrics` metrics for `envs` envs: one row per metric, the envs
// side by side (at most 3 a row, wrapping); one env: one column.
struct Grid {
  int rows = 1;
  int cols = 1;
};
Grid grid_for(int metrics, int envs);

}  // namespace moonseed::curves
