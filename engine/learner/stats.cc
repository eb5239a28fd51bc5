#include "engine/learner/stats.h"

#include <limits>

namespace moonseed::engine {

double metric_value(const Metrics& metrics, std::string_view name) {
  for (const Metric& m : metrics) {
    if (m.name == name) return m.value;
  }
  return std::numeric_limits<double>::quiet_NaN();
}

}  // namespace moonseed::engine
