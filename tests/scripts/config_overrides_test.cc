// Command-line overrides (and `moonseed ctl set`, which adds one): plain text
// typed by the schema, or the Lua expression a script would hold; and what an
// override cannot mean for a model given as ms.layers.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "engine/config/schedule.h"
#include "engine/vtrace/config/vtrace_config.h"
#include "scripts/loader/experiment_loader.h"
#include "tests/scripts/loader_test_util.h"

namespace moonseed::scripts {
namespace {

using testing::issues_of;

const std::string kVtrace = std::string(MOONSEED_SOURCE_DIR) + "/examples/cartpole_vtrace.lua";
const std::string kLayers = std::string(MOONSEED_SOURCE_DIR) + "/examples/cartpole_layers.lua";

std::string joined(const std::vector<ConfigIssue>& issues) {
  std::string out;
  for (const ConfigIssue& i : issues) out += i.file + ": " + i.field + ": " + i.message + "\n";
  return out;
}

TEST(LuaOverrides, AScheduleIsTheLuaExpressionAScriptWouldHold) {
  const engine::ExperimentConfig c = load_experiment(kVtrace, {"optimizer.lr=ms.linear(1e-3, 1e-4, 1e6)",
                                                               "vtrace.entropy_cost=ms.cosine { from = 0.02, to = 0.001, frames = 5e5 }"});
  const engine::Schedule* lr = engine::find_schedule(c, "optimizer.lr");
  ASSERT_NE(lr, nullptr);
  EXPECT_EQ(lr->kind, engine::Schedule::Kind::kLinear);
  EXPECT_EQ(lr->points, (std::vector<std::pair<double, double>>{{0, 1e-3}, {1e6, 1e-4}}));
  EXPECT_EQ(c.optimizer.lr, 1e-3);
  const engine::Schedule* entropy = engine::find_schedule(c, "vtrace.entropy_cost");
  ASSERT_NE(entropy, nullptr);
  EXPECT_EQ(entropy->kind, engine::Schedule::Kind::kCosine);
  EXPECT_EQ(c.section<engine::VTraceConfig>().entropy_cost, 0.02);
}

TEST(LuaOverrides, ANumberReplacesASchedule) {
  const engine::ExperimentConfig c =
      load_experiment(kVtrace, {"optimizer.lr=ms.linear(1e-3, 1e-4, 1e6)", "optimizer.lr=5e-4"});
  EXPECT_EQ(engine::find_schedule(c, "optimizer.lr"), nullptr);
  EXPECT_EQ(c.optimizer.lr, 5e-4);
}

TEST(LuaOverrides, AListMayBeWrittenAsALuaTable) {
  EXPECT_EQ(load_experiment(kVtrace, {"model.hidden={32, 16}"}).model.hidden, (std::vector<int64_t>{32, 16}));
  EXPECT_EQ(load_experiment(kVtrace, {"model.hidden=8,4"}).model.hidden, (std::vector<int64_t>{8, 4}));
}

TEST(LuaOverrides, ALuaValueIsCheckedLikeTheScriptsOwn) {
  const std::vector<ConfigIssue> issues = issues_of(kVtrace, {"optimizer.lr=ms.linear(1e-3, 5, 1e6)"});
  ASSERT_EQ(issues.size(), 1u) << joined(issues);
  EXPECT_EQ(issues[0].file, "command line");
  EXPECT_EQ(issues[0].field, "optimizer.lr");
  EXPECT_NE(issues[0].message.find("in override 'optimizer.lr=ms.linear(1e-3, 5, 1e6)'"), std::string::npos)
      << issues[0].message;
}

TEST(LuaOverrides, AnExpressionThatRaisesReportsLuasError) {
  const std::vector<ConfigIssue> issues = issues_of(kVtrace, {"optimizer.lr=ms.linear { from = 1 }"});
  ASSERT_EQ(issues.size(), 1u) << joined(issues);
  EXPECT_EQ(issues[0].file, "command line");
  EXPECT_NE(issues[0].message.find("ms.linear:"), std::string::npos) << issues[0].message;
}

TEST(LuaOverrides, PlainTextThatIsNoLuaKeepsItsOwnError) {
  const std::vector<ConfigIssue> issues = issues_of(kVtrace, {"optimizer.lr=fast"});
  ASSERT_EQ(issues.size(), 1u) << joined(issues);
  EXPECT_NE(issues[0].message.find("fast"), std::string::npos) << issues[0].message;
  EXPECT_EQ(issues[0].message.find("Lua"), std::string::npos) << issues[0].message;
}

TEST(LuaOverrides, AnExpressionRunsUnderTheScriptsLimits) {
  const std::vector<ConfigIssue> issues = issues_of(kVtrace, {"optimizer.lr=(function() while true do end end)()"});
  ASSERT_EQ(issues.size(), 1u) << joined(issues);
  EXPECT_NE(issues[0].message.find("ran for more than"), std::string::npos) << issues[0].message;
}

TEST(LuaOverrides, AnExpressionCannotLeaveTheSandbox) {
  const std::vector<ConfigIssue> issues = issues_of(kVtrace, {"optimizer.lr=os.execute('true')"});
  ASSERT_EQ(issues.size(), 1u) << joined(issues);
  EXPECT_NE(issues[0].message.find("disabled in experiment scripts"), std::string::npos) << issues[0].message;
}

TEST(LuaOverrides, AModelGivenAsLayersRefusesHiddenAndActivation) {
  for (const std::string& o : {std::string("model.hidden=64"), std::string("model.activation=relu")}) {
    SCOPED_TRACE(o);
    const std::vector<ConfigIssue> issues = issues_of(kLayers, {o});
    ASSERT_EQ(issues.size(), 1u) << joined(issues);
    EXPECT_EQ(issues[0].file, "command line");
    EXPECT_EQ(issues[0].field, o.substr(0, o.find('=')));
    EXPECT_NE(issues[0].message.find("the override " + issues[0].field), std::string::npos) << issues[0].message;
    EXPECT_NE(issues[0].message.find("the model is given as ms.layers"), std::string::npos) << issues[0].message;
  }
  // The same override on an MLP, or with the model switched back to one, is taken.
  EXPECT_EQ(load_experiment(kVtrace, {"model.hidden=32"}).model.hidden, std::vector<int64_t>{32});
  EXPECT_EQ(load_experiment(kLayers, {"model.kind=mlp", "model.layers={}", "model.hidden=32"}).model.hidden,
            std::vector<int64_t>{32});
}

}  // namespace
}  // namespace moonseed::scripts
