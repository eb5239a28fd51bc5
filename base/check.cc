#include "base/check.h"

namespace moonseed::base {

std::string outside_text(std::string_view subject, int64_t index, int64_t size) {
  std::string text(subject);
  text += " " + std::to_string(index) + " outside [0, " + std::to_string(size) + ")";
  return text;
}

}  // namespace moonseed::base
