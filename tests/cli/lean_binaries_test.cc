// Only moonseed-engine loads LibTorch: `moonseed` (the launcher) and
// moonseed-actor must not, so that `moonseed actor`, `moonseed log`,
// `moonseed ctl RUN COMMAND` and every
// actor process start in milliseconds and a few MB (docs/performance.md
// "Start-up and memory"). The dynamic loader lists what each binary loads
// (LD_TRACE_LOADED_OBJECTS, as ldd does), and each command answers through
// the binary it belongs to.
#include <sys/wait.h>

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <string>

namespace {

const std::string kBinary = MOONSEED_BINARY;
const std::string kDir = std::filesystem::path(MOONSEED_BINARY).parent_path();

struct Output {
  std::string text;
  int code = -1;
};

// Runs `command` through the shell; its stdout and stderr, and its exit code.
Output run(const std::string& command) {
  Output out;
  FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return out;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, pipe)) > 0) out.text.append(buf, n);
  const int status = ::pclose(pipe);
  out.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return out;
}

std::string loaded_objects(const std::string& binary) {
  return run("LD_TRACE_LOADED_OBJECTS=1 '" + binary + "'").text;
}

TEST(LeanBinaries, OnlyTheEngineLoadsLibTorch) {
  const std::string engine = loaded_objects(kDir + "/moonseed-engine");
  ASSERT_NE(engine.find("libc10"), std::string::npos) << engine;  // the check sees LibTorch where it is
  for (const std::string name : {"moonseed", "moonseed-actor"}) {
    const std::string objects = loaded_objects(kDir + "/" + name);
    EXPECT_NE(objects.find("libc.so"), std::string::npos) << name << ":\n" << objects;
    EXPECT_EQ(objects.find("libtorch"), std::string::npos) << name << ":\n" << objects;
    EXPECT_EQ(objects.find("libc10"), std::string::npos) << name << ":\n" << objects;
  }
}

// `moonseed ARGS` exits with `code` and says `text`.
void expect_answer(const std::string& args, int code, const std::string& text) {
  const Output out = run("'" + kBinary + "' " + args);
  EXPECT_EQ(out.code, code) << args << ":\n" << out.text;
  EXPECT_NE(out.text.find(text), std::string::npos) << args << ":\n" << out.text;
}

TEST(LeanBinaries, EachCommandAnswersThroughTheBinaryItBelongsTo) {
  expect_answer("actor --help", 0, "usage: moonseed actor --connect ADDRESS");  // moonseed-actor
  expect_answer("log --help", 0, "moonseed log");                               // the launcher
  expect_answer("run --help", 0, "moonseed run");                               // moonseed-engine
  expect_answer("trian x.lua", 2, "unknown command 'trian'");
}

// The libraries the dynamic loader loads while `moonseed ARGS` runs, across
// its exec into another binary (LD_DEBUG is inherited), with its output.
std::string libraries_loaded_by(const std::string& args) {
  return run("LD_DEBUG=libs '" + kBinary + "' " + args).text;
}

TEST(LeanBinaries, CommandsThatTrainNothingNeverLoadLibTorch) {
  ASSERT_NE(libraries_loaded_by("run --help").find("libc10"), std::string::npos);  // seen where it is
  for (const std::string args : {"actor --help", "log --help", "ctl /nonexistent-run status"}) {
    const std::string trace = libraries_loaded_by(args);
    EXPECT_NE(trace.find("libc.so"), std::string::npos) << args << ":\n" << trace.substr(0, 2000);
    EXPECT_EQ(trace.find("libc10"), std::string::npos) << args << " loaded LibTorch";
  }
  // The lean ctl answers as the engine's did.
  expect_answer("ctl /nonexistent-run status", 1,
                "moonseed ctl: /nonexistent-run is not a run directory with a control socket (no control.address)");
}

TEST(LeanBinaries, AMissingEngineIsNamedWithItsPath) {
  const std::string dir = std::filesystem::temp_directory_path() / ("moonseed-lean-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::filesystem::copy_file(kBinary, dir + "/moonseed", std::filesystem::copy_options::overwrite_existing);
  const Output out = run("'" + dir + "/moonseed' run x.lua");
  std::filesystem::remove_all(dir);
  EXPECT_EQ(out.code, 1) << out.text;
  EXPECT_NE(out.text.find("cannot run " + dir + "/moonseed-engine: No such file or directory"), std::string::npos)
      << out.text;
}

}  // namespace
