// A separate process that writes experience logs for the tests that need one:
//   explog_test_writer known DIR N   N known records (explog_test_records.h),
//                                    several chunks and segments; prints stats
//   explog_test_writer filtered DIR N   the same with every column stored
//                                    XOR-filtered (ColumnFilter::kXorPrevious)
//   explog_test_writer loop DIR      known records until killed; prints
//                                    "durable N" each time the mark moves
//   explog_test_writer fill DIR LIMIT   under RLIMIT_FSIZE = LIMIT bytes with
//                                    SIGXFSZ ignored: writes until the writer
//                                    fails, then appends 1000 more; prints stats
// Exit code 0 on success, 2 on bad usage, 1 when the writer misbehaved.
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "explog/writer.h"
#include "tests/explog/explog_test_records.h"

namespace {

using moonseed::explog::FullQueuePolicy;
using moonseed::explog::LogWriter;
using moonseed::explog::WriterOptions;
using moonseed::explog::WriterStats;
using moonseed::explog::testing::known_record;
using moonseed::explog::testing::known_schema;

void print_stats(const WriterStats& s) {
  std::printf("appended=%llu\nwritten=%llu\ndurable=%llu\ndurable_steps=%llu\ndropped=%llu\nlost=%llu\n"
              "lost_steps=%llu\nsegments=%llu\nerror=%s\n",
              static_cast<unsigned long long>(s.appended), static_cast<unsigned long long>(s.written),
              static_cast<unsigned long long>(s.durable_records),
              static_cast<unsigned long long>(s.durable_steps), static_cast<unsigned long long>(s.dropped),
              static_cast<unsigned long long>(s.lost), static_cast<unsigned long long>(s.lost_steps),
              static_cast<unsigned long long>(s.segments), s.error.c_str());
  std::fflush(stdout);
}

int write_known(const std::string& dir, int64_t n, bool filtered) {
  moonseed::explog::LogSchema schema = known_schema();
  if (filtered) {
    for (auto& c : schema.columns) c.filter = moonseed::explog::ColumnFilter::kXorPrevious;
  }
  WriterOptions o;
  o.directory = dir;
  o.chunk_target_bytes = 512;
  o.segment_max_bytes = 4096;
  o.full_queue = FullQueuePolicy::kBackpressure;
  LogWriter writer(schema, o);
  for (int64_t i = 0; i < n; ++i) writer.append(known_record(i));
  writer.close();
  const WriterStats s = writer.stats();
  print_stats(s);
  return s.durable_records == static_cast<uint64_t>(n) && s.error.empty() ? 0 : 1;
}

int write_until_killed(const std::string& dir) {
  WriterOptions o;
  o.directory = dir;
  o.chunk_target_bytes = 2048;
  o.sync_interval_ms = 2;
  o.sync_bytes = 8192;
  o.full_queue = FullQueuePolicy::kBackpressure;
  LogWriter writer(known_schema(), o);
  uint64_t reported = 0;
  for (int64_t i = 0;; ++i) {
    writer.append(known_record(i));
    const uint64_t durable = writer.stats().durable_records;
    if (durable != reported) {
      reported = durable;
      char line[64];
      const int len = std::snprintf(line, sizeof(line), "durable %llu\n",
                                    static_cast<unsigned long long>(durable));
      if (::write(STDOUT_FILENO, line, static_cast<size_t>(len)) != len) return 1;
    }
  }
}

int fill_disk(const std::string& dir, long limit) {
  ::signal(SIGXFSZ, SIG_IGN);
  const rlimit rl{static_cast<rlim_t>(limit), static_cast<rlim_t>(limit)};
  if (::setrlimit(RLIMIT_FSIZE, &rl) != 0) return 1;
  WriterOptions o;
  o.directory = dir;
  o.chunk_target_bytes = 1024;
  o.queue_max_records = 2;
  o.full_queue = FullQueuePolicy::kBackpressure;  // must not block once the writer is off
  LogWriter writer(known_schema(), o);
  int64_t i = 0;
  while (writer.stats().error.empty()) {
    writer.append(known_record(i++));
    if (i % 16 == 0) writer.flush();
  }
  int accepted_after_error = 0;
  for (int k = 0; k < 1000; ++k) accepted_after_error += writer.append(known_record(i++));
  const bool flushed = writer.flush();
  writer.close();
  print_stats(writer.stats());
  return accepted_after_error == 0 && !flushed ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "known" && argc == 4) return write_known(argv[2], std::atoll(argv[3]), false);
  if (mode == "filtered" && argc == 4) return write_known(argv[2], std::atoll(argv[3]), true);
  if (mode == "loop" && argc == 3) return write_until_killed(argv[2]);
  if (mode == "fill" && argc == 4) return fill_disk(argv[2], std::atol(argv[3]));
  std::fprintf(stderr, "usage: %s known DIR N | filtered DIR N | loop DIR | fill DIR LIMIT_BYTES\n", argv[0]);
  return 2;
}
