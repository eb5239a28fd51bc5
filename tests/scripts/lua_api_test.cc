// Runs every tests/lua/*.lua file through run_script_file; each file checks
// the moonseed Lua API with assert, so success means exit code 0.
#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "scripts/api/script_runner.h"

namespace moonseed::scripts {
namespace {

std::vector<std::string> lua_test_files() {
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(std::string(MOONSEED_SOURCE_DIR) + "/tests/lua")) {
    if (entry.path().extension() == ".lua") files.push_back(entry.path().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

class LuaApiScript : public ::testing::TestWithParam<std::string> {};

TEST_P(LuaApiScript, RunsToTheEndWithEveryAssertHolding) {
  ::testing::internal::CaptureStderr();
  const int code = run_script_file(GetParam(), {});
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(code, 0) << err;
}

std::string test_name(const ::testing::TestParamInfo<std::string>& info) {
  return std::filesystem::path(info.param).stem().string();
}

INSTANTIATE_TEST_SUITE_P(TestsLua, LuaApiScript, ::testing::ValuesIn(lua_test_files()), test_name);

// Guards against the parameterized suite silently finding no files.
TEST(LuaApiScripts, IncludeTheEnvAndVtraceTests) {
  std::vector<std::string> stems;
  for (const std::string& f : lua_test_files()) stems.push_back(std::filesystem::path(f).stem().string());
  EXPECT_NE(std::find(stems.begin(), stems.end(), "env_api_test"), stems.end());
  EXPECT_NE(std::find(stems.begin(), stems.end(), "vtrace_api_test"), stems.end());
}

}  // namespace
}  // namespace moonseed::scripts
