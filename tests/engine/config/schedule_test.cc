#include "engine/config/schedule.h"

#include <cmath>
#include <stdexcept>
#include <string>

#include <gtest/gtest.h>

#include "engine/config/experiment_config.h"
#include "engine/vtrace/config/vtrace_config.h"

namespace moonseed::engine {
namespace {

using Kind = Schedule::Kind;
using Axis = Schedule::Axis;

Schedule make(Kind kind, std::vector<std::pair<double, double>> points, Axis axis = Axis::kFrames) {
  Schedule s;
  s.kind = kind;
  s.axis = axis;
  s.points = std::move(points);
  return s;
}

TEST(Schedule, ConstantHasOneValueEverywhere) {
  const Schedule s = make(Kind::kConstant, {{0, 7}});
  EXPECT_EQ(s.at(0), 7);
  EXPECT_EQ(s.at(12345), 7);
  EXPECT_EQ(s.at(1e12), 7);
}

TEST(Schedule, LinearGoesStraightFromStartToEndThenHolds) {
  const Schedule s = make(Kind::kLinear, {{0, 4}, {100, 2}});
  EXPECT_EQ(s.at(0), 4);
  EXPECT_DOUBLE_EQ(s.at(25), 3.5);
  EXPECT_DOUBLE_EQ(s.at(50), 3);
  EXPECT_EQ(s.at(100), 2);
  EXPECT_EQ(s.at(1e9), 2);
}

TEST(Schedule, CosineFollowsHalfACosineThenHolds) {
  const Schedule s = make(Kind::kCosine, {{0, 1}, {100, 0}});
  EXPECT_EQ(s.at(0), 1);
  // 0.5 * (1 + cos(pi / 4)) = 0.5 + sqrt(2) / 4
  EXPECT_DOUBLE_EQ(s.at(25), 0.5 + std::sqrt(2.0) / 4);
  EXPECT_DOUBLE_EQ(s.at(50), 0.5);
  EXPECT_DOUBLE_EQ(s.at(75), 0.5 - std::sqrt(2.0) / 4);
  EXPECT_EQ(s.at(100), 0);
  EXPECT_EQ(s.at(250), 0);
}

TEST(Schedule, CosineAlsoRisesFromALowStart) {
  const Schedule s = make(Kind::kCosine, {{0, 2}, {10, 6}});
  EXPECT_DOUBLE_EQ(s.at(5), 4);
  EXPECT_EQ(s.at(10), 6);
}

TEST(Schedule, StepChangesValueExactlyAtEachBoundary) {
  const Schedule s = make(Kind::kStep, {{0, 3}, {10, 2}, {20, 1}});
  EXPECT_EQ(s.at(0), 3);
  EXPECT_EQ(s.at(std::nextafter(10.0, 0.0)), 3);
  EXPECT_EQ(s.at(10), 2);
  EXPECT_EQ(s.at(15), 2);
  EXPECT_EQ(s.at(std::nextafter(20.0, 0.0)), 2);
  EXPECT_EQ(s.at(20), 1);
  EXPECT_EQ(s.at(1e9), 1);
}

TEST(Schedule, PiecewiseInterpolatesBetweenPointsAndHoldsOutside) {
  const Schedule s = make(Kind::kPiecewise, {{10, 0}, {20, 1}, {40, 0}});
  EXPECT_EQ(s.at(0), 0) << "before the first point: its value";
  EXPECT_DOUBLE_EQ(s.at(15), 0.5);
  EXPECT_EQ(s.at(20), 1);
  EXPECT_DOUBLE_EQ(s.at(25), 0.75);
  EXPECT_EQ(s.at(40), 0);
  EXPECT_EQ(s.at(100), 0);
}

TEST(Schedule, AtWithoutPointsIsALogicError) {
  EXPECT_THROW(Schedule{}.at(0), std::logic_error);
}

TEST(Schedule, EqualityComparesKindAxisAndPoints) {
  const Schedule a = make(Kind::kLinear, {{0, 1}, {10, 0}});
  EXPECT_EQ(a, make(Kind::kLinear, {{0, 1}, {10, 0}}));
  EXPECT_NE(a, make(Kind::kCosine, {{0, 1}, {10, 0}}));
  EXPECT_NE(a, make(Kind::kLinear, {{0, 1}, {10, 0}}, Axis::kProgress));
  EXPECT_NE(a, make(Kind::kLinear, {{0, 1}, {11, 0}}));
}

TEST(ScheduleProblem, AcceptsWellFormedSchedulesOfEveryKind) {
  EXPECT_EQ(schedule_problem(make(Kind::kConstant, {{0, 1}})), "");
  EXPECT_EQ(schedule_problem(make(Kind::kLinear, {{0, 1}, {5, 0}})), "");
  EXPECT_EQ(schedule_problem(make(Kind::kCosine, {{0, 1}, {1, 0}}, Axis::kProgress)), "");
  EXPECT_EQ(schedule_problem(make(Kind::kStep, {{0, 1}, {5, 2}, {9, 3}})), "");
  EXPECT_EQ(schedule_problem(make(Kind::kPiecewise, {{0, 1}})), "");
}

TEST(ScheduleProblem, RejectsPiecewisePointsOutOfOrder) {
  const std::string problem = schedule_problem(make(Kind::kPiecewise, {{0, 1}, {20, 2}, {10, 3}}));
  EXPECT_EQ(problem, "points must have strictly increasing x: point 3 (x = 10) follows x = 20");
}

TEST(ScheduleProblem, RejectsTwoPointsAtTheSameX) {
  EXPECT_NE(schedule_problem(make(Kind::kStep, {{0, 1}, {5, 2}, {5, 3}})), "");
}

TEST(ScheduleProblem, RejectsTheWrongNumberOfPointsForTheKind) {
  EXPECT_EQ(schedule_problem(make(Kind::kLinear, {{0, 1}, {5, 2}, {9, 3}})),
            "a linear schedule has 2 points, got 3");
  EXPECT_EQ(schedule_problem(make(Kind::kConstant, {{0, 1}, {5, 2}})), "a constant schedule has 1 point, got 2");
  EXPECT_NE(schedule_problem(make(Kind::kPiecewise, {})), "");
}

TEST(ScheduleProblem, RejectsProgressBeyondOneAndNegativeFrames) {
  EXPECT_EQ(schedule_problem(make(Kind::kLinear, {{0, 1}, {5e6, 0}}, Axis::kProgress)),
            "point 2: x = 5000000 is outside [0, 1] (progress)");
  EXPECT_NE(schedule_problem(make(Kind::kPiecewise, {{-1, 1}, {5, 0}})), "");
}

TEST(ScheduleProblem, RejectsValuesThatAreNotFinite) {
  EXPECT_NE(schedule_problem(make(Kind::kPiecewise, {{0, NAN}})), "");
  EXPECT_NE(schedule_problem(make(Kind::kPiecewise, {{0, 1}, {INFINITY, 0}})), "");
}

TEST(SchedulableField, PointsAtTheConfigMemberOfAHotNumber) {
  ExperimentConfig c;
  EXPECT_EQ(schedulable_field(c, "optimizer.lr"), &c.optimizer.lr);
  EXPECT_EQ(schedulable_field(c, "vtrace.entropy_cost"), &c.section<engine::VTraceConfig>().entropy_cost);
}

TEST(SchedulableField, IsNullForRestartFieldsNonNumbersAndUnknownPaths) {
  ExperimentConfig c;
  EXPECT_EQ(schedulable_field(c, "optimizer.eps"), nullptr);
  EXPECT_EQ(schedulable_field(c, "learner.batch"), nullptr);
  EXPECT_EQ(schedulable_field(c, "optimizer"), nullptr);
  EXPECT_EQ(schedulable_field(c, "lr"), nullptr);
}

TEST(FindSchedule, ReturnsTheScheduleOfAFieldOrNull) {
  ExperimentConfig c;
  c.schedules.push_back({"optimizer.lr", make(Kind::kConstant, {{0, 0.5}})});
  ASSERT_NE(find_schedule(c, "optimizer.lr"), nullptr);
  EXPECT_EQ(find_schedule(c, "optimizer.lr")->at(0), 0.5);
  EXPECT_EQ(find_schedule(c, "vtrace.gamma"), nullptr);
}

TEST(ApplySchedules, WritesScheduledFieldsAndLeavesTheOthers) {
  ExperimentConfig c;
  c.schedules.push_back({"optimizer.lr", make(Kind::kLinear, {{0, 1e-3}, {1000, 0}})});
  c.schedules.push_back({"vtrace.entropy_cost", make(Kind::kStep, {{0, 0.01}, {400, 0.001}})});
  const ExperimentConfig before = c;
  apply_schedules(c, 500);
  EXPECT_DOUBLE_EQ(c.optimizer.lr, 5e-4);
  EXPECT_EQ(c.section<engine::VTraceConfig>().entropy_cost, 0.001);
  EXPECT_EQ(c.section<engine::VTraceConfig>().gamma, before.section<engine::VTraceConfig>().gamma);
  EXPECT_EQ(c.section<engine::VTraceConfig>().baseline_cost, before.section<engine::VTraceConfig>().baseline_cost);
  EXPECT_EQ(c.optimizer.max_grad_norm, before.optimizer.max_grad_norm);
  EXPECT_EQ(c.optimizer.eps, before.optimizer.eps);
  EXPECT_EQ(c.schedules, before.schedules);
}

TEST(ApplySchedules, WithoutSchedulesChangesNothing) {
  ExperimentConfig c;
  c.optimizer.lr = 0.25;
  apply_schedules(c, 1e6);
  EXPECT_EQ(c.optimizer.lr, 0.25);
}

TEST(ApplySchedules, ProgressIsFramesOverStopFrames) {
  ExperimentConfig c;
  c.stop.frames = 2000;
  c.schedules.push_back({"optimizer.lr", make(Kind::kLinear, {{0, 1}, {1, 0}}, Axis::kProgress)});
  apply_schedules(c, 500);
  EXPECT_DOUBLE_EQ(c.optimizer.lr, 0.75);
  apply_schedules(c, 2000);
  EXPECT_EQ(c.optimizer.lr, 0);
  apply_schedules(c, 3000);
  EXPECT_EQ(c.optimizer.lr, 0) << "held after stop.frames";
}

TEST(ApplySchedules, ProgressScheduleWithoutStopFramesIsAnInvalidArgument) {
  ExperimentConfig c;
  c.schedules.push_back({"optimizer.lr", make(Kind::kLinear, {{0, 1}, {1, 0}}, Axis::kProgress)});
  EXPECT_THROW(apply_schedules(c, 10), std::invalid_argument);
}

TEST(ApplySchedules, ScheduleOnAFieldThatCannotFollowOneIsAnInvalidArgument) {
  ExperimentConfig c;
  c.schedules.push_back({"optimizer.eps", make(Kind::kConstant, {{0, 1e-5}})});
  EXPECT_THROW(apply_schedules(c, 10), std::invalid_argument);
}

}  // namespace
}  // namespace moonseed::engine
