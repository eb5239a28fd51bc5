// The line editor driven through a real pseudo-terminal: the test types into
// the master side while read_line() runs on the slave in another thread.
#include <fcntl.h>
#include <termios.h>
#include <unistd.h>

#include <chrono>
#include <future>
#include <memory>
#include <stdexcept>
#include <string>

#include <gtest/gtest.h>

#include "cli/console/line_editor.h"
#include "tests/cli/pty_screen.h"

namespace moonseed::cli {

bool operator==(const ReadResult& a, const ReadResult& b) { return a.status == b.status && a.line == b.line; }

void PrintTo(const ReadResult& r, std::ostream* os) {
  const char* names[] = {"line", "interrupted", "end of input"};
  *os << names[static_cast<int>(r.status)] << " \"" << r.line << "\"";
}

namespace {

using moonseed::testing::Pty;
using moonseed::testing::PtyScreen;

const std::string kLeft = "\x1b[D", kRight = "\x1b[C", kUp = "\x1b[A", kDown = "\x1b[B";
const std::string kHome = "\x1b[H", kEnd = "\x1b[F", kDelete = "\x1b[3~", kBackspace = "\x7f";
const std::string kCtrlA = "\x01", kCtrlB = "\x02", kCtrlC = "\x03", kCtrlD = "\x04", kCtrlE = "\x05",
                  kCtrlF = "\x06", kCtrlH = "\x08", kCtrlK = "\x0b", kCtrlL = "\x0c", kCtrlN = "\x0e",
                  kCtrlP = "\x10", kCtrlU = "\x15", kCtrlW = "\x17", kTab = "\t", kEnter = "\r";

ReadResult line(const std::string& text) { return {ReadStatus::kLine, text}; }

std::string times(int n, const std::string& keys) {
  std::string out;
  for (int i = 0; i < n; ++i) out += keys;
  return out;
}

// Method names of an Env, completed after the last non-name character.
Completion complete_env_methods(const std::string& text, size_t cursor) {
  size_t start = cursor;
  while (start > 0 && (std::isalnum(static_cast<unsigned char>(text[start - 1])) || text[start - 1] == '_')) --start;
  Completion completion{start, {}};
  const std::string word = text.substr(start, cursor - start);
  for (const char* name : {"reset", "restore", "step"}) {
    if (std::string(name).rfind(word, 0) == 0) completion.candidates.push_back(name);
  }
  return completion;
}

class LineEditorOnATerminal : public ::testing::Test {
 protected:
  void SetUp() override { open(80); }
  void TearDown() override { close(); }

  void open(int columns) {
    pty_ = moonseed::testing::open_pty(columns);
    screen_ = std::make_unique<PtyScreen>(pty_.master);
    editor_ = std::make_unique<LineEditor>(pty_.slave, pty_.slave);
  }
  void close() {
    if (screen_) screen_->close();  // a read still running ends
    if (pending_.valid()) pending_.wait();
    if (pty_.slave >= 0) ::close(pty_.slave);
    pty_.slave = -1;
  }

  // Starts a read and waits for its prompt, written once the terminal is raw.
  void start(const std::string& prompt) {
    pending_ = std::async(std::launch::async, [this, prompt] { return editor_->read_line(prompt); });
    ASSERT_TRUE(screen_->expect(prompt, 10)) << "screen: " << screen_->unmatched();
  }
  // Types `keys` and returns what the read returned.
  ReadResult finish(const std::string& keys) {
    screen_->type(keys);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (pending_.wait_for(std::chrono::milliseconds(0)) != std::future_status::ready &&
           std::chrono::steady_clock::now() < deadline) {
      screen_->read_some(20);
    }
    if (pending_.wait_for(std::chrono::milliseconds(0)) != std::future_status::ready) {
      ADD_FAILURE() << "read_line did not return; screen: " << screen_->unmatched();
      screen_->close();
    }
    return pending_.get();
  }
  ReadResult read(const std::string& keys, const std::string& prompt = "> ") {
    start(prompt);
    if (HasFatalFailure()) return {};
    return finish(keys);
  }
  termios terminal_mode() const {
    termios mode{};
    tcgetattr(pty_.slave, &mode);
    return mode;
  }

  Pty pty_;
  std::unique_ptr<PtyScreen> screen_;
  std::unique_ptr<LineEditor> editor_;
  std::future<ReadResult> pending_;
};

TEST_F(LineEditorOnATerminal, IsInteractive) { EXPECT_TRUE(editor_->interactive()); }

TEST_F(LineEditorOnATerminal, ReturnsTheTypedLineOnEnter) {
  EXPECT_EQ(read("hello world" + kEnter), line("hello world"));
}

TEST_F(LineEditorOnATerminal, InsertsWhereTheArrowAndHomeEndKeysMovedTheCursor) {
  EXPECT_EQ(read("wrd" + kLeft + kLeft + "o" + kHome + "a " + kEnd + "s" + kLeft + kRight + "!" + kEnter),
            line("a words!"));
}

TEST_F(LineEditorOnATerminal, MovesWithCtrlBCtrlFCtrlAAndCtrlE) {
  EXPECT_EQ(read("bdf" + kCtrlA + "a" + kCtrlE + kCtrlB + kCtrlB + "c" + kCtrlF + "e" + kEnter), line("abcdef"));
}

TEST_F(LineEditorOnATerminal, UnderstandsTheEscOFormOfCursorKeys) {
  EXPECT_EQ(read("bc\x1bOD\x1bOD" "a\x1bOF" "d\x1bOH" ">" + kEnter), line(">abcd"));
}

TEST_F(LineEditorOnATerminal, CtrlKKillsFromTheCursorToTheEnd) {
  EXPECT_EQ(read("hello world" + kCtrlA + times(5, kCtrlF) + kCtrlK + kEnter), line("hello"));
}

TEST_F(LineEditorOnATerminal, CtrlUKillsFromTheStartToTheCursor) {
  EXPECT_EQ(read("hello world" + times(5, kLeft) + kCtrlU + kEnter), line("world"));
}

TEST_F(LineEditorOnATerminal, CtrlWKillsTheWordBeforeTheCursor) {
  EXPECT_EQ(read("local x = ms.env" + kCtrlW + kEnter), line("local x = "));
}

TEST_F(LineEditorOnATerminal, BackspaceAndDeleteRemoveTheCharacterBeforeAndUnderTheCursor) {
  EXPECT_EQ(read("abcde" + kCtrlH + kLeft + kLeft + kBackspace + kDelete + kEnter), line("ad"));
}

TEST_F(LineEditorOnATerminal, UpRecallsTheHistoryNewestFirst) {
  editor_->history().add("first");
  editor_->history().add("second");
  EXPECT_EQ(read(kUp + kUp + "!" + kEnter), line("first!"));
}

TEST_F(LineEditorOnATerminal, DownGoesBackToTheLineBeingTyped) {
  editor_->history().add("first");
  EXPECT_EQ(read("draft" + kUp + kDown + kEnter), line("draft"));
}

TEST_F(LineEditorOnATerminal, CtrlPAndCtrlNWalkTheHistoryLikeUpAndDown) {
  editor_->history().add("first");
  editor_->history().add("second");
  EXPECT_EQ(read(kCtrlP + kCtrlP + kCtrlN + kEnter), line("second"));
}

TEST_F(LineEditorOnATerminal, TabCompletesASingleCandidate) {
  editor_->set_completer(complete_env_methods);
  EXPECT_EQ(read("e:st" + kTab + "(0)" + kEnter), line("e:step(0)"));
}

TEST_F(LineEditorOnATerminal, TabCompletesTheCommonPrefixOfSeveralCandidates) {
  editor_->set_completer(complete_env_methods);
  EXPECT_EQ(read("e:r" + kTab + kEnter), line("e:res"));
}

TEST_F(LineEditorOnATerminal, ASecondTabListsTheCandidates) {
  editor_->set_completer(complete_env_methods);
  start("> ");
  ASSERT_FALSE(HasFatalFailure());
  screen_->type("e:res" + kTab + kTab);
  EXPECT_TRUE(screen_->expect("reset", 10)) << screen_->unmatched();
  EXPECT_TRUE(screen_->expect("restore", 10)) << screen_->unmatched();
  EXPECT_EQ(finish(kEnter), line("e:res"));
}

TEST_F(LineEditorOnATerminal, CtrlCAbandonsTheLine) {
  EXPECT_EQ(read("half typed" + kCtrlC), (ReadResult{ReadStatus::kInterrupted, ""}));
}

TEST_F(LineEditorOnATerminal, CtrlDOnAnEmptyLineEndsTheInput) {
  EXPECT_EQ(read(kCtrlD), (ReadResult{ReadStatus::kEndOfInput, ""}));
}

TEST_F(LineEditorOnATerminal, CtrlDInsideALineDeletesTheCharacterUnderTheCursor) {
  EXPECT_EQ(read("abc" + kLeft + kCtrlD + kEnter), line("ab"));
}

TEST_F(LineEditorOnATerminal, CtrlLClearsTheScreenAndKeepsTheLine) {
  start("> ");
  ASSERT_FALSE(HasFatalFailure());
  screen_->type("1+1" + kCtrlL);
  EXPECT_TRUE(screen_->expect("\x1b[2J", 10));
  EXPECT_EQ(finish(kEnter), line("1+1"));
}

TEST_F(LineEditorOnATerminal, EditsUtf8CharactersWhole) {
  EXPECT_EQ(read("h\xc3\xa9llo" + kLeft + kLeft + kLeft + kBackspace + kEnter), line("hllo"));
}

TEST_F(LineEditorOnATerminal, EditsALineWiderThanTheTerminalWithoutWrapping) {
  close();
  open(20);
  const std::string long_text = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMN";
  EXPECT_EQ(read(long_text + kHome + "X" + kEnd + "Y" + times(10, kLeft) + "-" + kEnter),
            line("X" + long_text.substr(0, 41) + "-" + long_text.substr(41) + "Y"));
  // Every redraw fits in the 20 columns: the terminal never wraps the line.
  const std::string& out = screen_->output();
  size_t run = 0, longest = 0;
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i] == '\x1b') {
      while (i < out.size() && !std::isalpha(static_cast<unsigned char>(out[i])) ) ++i;
      run = 0;
    } else if (out[i] == '\r' || out[i] == '\n') {
      run = 0;
    } else {
      longest = std::max(longest, ++run);
    }
  }
  EXPECT_LT(longest, 20u);
}

TEST_F(LineEditorOnATerminal, RestoresTheTerminalModeAfterARead) {
  const termios before = terminal_mode();
  ASSERT_TRUE(before.c_lflag & ICANON);
  EXPECT_EQ(read("x" + kEnter), line("x"));
  const termios after = terminal_mode();
  EXPECT_EQ(after.c_lflag, before.c_lflag);
  EXPECT_EQ(after.c_iflag, before.c_iflag);
  EXPECT_EQ(after.c_oflag, before.c_oflag);
}

TEST_F(LineEditorOnATerminal, RestoresTheTerminalModeWhenACompleterThrows) {
  const termios before = terminal_mode();
  editor_->set_completer([](const std::string&, size_t) -> Completion { throw std::runtime_error("broken"); });
  start("> ");
  ASSERT_FALSE(HasFatalFailure());
  screen_->type("x" + kTab);
  ASSERT_EQ(pending_.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  EXPECT_THROW(pending_.get(), std::runtime_error);
  const termios after = terminal_mode();
  EXPECT_EQ(after.c_lflag, before.c_lflag);
  EXPECT_EQ(after.c_iflag, before.c_iflag);
}

TEST(LineEditorOnAPipe, ReadsLinesWithoutPromptOrEchoUntilEndOfInput) {
  int in[2], out[2];
  ASSERT_EQ(pipe(in), 0);
  ASSERT_EQ(pipe(out), 0);
  const std::string input = "1+1\nsecond\r\nlast without newline";
  ASSERT_EQ(write(in[1], input.data(), input.size()), static_cast<ssize_t>(input.size()));
  ::close(in[1]);
  LineEditor editor(in[0], out[1]);
  EXPECT_FALSE(editor.interactive());
  EXPECT_EQ(editor.read_line("> "), line("1+1"));
  EXPECT_EQ(editor.read_line("> "), line("second"));
  EXPECT_EQ(editor.read_line("> "), line("last without newline"));
  EXPECT_EQ(editor.read_line("> "), (ReadResult{ReadStatus::kEndOfInput, ""}));
  ::close(out[1]);
  char c = 0;
  EXPECT_EQ(::read(out[0], &c, 1), 0) << "the editor wrote to a non-terminal";
  ::close(in[0]);
  ::close(out[0]);
}

}  // namespace
}  // namespace moonseed::cli
