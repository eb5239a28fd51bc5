// ToolProcess with real programs: what is written reaches the tool's stdin, its stderr comes
// back as messages (bounded), a tool that exits early shows as a failed write and its status
// rather than a SIGPIPE, a missing program names the Debian package, and an abandoned tool is
// killed and reaped.
#include "cli/common/tool_process.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

namespace moonseed::cli {
namespace {

std::string temp_path(const char* name) {
  return (std::filesystem::temp_directory_path() / (std::string(name) + "-" + std::to_string(::getpid()))).string();
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(ToolProcess, WhatIsWrittenReachesTheToolAndItsStderrComesBack) {
  const std::string out = temp_path("tool-out");
  ToolProcess sh("sh", {"-c", "cat > " + out + "; echo 'done reading' >&2"}, "dash");
  const std::string text(200000, 'x');  // more than a pipe holds
  ASSERT_TRUE(sh.write(text.data(), text.size()));
  const int status = sh.finish();
  EXPECT_TRUE(ToolProcess::succeeded(status));
  EXPECT_EQ(read_file(out), text);
  EXPECT_EQ(sh.messages(), "done reading");
  std::remove(out.c_str());
}

TEST(ToolProcess, AToolThatStopsReadingIsAFailedWriteAndItsStatusNotASignal) {
  ToolProcess sh("sh", {"-c", "echo 'bad input' >&2; exit 3"}, "dash");
  const std::string text(1 << 20, 'x');
  EXPECT_FALSE(sh.write(text.data(), text.size()));  // EPIPE once it exited; the test process lives on
  const int status = sh.finish();
  EXPECT_FALSE(ToolProcess::succeeded(status));
  EXPECT_EQ(WEXITSTATUS(status), 3);
  EXPECT_EQ(sh.messages(), "bad input");
}

TEST(ToolProcess, MessagesAreBounded) {
  ToolProcess sh("sh", {"-c", "head -c 100000 /dev/zero | tr '\\0' e >&2"}, "dash");
  EXPECT_TRUE(ToolProcess::succeeded(sh.finish()));
  EXPECT_EQ(sh.messages().size(), ToolProcess::kMaxMessageBytes);
}

TEST(ToolProcess, AMissingProgramNamesItsDebianPackage) {
  EXPECT_FALSE(ToolProcess::on_path("moonseed-no-such-tool"));
  EXPECT_TRUE(ToolProcess::on_path("sh"));
  try {
    ToolProcess missing("moonseed-no-such-tool", {}, "no-such-package");
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(),
                 "moonseed-no-such-tool is not installed (not found on PATH): install Debian's no-such-package "
                 "(apt-get install no-such-package)");
  }
}

TEST(ToolProcess, AnAbandonedToolIsKilledAndReaped) {
  const std::string pid_file = temp_path("tool-pid");
  pid_t pid = -1;
  {
    ToolProcess sh("sh", {"-c", "echo $$ > " + pid_file + "; exec sleep 600"}, "dash");
    for (int i = 0; i < 500 && read_file(pid_file).empty(); ++i) ::usleep(10000);
    pid = std::stoi(read_file(pid_file));
    ASSERT_EQ(::kill(pid, 0), 0);
  }
  EXPECT_EQ(::kill(pid, 0), -1);  // gone, not a zombie: reaped
  std::remove(pid_file.c_str());
}

}  // namespace
}  // namespace moonseed::cli
