#include "scripts/api/script_runner.h"

#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "tests/scripts/temp_dir.h"

namespace moonseed::scripts {
namespace {

using testing::TempDir;

TEST(RunScriptFile, ReturnsZeroWhenTheScriptSucceeds) {
  TempDir dir;
  EXPECT_EQ(run_script_file(dir.write("ok.lua", "local x = 1 + 1\n"), {}), 0);
}

TEST(RunScriptFile, ReturnsOneAndPrintsFileLineAndTracebackOnError) {
  TempDir dir;
  const std::string path = dir.write("fail.lua", "local t = {}\nassert(t.missing, 'missing value')\n");
  ::testing::internal::CaptureStderr();
  const int code = run_script_file(path, {});
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(code, 1);
  EXPECT_NE(err.find("moonseed script: " + path + ":2: missing value"), std::string::npos) << err;
  EXPECT_NE(err.find("stack traceback"), std::string::npos) << err;
}

TEST(RunScriptFile, ReturnsOneForAScriptThatDoesNotExist) {
  TempDir dir;
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(run_script_file(dir.path() + "/absent.lua", {}), 1);
  EXPECT_NE(::testing::internal::GetCapturedStderr().find("absent.lua"), std::string::npos);
}

TEST(RunScriptFile, SetsArgAndPassesArgumentsAsVarargs) {
  TempDir dir;
  const std::string path = dir.write("args.lua",
                                     "local a, b = ...\n"
                                     "assert(a == 'one' and b == 'two', 'varargs')\n"
                                     "assert(arg[0]:find('args.lua$') and arg[1] == 'one' and arg[2] == 'two', 'arg')\n");
  EXPECT_EQ(run_script_file(path, {"one", "two"}), 0);
}

TEST(RunScriptFile, LetsTheUsersScriptWriteFiles) {
  TempDir dir;
  const std::string target = dir.path() + "/written.txt";
  const std::string path = dir.write("io.lua", "local f = assert(io.open(arg[1], 'w'))\nf:write('x')\nf:close()\n");
  EXPECT_EQ(run_script_file(path, {target}), 0);
  EXPECT_TRUE(std::filesystem::exists(target));
}

}  // namespace
}  // namespace moonseed::scripts
