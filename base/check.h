// Checks of a caller's arguments whose messages carry the values involved
// ("SumTree::set: index 9 outside [0, 8)"), so that no room writes the same
// comparison and message by hand. They sit on per-step paths: a check that
// passes costs one comparison, and the message is only built when one fails.
//
// Thread-safe.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>

namespace moonseed::base {

// "<subject> <index> outside [0, <size>)".
std::string outside_text(std::string_view subject, int64_t index, int64_t size);

namespace detail {
template <typename Part>
void append_part(std::string& text, const Part& part) {
  if constexpr (std::is_integral_v<Part>) {
    text += std::to_string(part);
  } else {
    text.append(std::string_view(part));
  }
}

template <typename Error, typename... Parts>
[[noreturn, gnu::cold, gnu::noinline]] void throw_outside(int64_t index, int64_t size, const Parts&... subject) {
  std::string text;
  (append_part(text, subject), ...);
  throw Error(outside_text(text, index, size));
}
}  // namespace detail

// Throws Error(outside_text(subject, index, size)) unless 0 <= index < size.
// The subject is given in parts (text, or integers written in decimal),
// joined only when the check fails: require_index(slot, n, "RewardShaper::",
// what, ": slot").
template <typename Error = std::invalid_argument, typename... Parts>
inline void require_index(int64_t index, int64_t size, const Parts&... subject) {
  if (index < 0 || index >= size) detail::throw_outside<Error>(index, size, subject...);
}

}  // namespace moonseed::base
