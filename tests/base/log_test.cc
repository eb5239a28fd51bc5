#include "base/log.h"

#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace moonseed::base {
namespace {

// Installs a sink that keeps every line, and puts the previous sink back.
class CapturedLog {
 public:
  CapturedLog() {
    previous_ = set_log_sink([this](const LogLine& line) { lines_.push_back(log_line_text(line)); });
  }
  ~CapturedLog() { set_log_sink(std::move(previous_)); }
  const std::vector<std::string>& lines() const { return lines_; }

 private:
  LogSink previous_;
  std::vector<std::string> lines_;
};

TEST(Log, LinesNameTheirComponent) {
  CapturedLog log;
  log_warning("gradient norm is nan");
  base::log(Severity::kError, "rpc", "accept failed");
  EXPECT_EQ(log.lines(), (std::vector<std::string>{"moonseed: gradient norm is nan", "moonseed rpc: accept failed"}));
}

TEST(Log, TheSinkSeesTheSeverity) {
  std::vector<Severity> seen;
  LogSink previous = set_log_sink([&](const LogLine& line) { seen.push_back(line.severity); });
  log_info("a");
  log_error("b");
  set_log_sink(std::move(previous));
  EXPECT_EQ(seen, (std::vector<Severity>{Severity::kInfo, Severity::kError}));
}

TEST(Log, LinesFromManyThreadsAllArriveWhole) {
  CapturedLog log;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([t] {
      for (int i = 0; i < 250; ++i) log_info("thread " + std::to_string(t));
    });
  }
  for (auto& t : threads) t.join();
  ASSERT_EQ(log.lines().size(), 1000u);
  for (const std::string& line : log.lines()) EXPECT_EQ(line.rfind("moonseed: thread ", 0), 0u) << line;
}

TEST(Log, AnEmptySinkRestoresTheDefault) {
  LogSink previous = set_log_sink([](const LogLine&) {});
  EXPECT_TRUE(static_cast<bool>(set_log_sink({})));  // gives back the lambda
  testing::internal::CaptureStderr();
  log_info("to stderr");
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "moonseed: to stderr\n");
  set_log_sink(std::move(previous));
}

}  // namespace
}  // namespace moonseed::base
