// `moonseed log verify`: every checksum of every chunk, each problem on a line, then a summary.
#include <cstdint>
#include <cstdio>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "cli/launcher/log_args.h"
#include "explog/reader.h"

namespace moonseed::cli::log_cmd {

namespace ex = explog;

int verify(const CommandLine& cl) {
  const std::string path = one_path(cl);
  const ex::LogReader reader(path);
  const std::vector<ex::LogProblem> problems = reader.verify();
  std::set<std::pair<std::string, int64_t>> bad_chunks;  // (file, chunk) with a problem, tears aside
  for (const ex::LogProblem& p : problems) {
    // The reader's messages start with where they are; that is in the line's prefix already.
    const std::string where = "chunk " + std::to_string(p.chunk) + " at offset " + std::to_string(p.offset) +
                              " of " + p.file + ": ";
    const bool located = p.message.compare(0, where.size(), where) == 0;
    std::printf("%s: chunk %s, offset %llu: %s\n", p.file.c_str(),
                p.chunk < 0 ? "-" : std::to_string(p.chunk).c_str(),
                static_cast<unsigned long long>(p.offset),
                located ? p.message.c_str() + where.size() : p.message.c_str());
    if (p.chunk >= 0 && !p.torn) bad_chunks.insert({p.file, p.chunk});
  }
  const size_t chunks = reader.chunks().size();
  std::printf("%zu segments, %zu chunks, %llu records: ", reader.segments().size(), chunks,
              static_cast<unsigned long long>(reader.record_count()));
  if (problems.empty()) {
    std::printf("every checksum is good\n");
    return 0;
  }
  std::printf("%zu problems, %zu bad chunks\n", problems.size(), bad_chunks.size());
  for (const ex::SegmentInfo& s : reader.segments()) {
    if (!s.torn_at) continue;
    size_t bad_before = 0;
    for (const auto& [file, chunk] : bad_chunks) bad_before += file == s.path ? 1 : 0;
    std::printf("%s is torn at offset %llu (a writer stopped mid-chunk): ", s.path.c_str(),
                static_cast<unsigned long long>(*s.torn_at));
    if (bad_before == 0) {
      std::printf("the %zu complete chunks before it are fine\n", s.chunk_count);
    } else {
      std::printf("of the %zu complete chunks before it, %zu are bad (above)\n", s.chunk_count, bad_before);
    }
  }
  return 1;
}
}  // namespace moonseed::cli::log_cmd
