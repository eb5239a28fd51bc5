// End to end: the real `moonseed repl` on a pseudo-terminal (forkpty), typed
// at like a user would, and fed through a pipe like a script would.
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/cli/pty_screen.h"

namespace moonseed::testing {
namespace {

const std::string kBinary = MOONSEED_BINARY;
// The editor draws a prompt as "\r" + prompt, after the "\r\n" that ended
// the previous line.
const std::string kPrompt = "moonseed> ";
const std::string kNextPrompt = "\r\n\r" + kPrompt;
const std::string kNextContinuation = "\r\n\r..> ";
constexpr double kExitTimeoutS = 30;

class Repl : public ::testing::Test {
 protected:
  Repl() : dir_(make_temp_dir("moonseed-repl")) {}

  // Keeps the user's own history and home out of the tests.
  std::vector<std::string> env() const {
    return {"MOONSEED_HISTORY=" + dir_ + "/history", "HOME=" + dir_, "TERM=xterm"};
  }
  // Starts `moonseed repl ARGS` and waits for its first prompt.
  std::unique_ptr<PtyProcess> start(const std::vector<std::string>& args = {}) {
    std::vector<std::string> argv = {kBinary, "repl"};
    argv.insert(argv.end(), args.begin(), args.end());
    auto repl = std::make_unique<PtyProcess>(argv, env());
    EXPECT_TRUE(repl->screen().expect(kPrompt)) << repl->screen().output();
    return repl;
  }
  // Types `line` and Enter; returns what it printed before the next prompt
  // (without the last line's "\r\n").
  std::string enter(PtyProcess& repl, const std::string& line) {
    repl.screen().type(line + "\r");
    std::string echo_and_output;
    EXPECT_TRUE(repl.screen().expect(kNextPrompt, 30, &echo_and_output)) << repl.screen().unmatched();
    const size_t end_of_line = echo_and_output.find("\r\n");
    return end_of_line == std::string::npos ? "" : echo_and_output.substr(end_of_line + 2);
  }
  std::optional<int> quit_with_ctrl_d(PtyProcess& repl) {
    repl.screen().type("\x04");
    return repl.wait(kExitTimeoutS);
  }

  std::string dir_;
};

TEST_F(Repl, ShowsABannerWithTheLuaJitVersionAndHelp) {
  auto repl = start();
  const std::string& screen = repl->screen().output();
  EXPECT_NE(screen.find("LuaJIT 2.1"), std::string::npos) << screen;
  EXPECT_NE(screen.find("help for a short guide"), std::string::npos) << screen;
  EXPECT_EQ(quit_with_ctrl_d(*repl), std::optional<int>(0));
}

TEST_F(Repl, PrintsTwoForOnePlusOne) {
  auto repl = start();
  EXPECT_EQ(enter(*repl, "1+1"), "2");
  EXPECT_EQ(quit_with_ctrl_d(*repl), std::optional<int>(0));
}

TEST_F(Repl, AcceptsAFunctionDefinedOverSeveralLinesThenCallsIt) {
  auto repl = start();
  PtyScreen& screen = repl->screen();
  screen.type("function sq(x)\r");
  ASSERT_TRUE(screen.expect(kNextContinuation)) << screen.unmatched();
  screen.type("return x * x\r");
  ASSERT_TRUE(screen.expect(kNextContinuation)) << screen.unmatched();
  screen.type("end\r");
  ASSERT_TRUE(screen.expect(kNextPrompt)) << screen.unmatched();
  EXPECT_EQ(enter(*repl, "sq(12)"), "144");
  EXPECT_EQ(quit_with_ctrl_d(*repl), std::optional<int>(0));
}

TEST_F(Repl, ShowsAnErrorWithATracebackAndGoesOn) {
  auto repl = start();
  const std::string error = enter(*repl, "error('boom')");
  EXPECT_EQ(error.rfind("stdin:1: boom\r\nstack traceback:", 0), 0u) << error;
  EXPECT_EQ(enter(*repl, "6 * 7"), "42");
  EXPECT_EQ(quit_with_ctrl_d(*repl), std::optional<int>(0));
}

TEST_F(Repl, CompletesMsEnWithTab) {
  auto repl = start();
  PtyScreen& screen = repl->screen();
  screen.type("ms.en\t");
  ASSERT_TRUE(screen.expect(kPrompt + "ms.env")) << screen.unmatched();
  const std::string ids = enter(*repl, ".ids()");
  EXPECT_NE(ids.find("\"CartPole-v1\""), std::string::npos) << ids;
  EXPECT_EQ(quit_with_ctrl_d(*repl), std::optional<int>(0));
}

TEST_F(Repl, MakesResetsAndStepsACartPole) {
  auto repl = start();
  EXPECT_EQ(enter(*repl, "e = ms.env.make(\"CartPole-v1\")"), "");
  const std::string obs = enter(*repl, "e:reset(1)");
  // Four numbers, each drawn from [-0.05, 0.05] (Gymnasium's CartPole reset).
  const std::regex number("-?[0-9]+(\\.[0-9]+)?(e-?[0-9]+)?");
  std::vector<double> values;
  for (auto it = std::sregex_iterator(obs.begin(), obs.end(), number); it != std::sregex_iterator(); ++it) {
    values.push_back(std::stod(it->str()));
  }
  ASSERT_EQ(values.size(), 4u) << obs;
  for (double v : values) EXPECT_LE(std::fabs(v), 0.05) << obs;
  const std::string step = enter(*repl, "e:step(0)");
  EXPECT_NE(step.find("}\t1\tfalse\tfalse"), std::string::npos) << step;
  EXPECT_EQ(quit_with_ctrl_d(*repl), std::optional<int>(0));
}

TEST_F(Repl, CtrlCAbandonsAMultiLineInput) {
  auto repl = start();
  PtyScreen& screen = repl->screen();
  screen.type("function f()\r");
  ASSERT_TRUE(screen.expect(kNextContinuation)) << screen.unmatched();
  screen.type("\x03");
  ASSERT_TRUE(screen.expect("^C" + kNextPrompt)) << screen.unmatched();
  EXPECT_EQ(enter(*repl, "1 + 2"), "3");
  EXPECT_EQ(quit_with_ctrl_d(*repl), std::optional<int>(0));
}

TEST_F(Repl, CtrlDExitsWithCodeZero) {
  auto repl = start();
  EXPECT_EQ(quit_with_ctrl_d(*repl), std::optional<int>(0));
}

TEST_F(Repl, ExitEndsTheProcessWithItsCode) {
  auto repl = start();
  repl->screen().type("exit(5)\r");
  EXPECT_EQ(repl->wait(kExitTimeoutS), std::optional<int>(5));
}

TEST_F(Repl, RecallsTheLastSessionsLinesWithUp) {
  {
    auto first = start();
    EXPECT_EQ(enter(*first, "40 + 2"), "42");
    EXPECT_EQ(quit_with_ctrl_d(*first), std::optional<int>(0));
  }
  std::ifstream file(dir_ + "/history");
  std::string saved;
  std::getline(file, saved);
  EXPECT_EQ(saved, "40 + 2");
  auto second = start();
  EXPECT_EQ(enter(*second, "\x1b[A"), "42");
  EXPECT_EQ(quit_with_ctrl_d(*second), std::optional<int>(0));
}

TEST_F(Repl, RunsTheFilesGivenOnTheCommandLineFirst) {
  const std::string file = dir_ + "/setup.lua";
  std::ofstream(file) << "greeting = 'hello from ' .. 'setup'\n";
  auto repl = start({file});
  EXPECT_EQ(enter(*repl, "greeting"), "hello from setup");
  EXPECT_EQ(quit_with_ctrl_d(*repl), std::optional<int>(0));
}

TEST_F(Repl, ReadsPipedInputWithoutPromptsOrBanner) {
  const PipedRun run = run_piped({kBinary, "repl"}, env(), "1+1\n", 60);
  EXPECT_EQ(run.exit_code, std::optional<int>(0)) << run.err;
  EXPECT_EQ(run.out, "2\n");
  EXPECT_EQ(run.err, "");
}

TEST_F(Repl, ExitsWithOneWhenPipedInputFailed) {
  const PipedRun run = run_piped({kBinary, "repl"}, env(), "error('piped failure')\n1+1\n", 60);
  EXPECT_EQ(run.exit_code, std::optional<int>(1));
  EXPECT_EQ(run.out, "2\n");
  EXPECT_NE(run.err.find("stdin:1: piped failure"), std::string::npos) << run.err;
}

}  // namespace
}  // namespace moonseed::testing
