// Constants that more than one room needs, written once.
#pragma once

namespace moonseed::base {

// The double nearest to pi: Python's math.pi and numpy.pi, which the
// Gymnasium environments use.
inline constexpr double kPi = 3.141592653589793;

// Lua numbers are doubles: integers beyond 2^53 do not survive a script or a
// double-valued state vector.
inline constexpr double kMaxExactInteger = 9007199254740992.0;

}  // namespace moonseed::base
