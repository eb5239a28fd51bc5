#include "base/secret.h"

namespace moonseed::base {

bool secret_matches(std::string_view expected, std::string_view given) {
  if (expected.empty()) return true;
  unsigned char diff = expected.size() == given.size() ? 0 : 1;
  for (size_t i = 0; i < expected.size(); ++i) {
    diff |= static_cast<unsigned char>(expected[i] ^ (i < given.size() ? given[i] : 0));
  }
  return diff == 0;
}

}  // namespace moonseed::base
