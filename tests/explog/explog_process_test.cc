// Experience log behaviour that needs a real second process: a writer killed
// with SIGKILL, a writer whose file size limit is reached (RLIMIT_FSIZE, the
// EFBIG of a full quota: it publishes what it wrote whole, without the footer
// that no longer fits), and a directory another user cannot write.
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "explog/reader.h"
#include "explog/writer.h"
#include "tests/explog/explog_test_records.h"
#include "tests/explog/explog_test_util.h"

namespace moonseed::explog {
namespace {

using testing::known_record;
using testing::known_schema;
using testing::read_all;
using testing::TempDir;

// Starts the helper with `args`; its stdout is readable from *out_fd.
pid_t spawn_writer(const std::vector<std::string>& args, int* out_fd) {
  int fds[2];
  if (::pipe(fds) != 0) return -1;
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(fds[1], STDOUT_FILENO);
    ::close(fds[0]);
    ::close(fds[1]);
    std::vector<char*> argv;
    argv.push_back(const_cast<char*>(MOONSEED_EXPLOG_TEST_WRITER));
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  ::close(fds[1]);
  *out_fd = fds[0];
  return pid;
}

std::string read_to_end(int fd) {
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof(buf))) > 0) out.append(buf, static_cast<size_t>(n));
  ::close(fd);
  return out;
}

std::map<std::string, std::string> parse_stats(const std::string& text) {
  std::map<std::string, std::string> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    const size_t eq = line.find('=');
    if (eq != std::string::npos) out[line.substr(0, eq)] = line.substr(eq + 1);
  }
  return out;
}

TEST(ExplogProcess, KilledWriterLeavesEveryDurableRecordReadable) {
  TempDir dir;
  int out = -1;
  const pid_t pid = spawn_writer({"loop", dir.path()}, &out);
  ASSERT_GT(pid, 0);
  constexpr uint64_t kDurable = 300;
  uint64_t durable = 0;
  FILE* lines = ::fdopen(out, "r");
  char line[128];
  while (durable < kDurable && std::fgets(line, sizeof(line), lines) != nullptr) {
    unsigned long long n = 0;
    if (std::sscanf(line, "durable %llu", &n) == 1) durable = n;
  }
  ::kill(pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
  std::fclose(lines);
  ASSERT_GE(durable, kDurable) << "the writer stopped reporting";
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);

  LogReader reader(dir.path());
  ASSERT_EQ(reader.segments().size(), 1u);
  EXPECT_FALSE(reader.segments()[0].has_footer);
  // The kill lands between two chunks (clean end) or inside one (a tear).
  for (const LogProblem& p : reader.problems()) EXPECT_TRUE(p.torn) << p.message;
  EXPECT_LE(reader.problems().size(), 1u);
  const std::vector<Record> records = read_all(reader);
  ASSERT_GE(records.size(), durable);
  for (size_t i = 0; i < records.size(); ++i) {
    ASSERT_EQ(records[i].meta, known_record(static_cast<int64_t>(i)).meta) << i;
    ASSERT_EQ(records[i].columns, known_record(static_cast<int64_t>(i)).columns) << i;
  }
  EXPECT_EQ(reader.verify().size(), reader.problems().size());
}

TEST(ExplogProcess, FileSizeLimitTurnsTheWriterOffWithoutBlockingTheCaller) {
  TempDir dir;
  int out = -1;
  const pid_t pid = spawn_writer({"fill", dir.path(), "65536"}, &out);
  ASSERT_GT(pid, 0);
  const std::string text = read_to_end(out);
  int status = 0;
  ::waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status)) << text;
  EXPECT_EQ(WEXITSTATUS(status), 0) << "appends were accepted after the failure, or flush "
                                       "claimed success\n"
                                    << text;
  std::map<std::string, std::string> stats = parse_stats(text);
  const std::string partial = dir.path() + "/experience-000001.mslog.partial";
  const std::string published = dir.path() + "/experience-000001.mslog";
  EXPECT_NE(stats["error"].find("cannot write " + partial + ": " + std::strerror(EFBIG)),
            std::string::npos)
      << stats["error"];
  // The error says what was kept: the segment, published under its final name.
  EXPECT_NE(stats["error"].find("; " + published + " keeps its "), std::string::npos) << stats["error"];
  const uint64_t appended = std::stoull(stats["appended"]);
  const uint64_t durable = std::stoull(stats["durable"]);
  const uint64_t lost = std::stoull(stats["lost"]);
  // Nothing was refused by a full queue: every record not durable was lost to the failure.
  EXPECT_EQ(stats["dropped"], "0");
  EXPECT_GE(lost, 1000u);
  EXPECT_EQ(appended, durable + lost);
  EXPECT_GT(durable, 0u);
  EXPECT_EQ(stats["segments"], "1");

  // Cut back to its last whole chunk and renamed: it verifies clean and holds
  // exactly the durable records.
  EXPECT_FALSE(std::filesystem::exists(partial));
  LogReader reader(dir.path());
  EXPECT_TRUE(reader.verify().empty()) << reader.verify().front().message;
  ASSERT_EQ(reader.segments().size(), 1u);
  EXPECT_EQ(reader.segments()[0].path, published);
  // The limit leaves no room for the footer: a published segment may end without one.
  EXPECT_FALSE(reader.segments()[0].has_footer);
  EXPECT_NE(stats["error"].find("(no room for its footer)"), std::string::npos) << stats["error"];
  const std::vector<Record> records = read_all(reader);
  ASSERT_EQ(records.size(), durable);
  uint64_t steps = 0;
  for (size_t i = 0; i < records.size(); ++i) {
    ASSERT_EQ(records[i].meta, known_record(static_cast<int64_t>(i)).meta) << i;
    steps += static_cast<uint64_t>(records[i].meta.steps);
  }
  EXPECT_EQ(stats["durable_steps"], std::to_string(steps));
}

TEST(ExplogProcess, DirectoryThatTheUserCannotWriteIsAClearErrorAtConstruction) {
  TempDir dir;
  const std::string target = dir.sub("read-only");
  ASSERT_EQ(::mkdir(target.c_str(), 0555), 0);
  ASSERT_EQ(::chmod(dir.path().c_str(), 0755), 0);  // mkdtemp made it 0700
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  const pid_t pid = ::fork();
  if (pid == 0) {
    // root ignores permissions: drop to "nobody" first (a no-op for other users).
    if (::geteuid() == 0 && ::setuid(65534) != 0) ::_exit(3);
    std::string message = "no error";
    try {
      WriterOptions o;
      o.directory = target;
      LogWriter w(known_schema(), o);
    } catch (const std::runtime_error& e) {
      message = e.what();
    }
    const ssize_t n = ::write(fds[1], message.data(), message.size());
    ::_exit(n == static_cast<ssize_t>(message.size()) ? 0 : 4);
  }
  ::close(fds[1]);
  const std::string message = read_to_end(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  EXPECT_NE(message.find("cannot create " + target + "/experience-000001.mslog.partial: " +
                         std::strerror(EACCES)),
            std::string::npos)
      << message;
}

}  // namespace
}  // namespace moonseed::explog
