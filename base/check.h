// Checks of a caller's arguments whose messages carry the values involved
// ("SumTree::set: index 9 outside [0, 8)"), so that no room writes the same
// comparison and message by hand.
//
// Thread-safe.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

namespace moonseed::base {

// "<subject> <index> outside [0, <size>)".
std::string outside_text(std::string_view subject, int64_t index, int64_t size);

// Throws Error(outside_text(subject, index, size)) unless 0 <= index < size.
// `subject` names the place and the index: "RewardShaper::shape: slot".
template <typename Error = std::invalid_argument>
inline void require_index(int64_t index, int64_t size, std::string_view subject) {
  if (index < 0 || index >= size) throw Error(outside_text(subject, index, size));
}

}  // namespace moonseed::base
