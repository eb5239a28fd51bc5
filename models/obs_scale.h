// How the nets turn uint8 observations into floats: each value is divided by the space's largest
// upper bound (255 for camera frames, 1 for MinAtar's 0/1 cells), so inputs lie in [0, 1]. A
// space without bounds (or with bounds outside (0, 255]) is taken as full bytes: 1/255.
#pragma once

#include <algorithm>
#include <cmath>

#include "envs/spec.h"

namespace moonseed::models {

inline double uint8_obs_scale(const envs::Space& observation) {
  float top = 0.f;
  for (float high : observation.high) top = std::max(top, high);
  const bool usable = std::isfinite(top) && top > 0.f && top <= 255.f;
  return 1.0 / (usable ? static_cast<double>(top) : 255.0);
}

}  // namespace moonseed::models
