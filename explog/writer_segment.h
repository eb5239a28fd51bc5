// Internal to explog: what writer.cc needs from the segment-file code in
// writer_segment.cc.
#pragma once

#include <string>

namespace moonseed::explog::detail {

// The number N of a file NAME-N.mslog or NAME-N.mslog.partial (N of at
// least 6 digits), else 0.
int segment_number_of(const std::string& file, const std::string& name);

}  // namespace moonseed::explog::detail
