#include "cli/common/build_info.h"

namespace moonseed::cli {

std::string build_text() {
  return std::string(build_version()) + " (commit " + build_commit() + (build_dirty() ? ", modified" : "") + ")";
}

}  // namespace moonseed::cli
