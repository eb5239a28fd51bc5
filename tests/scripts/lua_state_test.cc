#include "scripts/state/lua_state.h"

#include <cstdlib>
#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "scripts/api/lua_api.h"
#include "tests/scripts/temp_dir.h"

namespace moonseed::scripts {
namespace {

using testing::TempDir;

// Runs `path` in a fresh state and returns the error text ("" on success).
std::string run_error(Sandbox sandbox, const std::string& path) {
  LuaState lua(sandbox);
  lua.set_search_path(default_search_path(path));
  open_moonseed_api(lua.get());
  try {
    lua.run_file(path);
  } catch (const ScriptError& e) {
    return e.what();
  }
  return "";
}

// Restores MOONSEED_PATH when a test ends.
class ScopedMoonseedPath {
 public:
  explicit ScopedMoonseedPath(const std::string& value) {
    if (const char* old = std::getenv("MOONSEED_PATH")) old_ = old;
    setenv("MOONSEED_PATH", value.c_str(), 1);
  }
  ~ScopedMoonseedPath() {
    if (old_.empty()) unsetenv("MOONSEED_PATH");
    else setenv("MOONSEED_PATH", old_.c_str(), 1);
  }

 private:
  std::string old_;
};

TEST(LuaState, CreatesAStateWithTheStandardLibrariesOpen) {
  LuaState lua(Sandbox::kOff);
  ASSERT_NE(lua.get(), nullptr);
  ASSERT_EQ(luaL_dostring(lua.get(), "return string.format('%d-%s', 7, jit.version)"), 0);
  EXPECT_EQ(std::string(lua_tostring(lua.get(), -1)).substr(0, 8), "7-LuaJIT");
}

TEST(LuaState, RunFileReturnsTheChunksResultsAndPassesArguments) {
  TempDir dir;
  const std::string path = dir.write("sum.lua", "local a, b = ...\nreturn a .. b, 42\n");
  LuaState lua(Sandbox::kOn);
  ASSERT_EQ(lua.run_file(path, {"x", "y"}), 2);
  EXPECT_STREQ(lua_tostring(lua.get(), -2), "xy");
  EXPECT_EQ(lua_tonumber(lua.get(), -1), 42);
}

TEST(LuaState, RuntimeErrorNamesFileAndLineAndCarriesATraceback) {
  TempDir dir;
  const std::string path = dir.write("broken.lua", "local function f()\n  local x = nil\n  return x.y\nend\nf()\n");
  const std::string error = run_error(Sandbox::kOn, path);
  EXPECT_NE(error.find(path + ":3:"), std::string::npos) << error;
  EXPECT_NE(error.find("stack traceback"), std::string::npos) << error;
  EXPECT_NE(error.find(path + ":5:"), std::string::npos) << "the caller's line is in the traceback:\n" << error;
}

TEST(LuaState, SyntaxErrorNamesFileAndLine) {
  TempDir dir;
  const std::string path = dir.write("syntax.lua", "local a = 1\nlocal b = = 2\n");
  EXPECT_NE(run_error(Sandbox::kOn, path).find(path + ":2:"), std::string::npos);
}

TEST(Sandbox, BlocksOsExecuteFromARecipe) {
  TempDir dir;
  dir.write("recipes_lib.lua", "local M = {}\nfunction M.go()\n  os.execute('true')\nend\nreturn M\n");
  const std::string path = dir.write("main.lua", "require('recipes_lib').go()\n");
  const std::string error = run_error(Sandbox::kOn, path);
  EXPECT_NE(error.find("os.execute is disabled"), std::string::npos) << error;
  EXPECT_NE(error.find("recipes_lib.lua:3:"), std::string::npos) << error;
}

TEST(Sandbox, BlocksIoPopen) {
  TempDir dir;
  const std::string path = dir.write("popen.lua", "io.popen('echo hi')\n");
  EXPECT_NE(run_error(Sandbox::kOn, path).find("io.popen is disabled"), std::string::npos);
}

TEST(Sandbox, BlocksOpeningAFileForWritingAndCreatesNothing) {
  TempDir dir;
  const std::string target = dir.path() + "/x";
  const std::string path = dir.write("write.lua", "io.open('" + target + "', 'w')\n");
  const std::string error = run_error(Sandbox::kOn, path);
  EXPECT_NE(error.find("for reading only"), std::string::npos) << error;
  EXPECT_FALSE(std::filesystem::exists(target));
}

TEST(Sandbox, BlocksAppendModeAndIoOutputToAFile) {
  TempDir dir;
  const std::string target = dir.path() + "/y";
  EXPECT_NE(run_error(Sandbox::kOn, dir.write("a.lua", "io.open('" + target + "', 'a+')\n")), "");
  EXPECT_NE(run_error(Sandbox::kOn, dir.write("b.lua", "io.output('" + target + "')\n")), "");
  EXPECT_FALSE(std::filesystem::exists(target));
}

TEST(Sandbox, AllowsReadingFiles) {
  TempDir dir;
  const std::string data = dir.write("data.txt", "hello");
  const std::string path = dir.write(
      "read.lua", "local f = assert(io.open('" + data + "'))\nassert(f:read('*a') == 'hello')\nf:close()\n");
  EXPECT_EQ(run_error(Sandbox::kOn, path), "");
}

TEST(Sandbox, RemovesTheFfiModule) {
  TempDir dir;
  const std::string path = dir.write("use_ffi.lua", "local ffi = require 'ffi'\n");
  const std::string error = run_error(Sandbox::kOn, path);
  EXPECT_NE(error.find("module 'ffi' not found"), std::string::npos) << error;
}

TEST(Sandbox, RefusesBytecodeChunks) {
  TempDir dir;
  const std::string path = dir.write(
      "bytecode.lua",
      "local f, err = load(string.dump(function() return 1 end))\n"
      "assert(f == nil and err:find('mode'), tostring(err))\n");
  EXPECT_EQ(run_error(Sandbox::kOn, path), "");
}

TEST(Sandbox, KeepsOnlyGetinfoAndTracebackOfTheDebugLibrary) {
  TempDir dir;
  const std::string path = dir.write(
      "debug.lua",
      "assert(debug.getupvalue == nil and debug.sethook == nil, 'debug is restricted')\n"
      "assert(debug.getinfo(1, 'l').currentline == 2)\n");
  EXPECT_EQ(run_error(Sandbox::kOn, path), "");
}

TEST(Sandbox, OffLetsAUserScriptWriteFiles) {
  TempDir dir;
  const std::string target = dir.path() + "/out.txt";
  const std::string path = dir.write("write.lua", "local f = assert(io.open('" + target + "', 'w'))\nf:write('ok')\nf:close()\n");
  EXPECT_EQ(run_error(Sandbox::kOff, path), "");
  EXPECT_TRUE(std::filesystem::exists(target));
}

TEST(Require, FindsAModuleInTheScriptsOwnDirectory) {
  TempDir dir;
  dir.write("helpers/shapes.lua", "return { width = 64 }\n");
  const std::string path = dir.write("main.lua", "assert(require('helpers.shapes').width == 64)\n");
  EXPECT_EQ(run_error(Sandbox::kOn, path), "");
}

TEST(Require, FindsAModuleFromMoonseedPath) {
  TempDir scripts, library_a, library_b;
  library_b.write("shared_recipe/init.lua", "return { gamma = 0.5 }\n");
  ScopedMoonseedPath env(library_a.path() + "::" + library_b.path());
  const std::string path = scripts.write("main.lua", "assert(require('shared_recipe').gamma == 0.5)\n");
  EXPECT_EQ(run_error(Sandbox::kOn, path), "");
}

TEST(Require, PrefersTheScriptsDirectoryOverMoonseedPath) {
  TempDir scripts, library;
  library.write("which.lua", "return 'library'\n");
  scripts.write("which.lua", "return 'script dir'\n");
  ScopedMoonseedPath env(library.path());
  const std::string path = scripts.write("main.lua", "assert(require('which') == 'script dir')\n");
  EXPECT_EQ(run_error(Sandbox::kOn, path), "");
}

TEST(Require, FindsTheEmbeddedLibraryWithNoSearchPathAtAll) {
  LuaState lua(Sandbox::kOn);
  lua.set_search_path({});
  open_moonseed_api(lua.get());
  ASSERT_EQ(luaL_dostring(lua.get(), "return type(require('moonseed').experiment)"), 0)
      << lua_tostring(lua.get(), -1);
  EXPECT_STREQ(lua_tostring(lua.get(), -1), "function");
}

TEST(Require, NamesTheFilesItTriedWhenAModuleIsMissing) {
  TempDir dir;
  const std::string path = dir.write("main.lua", "require('no_such_module')\n");
  const std::string error = run_error(Sandbox::kOn, path);
  EXPECT_NE(error.find("no file '" + dir.path() + "/no_such_module.lua'"), std::string::npos) << error;
}

TEST(LoadedFiles, RecordTheScriptThenEachRequiredModuleWithTheExactBytes) {
  TempDir dir;
  const std::string module_text = "-- crlf line\r\nreturn { width = 64 }\n";
  const std::string module = dir.write("helpers/shapes.lua", module_text);
  const std::string script_text = "local ms = require 'moonseed'\nrequire 'helpers.shapes'\nrequire 'helpers.shapes'\n";
  const std::string path = dir.write("main.lua", script_text);
  LuaState lua(Sandbox::kOn);
  lua.set_search_path(default_search_path(path));
  open_moonseed_api(lua.get());
  lua.run_file(path);
  const std::vector<LoadedLuaFile>& files = lua.loaded_files();
  ASSERT_GE(files.size(), 3u);
  EXPECT_EQ(files[0].path, path);
  EXPECT_EQ(files[0].module, "");
  EXPECT_EQ(files[0].text, script_text);
  EXPECT_EQ(files[1].path, "[moonseed]/moonseed/init.lua");
  EXPECT_EQ(files[1].module, "moonseed");
  EXPECT_TRUE(files[1].embedded);
  EXPECT_EQ(files.back().path, module) << "required twice, compiled once";
  EXPECT_EQ(files.back().text, module_text);
  EXPECT_FALSE(files.back().embedded);
}

TEST(LoadedFiles, ModuleFileNamesTheFileARequireCameFromAndNothingForPreload) {
  TempDir dir;
  const std::string module = dir.write("team/base.lua", "return {}\n");
  const std::string path = dir.write("main.lua", "require 'team.base'\nrequire 'moonseed.core'\n");
  LuaState lua(Sandbox::kOn);
  lua.set_search_path(default_search_path(path));
  open_moonseed_api(lua.get());
  lua.run_file(path);
  ASSERT_NE(lua.module_file("team.base"), nullptr);
  EXPECT_EQ(lua.module_file("team.base")->path, module);
  EXPECT_EQ(lua.module_file("moonseed.core"), nullptr);
  EXPECT_EQ(lua.module_file("never.required"), nullptr);
}

TEST(LuaState, RunFileOfAMissingFileIsAScriptErrorNamingIt) {
  TempDir dir;
  LuaState lua(Sandbox::kOn);
  try {
    lua.run_file(dir.path() + "/missing.lua");
    FAIL() << "ran a missing file";
  } catch (const ScriptError& e) {
    EXPECT_EQ(std::string(e.what()), "cannot open " + dir.path() + "/missing.lua: No such file or directory");
  }
  EXPECT_TRUE(lua.loaded_files().empty());
}

TEST(LuaState, RunFileOfAMissingRelativePathSaysWhichDirectoryItLookedIn) {
  TempDir dir;
  const std::filesystem::path before = std::filesystem::current_path();
  std::filesystem::current_path(dir.path());
  LuaState lua(Sandbox::kOn);
  std::string message;
  try {
    lua.run_file("examples/missing.lua");
  } catch (const ScriptError& e) {
    message = e.what();
  }
  std::filesystem::current_path(before);
  EXPECT_EQ(message, "cannot open examples/missing.lua (looked for in the current directory, " +
                         std::filesystem::canonical(dir.path()).string() + "): No such file or directory");
}

TEST(DefaultSearchPath, ListsTheScriptDirectoryRecipesThenMoonseedPathEntries) {
  ScopedMoonseedPath env("/a:/b/c::");
  EXPECT_EQ(default_search_path("exp/x.lua"), (std::vector<std::string>{"exp", "recipes", "/a", "/b/c"}));
  EXPECT_EQ(default_search_path("x.lua").front(), ".");
}

}  // namespace
}  // namespace moonseed::scripts
