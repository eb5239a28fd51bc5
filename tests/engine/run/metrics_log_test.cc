// metrics.jsonl on a disk that fills: whole rows or nothing, one report per
// outage. The disk "fills" through a real file size limit (RLIMIT_FSIZE) in a
// child process: writes past it are cut short or fail, as on a full disk.
#include "engine/run/metrics_log.h"

#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "base/log.h"

namespace moonseed::engine {
namespace {

namespace fs = std::filesystem;

std::string read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A row of exactly `bytes` bytes with its newline.
MetricsRow row_of(size_t bytes) {
  MetricsRow row;
  const size_t overhead = std::string("{\"pad\": \"\"}\n").size();
  row.add("pad", std::string(bytes - overhead, 'x'));
  return row;
}

// What base/log.h logs from now on goes into `lines`.
void log_into(std::vector<std::string>& lines) {
  base::set_log_sink([&lines](const base::LogLine& line) { lines.emplace_back(line.text); });
}

void append_rows_of_100(MetricsLog& log, int n) {
  for (int i = 0; i < n; ++i) log.append(row_of(100));
}

// The file's text after `n` rows of 100 bytes.
std::string lines_of_100(int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += row_of(100).to_json() + "\n";
  return out;
}

// Runs `body` in a child process whose files may not grow past `limit` bytes;
// returns its exit code (body's result). SIGXFSZ is ignored there, so a write
// past the limit is short, or fails with EFBIG.
int with_file_size_limit(rlim_t limit, const std::function<int()>& body) {
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::signal(SIGXFSZ, SIG_IGN);
    const rlimit r{limit, RLIM_INFINITY};
    if (::setrlimit(RLIMIT_FSIZE, &r) != 0) ::_exit(99);
    ::_exit(body());
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// Lets files grow again (the soft limit up to the hard one, unlimited).
void lift_file_size_limit() {
  const rlimit r{RLIM_INFINITY, RLIM_INFINITY};
  ::setrlimit(RLIMIT_FSIZE, &r);
}

class MetricsLogTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("moonseed-metrics-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
    path_ = (dir_ / "metrics.jsonl").string();
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path dir_;
  std::string path_;
};

TEST_F(MetricsLogTest, ARowThatDoesNotFitIsCutBackSoTheFileHoldsOnlyWholeRows) {
  // 250 bytes: two rows of 100, then a third is cut at 50 bytes; a row of 40 still fits.
  const int code = with_file_size_limit(250, [&] {
    MetricsLog log(path_);
    if (!log.append(row_of(100)) || !log.append(row_of(100))) return 1;
    if (log.append(row_of(100))) return 2;
    if (!log.append(row_of(40))) return 3;
    if (log.append(row_of(100))) return 4;
    return log.dropped_rows() == 2 ? 0 : 5;
  });
  ASSERT_EQ(code, 0);
  EXPECT_EQ(read(path_), row_of(100).to_json() + "\n" + row_of(100).to_json() + "\n" + row_of(40).to_json() + "\n");
}

TEST_F(MetricsLogTest, AnOutageIsReportedOnceAndItsEndOnceWithTheRowsDropped) {
  const int code = with_file_size_limit(250, [&] {
    std::vector<std::string> lines;
    log_into(lines);
    MetricsLog log(path_);
    append_rows_of_100(log, 2);  // 200 of the 250 bytes
    append_rows_of_100(log, 5);
    lift_file_size_limit();
    log.append(row_of(100));
    const bool ok = lines.size() == 2 && lines[0].find("cannot write " + path_ + ": File too large") == 0 &&
                    lines[0].find("training goes on") != std::string::npos &&
                    lines[1] == path_ + " is written again (5 row(s) dropped)";
    for (const std::string& line : lines) std::fprintf(stderr, "logged: %s\n", line.c_str());
    return ok ? 0 : 1;
  });
  EXPECT_EQ(code, 0);
  EXPECT_EQ(read(path_), lines_of_100(3));
}

// The stop row waits out an outage that ends (here the limit lifts after 300 ms)
// and is dropped, as any row, after an outage that outlasts its patience.
TEST_F(MetricsLogTest, APatientRowWaitsForTheDiskAndIsDroppedOnlyAfterItsPatience) {
  const int code = with_file_size_limit(250, [&] {
    std::vector<std::string> lines;
    log_into(lines);
    MetricsLog log(path_);
    append_rows_of_100(log, 2);  // 200 of the 250 bytes
    int waits = 0;
    if (log.append_patiently(row_of(100), std::chrono::milliseconds(200), [&] { ++waits; })) return 1;
    if (waits != 1 || log.dropped_rows() != 1 || lines.size() != 1) return 2;
    std::thread lift([] {
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      lift_file_size_limit();
    });
    const bool written = log.append_patiently(row_of(100), std::chrono::seconds(60), [&] { ++waits; });
    lift.join();
    if (!written || waits != 2) return 3;
    // The retries are not dropped rows: the outage's end counts the one row dropped.
    if (log.dropped_rows() != 1 || lines.size() != 2 || lines[1] != path_ + " is written again (1 row(s) dropped)") {
      return 4;
    }
    return 0;
  });
  EXPECT_EQ(code, 0);
  EXPECT_EQ(read(path_), lines_of_100(3));
}

TEST_F(MetricsLogTest, ATornLastLineLeftByAnOlderBuildIsCutOffWhenTheFileIsOpened) {
  std::ofstream(path_, std::ios::binary) << "{\"frames\": 1}\n{\"frames\": 2, \"ret";
  {
    MetricsLog log(path_);
    log.append(MetricsRow().add("frames", 3));
  }
  EXPECT_EQ(read(path_), "{\"frames\": 1}\n{\"frames\": 3}\n");
}

TEST_F(MetricsLogTest, AFileThatIsOneTornLineIsEmptiedWhenOpened) {
  std::ofstream(path_, std::ios::binary) << std::string(5000, 'x');
  {
    MetricsLog log(path_);
    log.append(MetricsRow().add("frames", 3));
  }
  EXPECT_EQ(read(path_), "{\"frames\": 3}\n");
}

TEST_F(MetricsLogTest, AFileOfWholeLinesIsKeptAsItIs) {
  std::ofstream(path_, std::ios::binary) << "{\"frames\": 1}\n";
  {
    MetricsLog log(path_);
    log.append(MetricsRow().add("frames", 2));
  }
  EXPECT_EQ(read(path_), "{\"frames\": 1}\n{\"frames\": 2}\n");
}

// The listener (TensorBoard's feed) sees every row with its fields in order,
// a row that cannot be written too.
TEST_F(MetricsLogTest, TheListenerGetsEveryRowWrittenOrNot) {
  std::vector<std::vector<std::pair<std::string, std::string>>> seen;
  {
    MetricsLog log(path_);
    log.set_listener([&seen](const MetricsRow& row) { seen.push_back(row.fields()); });
    log.append(MetricsRow().add("frames", 2).add("event", "reload"));
  }
  {
    MetricsLog full("/dev/full");
    full.set_listener([&seen](const MetricsRow& row) { seen.push_back(row.fields()); });
    EXPECT_FALSE(full.append(MetricsRow().add("fps", 1.5)));
  }
  using Fields = std::vector<std::pair<std::string, std::string>>;
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0], (Fields{{"frames", "2"}, {"event", "\"reload\""}}));
  EXPECT_EQ(seen[1], (Fields{{"fps", "1.5"}}));
}

}  // namespace
}  // namespace moonseed::engine
