// Scalar arithmetic as Gymnasium's Python code performs it under NumPy 2 (NEP 50 promotion),
// so that the environments agree with Gymnasium to the last bit.
//
// Why this exists: the continuous-action envs mix a float32 action with Python floats and
// float64 state. Under NEP 50 a Python float is "weak": `np.float32 * 0.0015` is computed in
// float32, `np.float32 + np.float64` in float64, `python float + python float` in double.
// `NumpyScalar` carries a value with its NumPy kind and applies those rules, so the env code
// reads like the Gymnasium source it mirrors.
//
// Also: Python's `x ** 2` and NumPy's scalar power call libm pow/powf, which are not always
// equal to x * x; the compiler must not turn them into a multiplication, hence py_pow/py_powf.
//
// Pure functions, thread-safe, never throw.
#pragma once

namespace moonseed::envs {

// libm pow(x, y), never rewritten by the compiler (Python float ** and np.float64 **).
double py_pow(double x, double y);
// libm powf(x, y), never rewritten by the compiler (np.float32 ** under NumPy 2).
float py_powf(float x, float y);

enum class NumpyKind {
  kPython,   // a Python float or int: weak, takes the kind of the other operand
  kFloat32,  // np.float32
  kFloat64,  // np.float64
};

struct NumpyScalar {
  double value = 0.0;  // exactly representable in float when kind == kFloat32
  NumpyKind kind = NumpyKind::kPython;

  static NumpyScalar python(double v) { return {v, NumpyKind::kPython}; }
  static NumpyScalar float32(float v) { return {static_cast<double>(v), NumpyKind::kFloat32}; }
  static NumpyScalar float64(double v) { return {v, NumpyKind::kFloat64}; }
};

// The kind of `a op b` under NEP 50.
inline NumpyKind promote(NumpyKind a, NumpyKind b) {
  if (a == b) return a;
  if (a == NumpyKind::kPython) return b;
  if (b == NumpyKind::kPython) return a;
  return NumpyKind::kFloat64;
}

namespace numpy_detail {
template <typename Op>
NumpyScalar apply(const NumpyScalar& a, const NumpyScalar& b, Op op) {
  const NumpyKind kind = promote(a.kind, b.kind);
  if (kind == NumpyKind::kFloat32) {
    // A weak Python operand is first cast to float32, then the operation runs in float32.
    const float r = op(static_cast<float>(a.value), static_cast<float>(b.value));
    return {static_cast<double>(r), kind};
  }
  return {op(a.value, b.value), kind};
}
template <typename Cmp>
bool compare(const NumpyScalar& a, const NumpyScalar& b, Cmp cmp) {
  if (promote(a.kind, b.kind) == NumpyKind::kFloat32) {
    return cmp(static_cast<float>(a.value), static_cast<float>(b.value));
  }
  return cmp(a.value, b.value);
}
}  // namespace numpy_detail

inline NumpyScalar operator+(const NumpyScalar& a, const NumpyScalar& b) {
  return numpy_detail::apply(a, b, [](auto x, auto y) { return x + y; });
}
inline NumpyScalar operator-(const NumpyScalar& a, const NumpyScalar& b) {
  return numpy_detail::apply(a, b, [](auto x, auto y) { return x - y; });
}
inline NumpyScalar operator*(const NumpyScalar& a, const NumpyScalar& b) {
  return numpy_detail::apply(a, b, [](auto x, auto y) { return x * y; });
}
inline bool operator<(const NumpyScalar& a, const NumpyScalar& b) {
  return numpy_detail::compare(a, b, [](auto x, auto y) { return x < y; });
}
inline bool operator>(const NumpyScalar& a, const NumpyScalar& b) { return b < a; }
inline bool operator>=(const NumpyScalar& a, const NumpyScalar& b) {
  return numpy_detail::compare(a, b, [](auto x, auto y) { return x >= y; });
}
inline bool operator==(const NumpyScalar& a, const NumpyScalar& b) {
  return numpy_detail::compare(a, b, [](auto x, auto y) { return x == y; });
}

}  // namespace moonseed::envs
