// The Lua console: how values print, what Tab offers, how inputs evaluate.
#include <unistd.h>

#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cli/console/lua_repl.h"
#include "scripts/api/lua_api.h"
#include "scripts/state/lua_state.h"

namespace moonseed::cli {
namespace {

using Names = std::vector<std::string>;

// A console's Lua state: the engine's API open and `ms` loaded, as `moonseed repl` has it.
class ConsoleState : public ::testing::Test {
 protected:
  ConsoleState() : lua_(scripts::Sandbox::kOff), L(lua_.get()) {
    scripts::open_moonseed_api(L);
    run("ms = require 'moonseed'");
  }

  void run(const std::string& code) {
    ASSERT_EQ(luaL_dostring(L, code.c_str()), 0) << lua_tostring(L, -1);
    lua_settop(L, 0);
  }
  // pretty_value of the expression `code`.
  std::string pretty(const std::string& code, const PrettyLimits& limits = {}) {
    const std::string chunk = "return " + code;
    EXPECT_EQ(luaL_dostring(L, chunk.c_str()), 0) << lua_tostring(L, -1);
    std::string text = pretty_value(L, -1, limits);
    lua_settop(L, 0);
    return text;
  }
  Completion complete(const std::string& line) { return complete_lua(L, line, line.size()); }

  scripts::LuaState lua_;
  lua_State* L;
};

TEST_F(ConsoleState, PrettyValuePrintsASmallTableOnOneLine) {
  EXPECT_EQ(pretty("{1, 2.5, 'a', true}"), "{1, 2.5, \"a\", true}");
  EXPECT_EQ(pretty("{}"), "{}");
}

TEST_F(ConsoleState, PrettyValuePrintsTheSequenceThenKeysSortedNumbersStringsBooleans) {
  EXPECT_EQ(pretty("{'x', 'y', b = 1, a = 2, [10] = 3, [true] = 4, [-1] = 5, ['not a name'] = 6}"),
            "{\"x\", \"y\", [-1] = 5, [10] = 3, a = 2, b = 1, [\"not a name\"] = 6, [true] = 4}");
}

TEST_F(ConsoleState, PrettyValueIndentsNestedTablesThatDoNotFitOnALine) {
  PrettyLimits limits;
  limits.line_width = 24;
  EXPECT_EQ(pretty("{name = 'cartpole', obs = {1, 2}, model = {hidden = {64, 64}, activation = 'tanh'}}", limits),
            "{\n"
            "  model = {\n"
            "    activation = \"tanh\",\n"
            "    hidden = {64, 64}\n"
            "  },\n"
            "  name = \"cartpole\",\n"
            "  obs = {1, 2}\n"
            "}");
}

TEST_F(ConsoleState, PrettyValueFillsLinesWithTheNumbersOfALongSequence) {
  PrettyLimits limits;
  limits.line_width = 16;
  EXPECT_EQ(pretty("{100, 200, 300, 400, 500}", limits), "{\n  100, 200, 300,\n  400, 500\n}");
}

TEST_F(ConsoleState, PrettyValueMarksCycles) {
  run("t = {} t.self = t");
  EXPECT_EQ(pretty("t"), "{self = <cycle>}");
  run("a = {b = {}} a.b.up = a a.b.list = {a}");
  EXPECT_EQ(pretty("a"), "{b = {list = {<cycle>}, up = <cycle>}}");
}

TEST_F(ConsoleState, PrettyValuePrintsATableSeenTwiceButNotInACycleBothTimes) {
  run("s = {1}");
  EXPECT_EQ(pretty("{s, s}"), "{{1}, {1}}");
}

TEST_F(ConsoleState, PrettyValueStopsAtTheDepthLimit) {
  PrettyLimits limits;
  limits.max_depth = 2;
  EXPECT_EQ(pretty("{{{{1}}}, {}}", limits), "{{{...}}, {}}");
}

TEST_F(ConsoleState, PrettyValueShowsAtMostMaxItemsEntries) {
  PrettyLimits limits;
  limits.max_items = 3;
  EXPECT_EQ(pretty("{10, 20, 30, 40, x = 50}", limits), "{10, 20, 30, ... (2 more)}");
}

TEST_F(ConsoleState, PrettyValueQuotesAndEscapesStrings) {
  // Control characters as Lua's three-digit decimal escapes (base::lua_quote).
  EXPECT_EQ(pretty("{'say \"hi\"\\n', '\\1\\\\'}"), "{\"say \\\"hi\\\"\\n\", \"\\001\\\\\"}");
}

TEST_F(ConsoleState, PrettyValuePrintsThroughTostringMetamethods) {
  EXPECT_EQ(pretty("{setmetatable({}, {__tostring = function() return 'point(1, 2)' end})}"), "{point(1, 2)}");
  run("e = ms.env.make('CartPole-v1')");
  EXPECT_EQ(pretty("e"), "moonseed.Env(CartPole-v1)");
}

TEST_F(ConsoleState, PrettyValueLeavesTheStackAsItWas) {
  lua_pushinteger(L, 7);
  luaL_dostring(L, "return {1, {2}, x = 'y'}");
  pretty_value(L, -1);
  ASSERT_EQ(lua_gettop(L), 2);
  EXPECT_TRUE(lua_istable(L, -1));
  EXPECT_EQ(lua_tointeger(L, 1), 7);
}

TEST_F(ConsoleState, CompletesFieldsOfATableReachedByADottedPath) {
  const Completion c = complete("x = ms.env.ma");
  EXPECT_EQ(c.start, 11u);
  EXPECT_EQ(c.candidates, (Names{"make"}));
}

TEST_F(ConsoleState, CompletesGlobalsAndKeywords) {
  EXPECT_EQ(complete("pri").candidates, (Names{"print"}));
  EXPECT_EQ(complete("(whi").candidates, (Names{"while"}));
  EXPECT_EQ(complete("(whi").start, 1u);
  EXPECT_EQ(complete("ms").candidates, (Names{"ms"}));
}

TEST_F(ConsoleState, CompletesTheMethodsOfAnEnvThroughItsMetatable) {
  run("e = ms.env.make('CartPole-v1')");
  EXPECT_EQ(complete("e:").candidates, (Names{"get_state", "reset", "set_state", "spec", "step"}));
  EXPECT_EQ(complete("e:re").candidates, (Names{"reset"}));
  EXPECT_EQ(complete("e:re").start, 2u);
}

TEST_F(ConsoleState, CompletesOnlyFunctionsAfterAColon) {
  run("t = {f = function() end, n = 1}");
  EXPECT_EQ(complete("t:").candidates, (Names{"f"}));
  EXPECT_EQ(complete("t.").candidates, (Names{"f", "n"}));
}

TEST_F(ConsoleState, CompletesTheNameBeforeTheCursorInTheMiddleOfALine) {
  const std::string line = "ms.en + 1";
  const Completion c = complete_lua(L, line, 5);
  EXPECT_EQ(c.start, 3u);
  EXPECT_EQ(c.candidates, (Names{"env"}));
}

TEST_F(ConsoleState, CompletionNeverCallsIndexFunctions) {
  run("called = false t = setmetatable({}, {__index = function() called = true end})");
  EXPECT_TRUE(complete("t.x").candidates.empty());
  EXPECT_TRUE(complete("t.x.").candidates.empty());
  lua_getglobal(L, "called");
  EXPECT_FALSE(lua_toboolean(L, -1));
  lua_pop(L, 1);
}

TEST_F(ConsoleState, CompletionOfAnUnknownPathOffersNothing) {
  EXPECT_TRUE(complete("nope.x").candidates.empty());
  EXPECT_TRUE(complete("ms.env.make.x").candidates.empty());
  EXPECT_EQ(lua_gettop(L), 0);
}

// A LuaRepl whose output is captured; its editor reads a pipe with `input`.
class Console : public ConsoleState {
 protected:
  explicit Console(const std::string& input = "") {
    int fds[2];
    EXPECT_EQ(pipe(fds), 0);
    EXPECT_EQ(write(fds[1], input.data(), input.size()), static_cast<ssize_t>(input.size()));
    ::close(fds[1]);
    input_fd_ = fds[0];
    editor_ = std::make_unique<LineEditor>(input_fd_, STDOUT_FILENO);
    ReplOptions options;
    options.help = "the guide";
    repl_ = std::make_unique<LuaRepl>(L, *editor_, options, out_, err_);
  }
  ~Console() override {
    repl_.reset();
    ::close(input_fd_);
  }

  int input_fd_ = -1;
  std::ostringstream out_, err_;
  std::unique_ptr<LineEditor> editor_;
  std::unique_ptr<LuaRepl> repl_;
};

TEST_F(Console, AnExpressionPrintsItsValue) {
  EXPECT_EQ(repl_->evaluate("1+1"), EvalStatus::kDone);
  EXPECT_EQ(out_.str(), "2\n");
}

TEST_F(Console, SeveralValuesPrintSeparatedByTabsTrailingNilsIncluded) {
  EXPECT_EQ(repl_->evaluate("1, 'a', {2}, nil"), EvalStatus::kDone);
  EXPECT_EQ(out_.str(), "1\ta\t{2}\tnil\n");
}

TEST_F(Console, AnInputSeesNoVarargs) {
  EXPECT_EQ(repl_->evaluate("select('#', ...)"), EvalStatus::kDone);
  EXPECT_EQ(out_.str(), "0\n");
}

TEST_F(Console, AStatementPrintsNothing) {
  EXPECT_EQ(repl_->evaluate("x = 3"), EvalStatus::kDone);
  EXPECT_EQ(repl_->evaluate("local y = nil"), EvalStatus::kDone);
  EXPECT_EQ(out_.str(), "");
  EXPECT_EQ(repl_->evaluate("x"), EvalStatus::kDone);
  EXPECT_EQ(out_.str(), "3\n");
}

TEST_F(Console, AChunkThatReturnsPrintsItsValuesLikeAnExpression) {
  EXPECT_EQ(repl_->evaluate("return 1"), EvalStatus::kDone);
  EXPECT_EQ(repl_->evaluate("local t = {2, 'a'} return t, 'b'"), EvalStatus::kDone);
  EXPECT_EQ(out_.str(), "1\n{2, \"a\"}\tb\n");
}

TEST_F(Console, AnUnfinishedFunctionNeedsMoreLines) {
  EXPECT_EQ(repl_->evaluate("function sq(x)"), EvalStatus::kIncomplete);
  EXPECT_EQ(repl_->evaluate("function sq(x)\n  return x * x"), EvalStatus::kIncomplete);
  EXPECT_EQ(repl_->evaluate("function sq(x)\n  return x * x\nend"), EvalStatus::kDone);
  EXPECT_EQ(repl_->evaluate("sq(7)"), EvalStatus::kDone);
  EXPECT_EQ(out_.str(), "49\n");
}

TEST_F(Console, AnUnfinishedTableExpressionNeedsMoreLines) {
  EXPECT_EQ(repl_->evaluate("{1,"), EvalStatus::kIncomplete);
  EXPECT_EQ(repl_->evaluate("{1,\n2}"), EvalStatus::kDone);
  EXPECT_EQ(out_.str(), "{1, 2}\n");
}

TEST_F(Console, ARuntimeErrorPrintsItsMessageAndATraceback) {
  EXPECT_EQ(repl_->evaluate("error('boom')"), EvalStatus::kError);
  EXPECT_EQ(err_.str().rfind("stdin:1: boom\nstack traceback:\n", 0), 0u) << err_.str();
  EXPECT_NE(err_.str().find("in main chunk"), std::string::npos) << err_.str();
}

TEST_F(Console, ASyntaxErrorIsReportedRatherThanContinued) {
  EXPECT_EQ(repl_->evaluate("1 +* 2"), EvalStatus::kError);
  EXPECT_NE(err_.str().find("stdin:1:"), std::string::npos) << err_.str();
}

TEST_F(Console, AnInputLeftUnfinishedAtEndOfInputIsAnError) {
  EXPECT_EQ(repl_->evaluate("function f()", true), EvalStatus::kError);
  EXPECT_NE(err_.str().find("<eof>"), std::string::npos) << err_.str();
}

TEST_F(Console, ExitStopsTheInputAndKeepsItsCode) {
  EXPECT_EQ(repl_->evaluate("exit(3) x = 1"), EvalStatus::kExit);
  EXPECT_TRUE(repl_->exit_requested());
  EXPECT_EQ(repl_->exit_code(), 3);
  lua_getglobal(L, "x");
  EXPECT_TRUE(lua_isnil(L, -1));
  lua_pop(L, 1);
  EXPECT_EQ(err_.str(), "");
}

TEST_F(Console, HelpPrintsTheGuide) {
  EXPECT_EQ(repl_->evaluate("help()"), EvalStatus::kDone);
  EXPECT_EQ(out_.str(), "the guide\n");
}

TEST_F(Console, HelpExitAndQuitTypedAloneDoWhatTheySay) {
  EXPECT_EQ(repl_->evaluate("help"), EvalStatus::kDone);
  EXPECT_EQ(repl_->evaluate("  help  "), EvalStatus::kDone);
  EXPECT_EQ(out_.str(), "the guide\nthe guide\n") << "not function: 0x...";
  EXPECT_EQ(repl_->evaluate("quit"), EvalStatus::kExit);
}

TEST_F(Console, ANameTheUserGaveHelpIsTheirs) {
  EXPECT_EQ(repl_->evaluate("help = 42"), EvalStatus::kDone);
  EXPECT_EQ(repl_->evaluate("help"), EvalStatus::kDone);
  EXPECT_EQ(out_.str(), "42\n");
}

TEST_F(Console, APlainErrorPrintsItsMessageWithoutATraceback) {
  // moonseed.run's plain_error: a table with plain = true whose __tostring is the message.
  EXPECT_EQ(repl_->evaluate("error(setmetatable({plain = true, message = 'the run has ended (x)'}, "
                            "{__tostring = function(e) return e.message end}))"),
            EvalStatus::kError);
  EXPECT_EQ(err_.str(), "the run has ended (x)\n");
}

class PipedConsole : public Console {
 protected:
  PipedConsole() : Console("function g()\n  return 5\nend\ng()\n\n  \nerror('x')\n2 * 3\n") {}
};

TEST_F(PipedConsole, RunEvaluatesEveryLineAndFailsWhenOneFailed) {
  EXPECT_EQ(repl_->run(), 1);
  EXPECT_EQ(out_.str(), "5\n6\n");
  EXPECT_NE(err_.str().find("stdin:1: x"), std::string::npos) << err_.str();
}

class CleanPipedConsole : public Console {
 protected:
  CleanPipedConsole() : Console("t = {1,\n2}\n#t\n") {}
};

TEST_F(CleanPipedConsole, RunReturnsZeroWhenEveryInputRan) {
  EXPECT_EQ(repl_->run(), 0);
  EXPECT_EQ(out_.str(), "2\n");
}

}  // namespace
}  // namespace moonseed::cli
