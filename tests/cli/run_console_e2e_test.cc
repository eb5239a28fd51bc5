// End to end: driving real training runs from the console. `moonseed repl`
// starts a headless run with ms.start and changes it; `moonseed attach`
// connects to a run started elsewhere. Real binary, pseudo-terminals, sockets.
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/cli/pty_screen.h"

namespace moonseed::testing {
namespace {

const std::string kBinary = MOONSEED_BINARY;
const std::string kExample = std::string(MOONSEED_SOURCE_DIR) + "/examples/cartpole_vtrace.lua";

class RunConsole : public ::testing::Test {
 protected:
  RunConsole() : dir_(make_temp_dir("moonseed-console")) {}
  std::vector<std::string> env() const {
    return {"MOONSEED_HISTORY=" + dir_ + "/history", "HOME=" + dir_, "TERM=xterm"};
  }
  // Types `line` + Enter; returns the last line printed before the next `prompt`.
  std::string enter(PtyProcess& console, const std::string& prompt, const std::string& line,
                    std::string* everything = nullptr) {
    console.screen().type(line + "\r");
    std::string echo_and_output;
    EXPECT_TRUE(console.screen().expect("\r\n\r" + prompt, 120, &echo_and_output)) << console.screen().unmatched();
    if (everything != nullptr) *everything = echo_and_output;
    // The echo is redrawn in place (no line breaks) until Enter; the result
    // lines follow. Every result used here is one line: the last one.
    const size_t end_of_line = echo_and_output.rfind("\r\n");
    return end_of_line == std::string::npos ? "" : echo_and_output.substr(end_of_line + 2);
  }
  std::string runs() const { return dir_ + "/runs"; }
  std::string run_dir() const {
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(runs(), ec)) {
      if (e.is_directory()) return e.path().string();
    }
    return "";
  }
  std::string dir_;
};

TEST_F(RunConsole, TheReplStartsAHeadlessRunChangesItAndWaitsForIt) {
  const std::string prompt = "moonseed> ";
  PtyProcess repl({kBinary, "repl"}, env());
  ASSERT_TRUE(repl.screen().expect(prompt)) << repl.screen().output();
  enter(repl, prompt,
        "r = ms.start('" + kExample + "', {'runs_dir=" + runs() +
            "', 'stop.seconds=0', 'stop.frames=1000000000', 'stop.return_mean=0', 'log.interval_s=0.25'})");
  // Wait (printing nothing) until it trained a little.
  enter(repl, prompt, "repeat r:wait(0.2) until r:status().optimizer_steps > 0");
  EXPECT_EQ(enter(repl, prompt, "r:set('optimizer.lr', 2.5e-4).config_version"), "1");
  EXPECT_EQ(enter(repl, prompt, "r:get('optimizer.lr')"), "0.00025");
  std::string refused;
  enter(repl, prompt, "r:set('model.hidden', {32})", &refused);
  EXPECT_NE(refused.find("restart-only field changed: model.hidden"), std::string::npos) << refused;
  enter(repl, prompt, "repeat r:wait(0.2) until #r:metrics(1) == 1");
  EXPECT_EQ(enter(repl, prompt, "type(r:metrics(1)[1].frames)"), "number");
  EXPECT_EQ(enter(repl, prompt, "r:stop()"), "stopping");
  EXPECT_EQ(enter(repl, prompt, "r:wait(60)"), "0");
  repl.screen().type("\x04");
  EXPECT_EQ(repl.wait(30), std::optional<int>(0));
}

TEST_F(RunConsole, AttachConnectsAConsoleToARunningRun) {
  PtyProcess run({kBinary, "run", kExample, "runs_dir=" + runs(), "--quiet", "stop.seconds=0",
                  "stop.frames=1000000000", "stop.return_mean=0", "--no-watch"},
                 env());
  std::string dir;
  for (int i = 0; i < 600 && (dir.empty() || !std::filesystem::exists(dir + "/control.address")); ++i) {
    dir = run_dir();
    ::usleep(100000);
  }
  ASSERT_TRUE(std::filesystem::exists(dir + "/control.address")) << run.screen().output();
  const std::string prompt = std::filesystem::path(dir).filename().string() + "> ";
  PtyProcess attach({kBinary, "attach", dir}, env());
  ASSERT_TRUE(attach.screen().expect("Attached to " + dir)) << attach.screen().output();
  ASSERT_TRUE(attach.screen().expect(prompt)) << attach.screen().output();
  EXPECT_EQ(enter(attach, prompt, "run:status().actors_expected"), "2");
  EXPECT_EQ(enter(attach, prompt, "run:pause().paused"), "true");
  EXPECT_EQ(enter(attach, prompt, "run:resume().paused"), "false");
  EXPECT_EQ(enter(attach, prompt, "run:evaluate(2).episodes"), "2");
  std::string help;
  enter(attach, prompt, "help", &help);
  EXPECT_EQ(help.find("function: 0x"), std::string::npos) << help;
  EXPECT_NE(help.find("run:"), std::string::npos) << "the console's guide: " << help;
  // Leaving the console leaves the run going.
  attach.screen().type("\x04");
  EXPECT_EQ(attach.wait(30), std::optional<int>(0));
  EXPECT_FALSE(run.wait(1).has_value());
  PtyProcess second({kBinary, "attach", dir}, env());
  ASSERT_TRUE(second.screen().expect(prompt)) << second.screen().output();
  PtyProcess stopper({kBinary, "ctl", dir, "stop"}, env());
  EXPECT_EQ(stopper.wait(60), std::optional<int>(0));
  EXPECT_EQ(run.wait(60), std::optional<int>(0)) << run.screen().output();
  // A console still attached to the run that ended says so, without a Lua traceback.
  std::string ended;
  EXPECT_EQ(enter(second, prompt, "run:status()", &ended).rfind("the run has ended (stopped from the control socket)", 0), 0u)
      << ended;
  EXPECT_EQ(ended.find("stack traceback"), std::string::npos) << ended;
  second.screen().type("\x04");
  EXPECT_EQ(second.wait(30), std::optional<int>(0));
}

}  // namespace
}  // namespace moonseed::testing
