// Comparing secrets (auth tokens) without telling a peer where they differ.
// Thread-safety: a pure function.
#pragma once

#include <string_view>

namespace moonseed::base {

// True when `given` equals `expected` (a secret such as an auth token), in a
// time that does not depend on where the first difference is, so a peer cannot
// learn the secret a byte at a time. An empty `expected` matches anything.
bool secret_matches(std::string_view expected, std::string_view given);

}  // namespace moonseed::base
