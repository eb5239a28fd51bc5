// Schedules written in experiment scripts: the DSL helpers, plain schedule
// tables, Lua functions of progress, their errors, and their round trip
// through config.lua.
#include <cmath>
#include <ostream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "engine/config/schedule_text.h"
#include "engine/config/schedule.h"
#include "engine/vtrace/config/vtrace_config.h"
#include "scripts/api/lua_schedules.h"
#include "engine/config/schema.h"
#include "scripts/loader/experiment_loader.h"
#include "scripts/state/lua_state.h"
#include "tests/engine/config/all_fields_config.h"
#include "tests/scripts/loader_test_util.h"
#include "tests/scripts/temp_dir.h"

namespace moonseed::engine {
// Readable gtest failures.
void PrintTo(const ScheduledField& f, std::ostream* os) {
  *os << f.path << ": " << engine::schedule_literal(f.schedule);
}
}  // namespace moonseed::engine

namespace moonseed::scripts {
namespace {

using engine::Schedule;
using engine::ScheduledField;
using Kind = Schedule::Kind;
using Axis = Schedule::Axis;
using testing::TempDir;
using testing::issues_of;

Schedule make(Kind kind, Axis axis, std::vector<std::pair<double, double>> points) {
  Schedule s;
  s.kind = kind;
  s.axis = axis;
  s.points = std::move(points);
  return s;
}


// A script whose experiment holds `body` (lines of Lua), after the moonseed require on line 1
// and `return ms.experiment {` on line 2: body line k is file line k + 2.
std::string experiment(const std::string& body) {
  return "local ms = require 'moonseed'\nreturn ms.experiment {\n" + body + "}\n";
}

class Schedules : public ::testing::Test {
 protected:
  engine::ExperimentConfig load(const std::string& body) {
    return load_experiment(dir_.write("exp.lua", experiment(body)));
  }
  std::vector<ConfigIssue> issues(const std::string& body) {
    return issues_of(dir_.write("exp.lua", experiment(body)));
  }
  std::string path() const { return dir_.path() + "/exp.lua"; }

  TempDir dir_;
};

TEST_F(Schedules, LinearHelperLoadsAScheduleAndSetsThePlainValueToItsStart) {
  const engine::ExperimentConfig c = load("  optimizer = { lr = ms.linear { from = 1e-3, to = 0, frames = 5e6 } },\n");
  EXPECT_EQ(c.schedules, (std::vector<ScheduledField>{
                             {"optimizer.lr", make(Kind::kLinear, Axis::kFrames, {{0, 1e-3}, {5e6, 0}})}}));
  EXPECT_EQ(c.optimizer.lr, 1e-3);
}

TEST_F(Schedules, CosineHelperOverProgressLoadsOnTheProgressAxis) {
  const engine::ExperimentConfig c = load(
      "  stop = { frames = 1000000 },\n"
      "  vtrace = { entropy_cost = ms.cosine { from = 0.01, to = 0.001, progress = 1 } },\n");
  EXPECT_EQ(c.schedules, (std::vector<ScheduledField>{{"vtrace.entropy_cost",
                                                       make(Kind::kCosine, Axis::kProgress, {{0, 0.01}, {1, 0.001}})}}));
  EXPECT_EQ(c.section<engine::VTraceConfig>().entropy_cost, 0.01);
}

TEST_F(Schedules, StepHelperStartsWithTheFirstValueAndChangesAtEachBoundary) {
  const engine::ExperimentConfig c =
      load("  optimizer = { lr = ms.step { values = {1e-3, 3e-4, 1e-4}, at = {1e6, 2e6} } },\n");
  EXPECT_EQ(c.schedules, (std::vector<ScheduledField>{
                             {"optimizer.lr", make(Kind::kStep, Axis::kFrames, {{0, 1e-3}, {1e6, 3e-4}, {2e6, 1e-4}})}}));
}

TEST_F(Schedules, PiecewiseHelperTakesPointsOverFramesOrProgress) {
  const engine::ExperimentConfig c = load(
      "  stop = { frames = 1000 },\n"
      "  optimizer = { lr = ms.piecewise { {0, 1e-3}, {1e6, 5e-4}, {2e6, 1e-4} } },\n"
      "  vtrace = { gamma = ms.piecewise { {0, 0.9}, {0.5, 0.99}, progress = true } },\n");
  EXPECT_EQ(c.schedules,
            (std::vector<ScheduledField>{
                {"optimizer.lr", make(Kind::kPiecewise, Axis::kFrames, {{0, 1e-3}, {1e6, 5e-4}, {2e6, 1e-4}})},
                {"vtrace.gamma", make(Kind::kPiecewise, Axis::kProgress, {{0, 0.9}, {0.5, 0.99}})}}))
      << "sorted by path";
}

TEST_F(Schedules, ConstantHelperLoadsAOnePointSchedule) {
  const engine::ExperimentConfig c = load("  optimizer = { lr = ms.constant(3e-4) },\n");
  EXPECT_EQ(c.schedules, (std::vector<ScheduledField>{
                             {"optimizer.lr", make(Kind::kConstant, Axis::kFrames, {{0, 3e-4}})}}));
  EXPECT_EQ(c.optimizer.lr, 3e-4);
}

TEST_F(Schedules, PlainScheduleTableLoadsWithoutTheHelpers) {
  const std::string path = dir_.write(
      "plain.lua", "return { vtrace = { baseline_cost = { schedule = 'linear', points = {{0, 0.5}, {100, 0.25}} } } }\n");
  const engine::ExperimentConfig c = load_experiment(path);
  EXPECT_EQ(c.schedules, (std::vector<ScheduledField>{{"vtrace.baseline_cost",
                                                       make(Kind::kLinear, Axis::kFrames, {{0, 0.5}, {100, 0.25}})}}))
      << "axis defaults to frames";
}

TEST_F(Schedules, LuaFunctionOfProgressIsSampledAtLoadTime) {
  const engine::ExperimentConfig c = load(
      "  stop = { frames = 1000 },\n"
      "  optimizer = { lr = function(progress) return 1e-3 * (1 - progress) ^ 2 + 1e-6 end },\n");
  ASSERT_EQ(c.schedules.size(), 1u);
  const Schedule& s = c.schedules[0].schedule;
  EXPECT_EQ(s.kind, Kind::kPiecewise);
  EXPECT_EQ(s.axis, Axis::kProgress);
  ASSERT_EQ(s.points.size(), static_cast<size_t>(kFunctionSamples));
  auto f = [](double p) { return 1e-3 * std::pow(1 - p, 2) + 1e-6; };
  for (int k : {0, 1, 64, 128, 200, 256}) {
    const double p = k / 256.0;
    EXPECT_DOUBLE_EQ(s.at(p), f(p)) << "at sample " << k;
  }
  // Between samples: linear interpolation, close to the function.
  EXPECT_NEAR(s.at(0.3), f(0.3), 1e-8);
  EXPECT_EQ(c.optimizer.lr, f(0));
}

TEST_F(Schedules, ScheduleFromARecipePointsItsErrorsAtTheRecipe) {
  dir_.write("presets.lua",
             "local ms = require 'moonseed'\n"
             "local M = {}\n"
             "function M.decay()\n"
             "  local s = ms.linear { from = 2, to = 0, frames = 10 }\n"  // 4
             "  return s\n"
             "end\n"
             "return M\n");
  const auto found = issues("  optimizer = { lr = require('presets').decay() },\n");
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].file, dir_.path() + "/presets.lua");
  EXPECT_EQ(found[0].line, 4);
  EXPECT_EQ(found[0].message, "schedule point 1 (frames 0): expected a number in (0, 1], got 2");
}

TEST_F(Schedules, ScheduleOnARestartOnlyFieldIsAnError) {
  const auto found = issues("  optimizer = {\n    eps = ms.linear { from = 1e-3, to = 1e-5, frames = 100 },\n  },\n");
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].line, 4);
  EXPECT_EQ(found[0].field, "optimizer.eps");
  EXPECT_EQ(found[0].message,
            "cannot follow a schedule: it is restart-only (a running experiment cannot change it); give it a "
            "number, got table");
}

TEST_F(Schedules, ScheduleOnAFieldThatIsNotANumberIsAnError) {
  const auto found = issues(
      "  learner = { batch = ms.constant(4) },\n"
      "  model = { activation = function(p) return 'tanh' end },\n");
  ASSERT_EQ(found.size(), 2u);
  EXPECT_EQ(found[0].str(), path() + ":3: learner.batch: cannot follow a schedule: it is not a number field "
                                     "(it is an integer), got table");
  EXPECT_EQ(found[1].field, "model.activation");
  EXPECT_NE(found[1].message.find("not a number field (it is a string)"), std::string::npos) << found[1].message;
}

TEST_F(Schedules, ValueOutOfTheFieldsRangeNamesTheFieldAndTheValue) {
  const auto found = issues("  vtrace = {\n    gamma = ms.linear { from = 0.99, to = 1.5, frames = 1e6 },\n  },\n");
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].str(),
            path() + ":4: vtrace.gamma: schedule point 2 (frames 1000000): expected a number in [0, 1], got 1.5");
}

TEST_F(Schedules, LearningRateMayDecayToZeroButNotStartThere) {
  EXPECT_NO_THROW(load("  optimizer = { lr = ms.linear { from = 1e-3, to = 0, frames = 100 } },\n"));
  const auto found = issues("  optimizer = { lr = ms.linear { from = 0, to = 1e-3, frames = 100 } },\n");
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].message, "schedule point 1 (frames 0): expected a number in (0, 1], got 0");
}

TEST_F(Schedules, ProgressScheduleWithoutStopFramesIsAnError) {
  const auto found = issues("  optimizer = {\n    lr = ms.linear { from = 1e-3, to = 1e-4, progress = 1 },\n  },\n");
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].str(), path() + ":4: optimizer.lr: follows a schedule over progress (frames / stop.frames), "
                                     "which needs stop.frames > 0; stop.frames is 0");
}

TEST_F(Schedules, ErrorInsideAFunctionNamesTheFunctionsFileAndLine) {
  const auto found = issues(
      "  stop = { frames = 100 },\n"
      "  optimizer = { lr = function(p)\n"         // 4
      "    if p > 0.5 then error('too far') end\n"  // 5
      "    return 1e-3\n"
      "  end },\n");
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].file, path());
  EXPECT_EQ(found[0].line, 4);
  EXPECT_EQ(found[0].field, "optimizer.lr");
  EXPECT_EQ(found[0].message, "schedule function at progress 0.50390625 failed: " + path() + ":5: too far");
}

TEST_F(Schedules, FunctionThatReturnsANonNumberIsAnError) {
  const auto found = issues("  stop = { frames = 100 },\n  optimizer = { lr = function(p) return 'fast' end },\n");
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].line, 4);
  EXPECT_EQ(found[0].message, "schedule function at progress 0 returned string \"fast\"; expected a number");
}

TEST_F(Schedules, PiecewisePointsOutOfOrderAreAnError) {
  const auto found = issues("  optimizer = {\n    lr = ms.piecewise { {0, 1e-3}, {2e6, 1e-4}, {1e6, 5e-4} },\n  },\n");
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].str(), path() + ":4: optimizer.lr: points must have strictly increasing x: point 3 "
                                     "(x = 1000000) follows x = 2000000");
}

TEST_F(Schedules, HelperWithAMisspelledArgumentIsAScriptErrorAtItsLine) {
  try {
    load("  optimizer = {\n    lr = ms.linear { from = 1e-3, too = 0, frames = 100 },\n  },\n");
    FAIL() << "loaded a schedule with a misspelled argument";
  } catch (const ScriptError& e) {
    EXPECT_NE(std::string(e.what()).find(path() + ":4: ms.linear: unknown key 'too'"), std::string::npos) << e.what();
  }
}

TEST_F(Schedules, StepHelperNeedsOneValueMoreThanBoundaries) {
  EXPECT_THROW(load("  optimizer = { lr = ms.step { values = {1e-3, 1e-4}, at = {1e6, 2e6} } },\n"), ScriptError);
}

TEST_F(Schedules, PlainTableWithAnUnknownKindSuggestsTheClosest) {
  const std::string path = dir_.write("plain.lua", "return { optimizer = { lr = { schedule = 'linaer', points = {{0, 1}} } } }\n");
  const auto found = issues_of(path);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_NE(found[0].message.find("did you mean \"linear\"?"), std::string::npos) << found[0].message;
}

TEST_F(Schedules, TableWithoutAScheduleKeyOnANumberFieldIsAnError) {
  const std::string path = dir_.write("plain.lua", "return { optimizer = { lr = { from = 1, to = 0 } } }\n");
  const auto found = issues_of(path);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].field, "optimizer.lr");
}

TEST_F(Schedules, CommandLineOverrideReplacesTheScheduleByAConstant) {
  const std::string path = dir_.write("exp.lua", experiment("  optimizer = { lr = ms.linear { from = 1e-3, to = 0, frames = 100 } },\n"));
  const engine::ExperimentConfig c = load_experiment(path, {"optimizer.lr=3e-4"});
  EXPECT_TRUE(c.schedules.empty());
  EXPECT_EQ(c.optimizer.lr, 3e-4);
}

TEST_F(Schedules, RecipeScheduleIsInheritedWholeAndReplacedWholeByAChildsNumber) {
  dir_.write("decay.lua",
             "local ms = require 'moonseed'\n"
             "return { optimizer = { lr = ms.linear { from = 1e-3, to = 0, frames = 100 } } }\n");
  const engine::ExperimentConfig inherited = load("  extends = 'decay',\n  optimizer = { max_grad_norm = 1 },\n");
  EXPECT_EQ(inherited.schedules, (std::vector<ScheduledField>{
                                     {"optimizer.lr", make(Kind::kLinear, Axis::kFrames, {{0, 1e-3}, {100, 0}})}}));
  const engine::ExperimentConfig replaced = load("  extends = 'decay',\n  optimizer = { lr = 3e-4 },\n");
  EXPECT_TRUE(replaced.schedules.empty());
  EXPECT_EQ(replaced.optimizer.lr, 3e-4);
}

engine::ExperimentConfig config_with_every_kind_of_schedule() {
  engine::ExperimentConfig c = test::config_with_every_field_changed();
  c.schedules = {
      {"checkpoint.interval_s", make(Kind::kConstant, Axis::kFrames, {{0, 120}})},
      {"optimizer.lr", make(Kind::kLinear, Axis::kFrames, {{0, 0.1 * 3}, {5e6, 0}})},
      {"vtrace.baseline_cost", make(Kind::kStep, Axis::kProgress, {{0, 0.5}, {0.25, 0.4}, {0.75, 0.1 * 3}})},
      {"vtrace.entropy_cost", make(Kind::kCosine, Axis::kProgress, {{0, 0.01}, {1, 1e-4}})},
      {"vtrace.gamma", make(Kind::kPiecewise, Axis::kFrames, {{1e5, 0.9}, {2e6, 0.99}, {4e6, 0.997}})},
  };
  // A scheduled field holds its value at x = 0, as load_experiment leaves it.
  for (const ScheduledField& s : c.schedules) *engine::schedulable_field(c, s.path) = s.schedule.at(0);
  return c;
}

TEST(ToLuaWithSchedules, RoundTripsEveryKindOfScheduleThroughLoadExperiment) {
  TempDir dir;
  const engine::ExperimentConfig original = config_with_every_kind_of_schedule();
  const std::string path = dir.write("config.lua", to_lua(original));
  const engine::ExperimentConfig loaded = load_experiment(path);
  EXPECT_EQ(loaded.schedules, original.schedules) << to_lua(original);
  EXPECT_EQ(engine::changed_fields(original, loaded), std::vector<std::string>{});
  EXPECT_EQ(to_lua(loaded), to_lua(original));
}

TEST(ToLuaWithSchedules, RoundTripsASampledFunctionExactly) {
  TempDir dir;
  const std::string script = dir.write(
      "exp.lua", "return { stop = { frames = 100 }, vtrace = { entropy_cost = function(p) return 0.01 * math.exp(-3 * p) end } }\n");
  const engine::ExperimentConfig original = load_experiment(script);
  const engine::ExperimentConfig loaded = load_experiment(dir.write("config.lua", to_lua(original)));
  EXPECT_EQ(loaded.schedules, original.schedules);
}

TEST(ChangedFieldsWithSchedules, ReportsAFieldWhoseScheduleChanged) {
  const engine::ExperimentConfig a = config_with_every_kind_of_schedule();
  engine::ExperimentConfig b = a;
  EXPECT_TRUE(engine::changed_fields(a, b).empty());
  b.schedules[1].schedule.points[1].first = 6e6;  // optimizer.lr ends later; same value at 0
  EXPECT_EQ(engine::changed_fields(a, b), std::vector<std::string>{"optimizer.lr"});
}

TEST(ChangedFieldsWithSchedules, ReportsAScheduleReplacedByItsStartValue) {
  const engine::ExperimentConfig a = config_with_every_kind_of_schedule();
  engine::ExperimentConfig b = a;
  b.schedules.erase(b.schedules.begin() + 1);  // optimizer.lr keeps its plain value
  EXPECT_EQ(engine::changed_fields(a, b), std::vector<std::string>{"optimizer.lr"});
}

// Tripwire: the engine's list of schedulable fields is exactly the schema's
// hot number fields, and each pointer is the member the schema reads.
TEST(SchedulableFields, AreExactlyTheSchemasHotNumberFields) {
  for (const engine::FieldSchema& f : engine::config_schema()) {
    engine::ExperimentConfig c;
    double* field = engine::schedulable_field(c, f.path);
    const bool hot_number = f.type == engine::FieldType::kNumber && f.reload == engine::ReloadClass::kHot;
    EXPECT_EQ(field != nullptr, hot_number) << f.path;
    EXPECT_EQ(engine::schedule_refusal(f).empty(), hot_number) << f.path;
    if (field == nullptr) continue;
    const engine::ExperimentConfig before = c;
    *field = 0.125;
    EXPECT_EQ(f.get(c), engine::FieldValue(0.125)) << f.path;
    EXPECT_EQ(engine::changed_fields(before, c), std::vector<std::string>{f.path});
  }
}

TEST(ScheduleText, DescribesShortSchedulesFullyAndLongOnesByTheirEnds) {
  EXPECT_EQ(engine::schedule_text(make(Kind::kLinear, Axis::kFrames, {{0, 0.001}, {5e6, 0}})),
            "linear over frames: (0, 0.001) -> (5000000, 0)");
  EXPECT_EQ(engine::schedule_text(make(Kind::kPiecewise, Axis::kProgress, {{0, 1}, {0.25, 2}, {0.5, 3}, {0.75, 4}, {1, 5}})),
            "piecewise over progress: (0, 1) -> ... -> (1, 5) (5 points)");
}

}  // namespace
}  // namespace moonseed::scripts
