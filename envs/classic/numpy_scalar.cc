#include "envs/classic/numpy_scalar.h"

#include <cmath>

namespace moonseed::envs {

// Reading the exponent through a volatile keeps GCC from folding pow(x, 2.0) into x * x,
// which differs from glibc's pow in the last bit for about one input in a thousand.
double py_pow(double x, double y) {
  volatile double exponent = y;
  return std::pow(x, static_cast<double>(exponent));
}

float py_powf(float x, float y) {
  volatile float exponent = y;
  return ::powf(x, static_cast<float>(exponent));
}

}  // namespace moonseed::envs
