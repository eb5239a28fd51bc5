#include "curves/figure.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>

namespace moonseed::curves {
namespace {

// `text` without the zeros after its decimal point that say nothing ("1.50" -> "1.5", "2.0" -> "2").
std::string without_trailing_zeros(std::string text) {
  if (text.find('.') == std::string::npos) return text;
  while (!text.empty() && text.back() == '0') text.pop_back();
  if (!text.empty() && text.back() == '.') text.pop_back();
  return text;
}

// Decimals that write multiples of `step` exactly in units of `scale`: a step
// of m x 10^k (m 1, 2, 2.5 or 5) needs -k of them, one more for 2.5.
int decimals_for(double step, double scale) {
  const double units = step / scale;
  const int k = static_cast<int>(std::floor(std::log10(units) + 1e-9));
  const double m = units / std::pow(10.0, k);
  const int extra = std::abs(m - std::round(m)) > 1e-6 ? 1 : 0;
  return std::clamp(-k + extra, 0, 6);
}

std::string fixed(double v, int decimals) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.*f", decimals, v);
  return without_trailing_zeros(buffer);
}

}  // namespace

std::string tick_label(double value, double step, bool si) {
  if (value == 0 || std::abs(value) < std::abs(step) * 1e-9) return "0";
  const double size = std::abs(value);
  step = std::abs(step);
  if (step < 1e-3 && size < 1e-2) {
    // 2.5e-4: the mantissa with the digits the step needs, the exponent without padding.
    const int exponent = static_cast<int>(std::floor(std::log10(size)));
    const double scale = std::pow(10.0, exponent);
    std::string mantissa = fixed(value / scale, decimals_for(step, scale));
    if (mantissa == "10" || mantissa == "-10") return tick_label(value >= 0 ? 10 * scale : -10 * scale, step);
    return mantissa + "e" + std::to_string(exponent);
  }
  static const char* const kPrefixes[] = {"", "k", "M", "G", "T", "P"};
  int prefix = 0;
  double scale = 1;
  while (si && size >= scale * 1000 && prefix < 5) {
    scale *= 1000;
    ++prefix;
  }
  return fixed(value / scale, decimals_for(step, scale)) + kPrefixes[prefix];
}

Ticks nice_ticks(double low, double high, int target, bool tight) {
  if (!std::isfinite(low) || !std::isfinite(high)) {
    low = 0;
    high = 1;
  }
  if (high < low) std::swap(low, high);
  if (high == low) {
    const double pad = low == 0 ? 1 : std::abs(low) * 0.1;
    low -= pad;
    high += pad;
    tight = false;
  }
  // Of the steps m x 10^k near (high - low) / (target - 1), the one whose tick count is
  // nearest the target (the larger step on a tie).
  const double raw = (high - low) / std::max(1, target - 1);
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  double step = 0;
  double best = 0;
  for (const double scale : {magnitude / 10, magnitude, magnitude * 10}) {
    for (const double m : {1.0, 2.0, 2.5, 5.0}) {
      const double candidate = m * scale;
      const double count = std::floor(high / candidate + 1e-9) - std::ceil(low / candidate - 1e-9) + 1;
      const double miss = std::abs(count - target);
      if (step == 0 || miss < best || (miss == best && candidate > step)) {
        step = candidate;
        best = miss;
      }
    }
  }
  const double first = tight ? std::ceil(low / step - 1e-9) : std::floor(low / step + 1e-9);
  const double last = tight ? std::floor(high / step + 1e-9) : std::ceil(high / step - 1e-9);
  Ticks t;
  t.low = tight ? low : first * step;
  t.high = tight ? high : last * step;
  // One format on the axis: prefixes only when some tick reaches 10^4.
  const bool si = std::max(std::abs(first), std::abs(last)) * step >= 1e4;
  for (double k = first; k <= last + 1e-9; k += 1) {
    const double v = k * step;  // a multiple, not a sum: no drift
    t.at.push_back(v);
    t.labels.push_back(tick_label(v, step, si));
  }
  return t;
}

MetricLabel metric_label(const std::string& metric) {
  // The columns docs/metrics.md names; the rest are shown as their keys.
  static const std::map<std::string, MetricLabel> kLabels = {
      {"return_mean", {"return (mean of the last 100 episodes)", "return"}},
      {"eval_return_mean", {"evaluation return (mean of the last 100 episodes)", "return"}},
      {"shaped_return_mean", {"shaped return (mean of the last 100 episodes)", "shaped return"}},
      {"eval_shaped_return_mean", {"evaluation shaped return (mean of the last 100 episodes)", "shaped return"}},
      {"length_mean", {"episode length (mean of the last 100 episodes)", "env steps"}},
      {"fps", {"env frames per second", "frames / s"}},
      {"frames", {"env frames", "frames"}},
      {"episodes", {"episodes ended", "episodes"}},
      {"optimizer_steps", {"optimizer steps", "steps"}},
      {"trained_frames", {"env frames trained on", "frames"}},
      {"train_time_s", {"training time", "seconds"}},
      {"loss_total", {"total loss", "loss"}},
      {"loss_policy", {"policy-gradient loss", "loss"}},
      {"loss_baseline", {"baseline (value) loss", "loss"}},
      {"loss_entropy", {"entropy loss", "loss"}},
      {"grad_norm", {"gradient norm (before clipping)", "norm"}},
      {"learning_rate", {"learning rate", "learning rate"}},
      {"actors", {"actors connected", "actors"}},
      {"queue", {"steps queued for learning", "unrolls or sequences"}},
      {"mean_rho", {"mean importance ratio pi/mu", "ratio"}},
      {"policy_lag", {"policy lag", "optimizer steps"}},
      {"entropy_cost", {"entropy coefficient", "coefficient"}},
      {"mean_q", {"mean Q of the actions taken", "Q (h-space)"}},
      {"mean_priority", {"mean priority", "priority"}},
      {"replay_size", {"replay size", "sequences"}},
  };
  const auto it = kLabels.find(metric);
  return it != kLabels.end() ? it->second : MetricLabel{metric, metric};
}

TimeUnit time_unit(double max_seconds) {
  if (max_seconds > 10 * 3600) return {3600, "h"};
  if (max_seconds > 600) return {60, "min"};
  return {1, "s"};
}

Series smooth(const Series& s, int window) {
  if (window <= 1) return s;
  // Each window summed afresh, not a running sum: the means come out as they would by hand
  // (a running sum drifts by an ulp, which the CSV would show).
  Series out = s;
  const size_t w = static_cast<size_t>(window);
  for (size_t i = 0; i < s.size(); ++i) {
    const size_t first = i + 1 >= w ? i + 1 - w : 0;
    double sum = 0;
    for (size_t k = first; k <= i; ++k) sum += s[k].y;
    out[i].y = sum / static_cast<double>(i + 1 - first);
  }
  return out;
}

Grid grid_for(int metrics, int envs) {
  metrics = std::max(1, metrics);
  envs = std::max(1, envs);
  constexpr int kMaxCols = 3;
  Grid g;
  g.cols = std::min(envs, kMaxCols);
  g.rows = metrics * ((envs + g.cols - 1) / g.cols);
  return g;
}

}  // namespace moonseed::curves
