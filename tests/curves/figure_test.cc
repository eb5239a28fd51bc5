// curves/figure.h: what a figure of learning curves shows before gnuplot sees
// it: ticks and their labels, the names of metrics, time units, smoothing and
// the grid of panels.
#include "curves/figure.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace moonseed::curves {
namespace {

TEST(TickLabel, SiPrefixesFromAThousandWithTheDigitsTheStepNeeds) {
  EXPECT_EQ(tick_label(0, 250000), "0");
  EXPECT_EQ(tick_label(250000, 250000), "250k");
  EXPECT_EQ(tick_label(1250000, 250000), "1.25M");
  EXPECT_EQ(tick_label(1500000, 500000), "1.5M");
  EXPECT_EQ(tick_label(2000000, 500000), "2M");
  EXPECT_EQ(tick_label(2e9, 1e9), "2G");
  EXPECT_EQ(tick_label(-150, 50), "-150");
  EXPECT_EQ(tick_label(0.25, 0.25), "0.25");
  EXPECT_EQ(tick_label(0.5, 0.25), "0.5");
  EXPECT_EQ(tick_label(2.5e-4, 5e-5), "2.5e-4");
  EXPECT_EQ(tick_label(3e-4, 1e-4), "3e-4");
  // Never 1e+06 beside 200000: the format of the old figures.
  EXPECT_EQ(tick_label(1000000, 200000), "1M");
  EXPECT_EQ(tick_label(200000, 200000), "200k");
}

TEST(NiceTicks, AFramesAxisEndsAtItsLastPointWithOneFormat) {
  const Ticks t = nice_ticks(0, 366954, 6, /*tight=*/true);
  EXPECT_EQ(t.low, 0);
  EXPECT_EQ(t.high, 366954);
  ASSERT_GE(t.at.size(), 4u);
  ASSERT_LE(t.at.size(), 8u);
  for (size_t k = 0; k < t.at.size(); ++k) {
    EXPECT_LE(t.at[k], 366954);
    if (k > 0) {
      EXPECT_EQ(t.labels[k].back(), 'k') << t.labels[k];
    }
  }
  EXPECT_EQ(t.labels[0], "0");
}

TEST(NiceTicks, AReturnAxisWidensToTheTicksAroundTheData) {
  const Ticks t = nice_ticks(8.5, 497, 6, /*tight=*/false);
  EXPECT_EQ(t.labels, (std::vector<std::string>{"0", "100", "200", "300", "400", "500"}));
  EXPECT_EQ(t.low, 0);
  EXPECT_EQ(t.high, 500);
  const Ticks negative = nice_ticks(-1.3, 0.9, 6, false);
  EXPECT_LE(negative.low, -1.3);
  EXPECT_GE(negative.high, 0.9);
  EXPECT_EQ(negative.at.front(), negative.low);
  EXPECT_EQ(negative.at.back(), negative.high);
  // Below 10^4 no prefix: 800 beside 1000, not beside 1k.
  EXPECT_EQ(nice_ticks(75, 905, 6, false).labels, (std::vector<std::string>{"0", "200", "400", "600", "800", "1000"}));
  // A short span counts ticks nearest the target: 0 to 2.8 s in halves, not 0, 1, 2.
  EXPECT_EQ(nice_ticks(0, 2.8, 6, true).labels, (std::vector<std::string>{"0", "0.5", "1", "1.5", "2", "2.5"}));
}

TEST(NiceTicks, AFlatSeriesGetsARangeAroundItsValue) {
  const Ticks t = nice_ticks(500, 500, 6, true);
  EXPECT_LT(t.low, 500);
  EXPECT_GT(t.high, 500);
  EXPECT_GE(t.at.size(), 2u);
  const Ticks zero = nice_ticks(0, 0);
  EXPECT_LT(zero.low, 0);
  EXPECT_GT(zero.high, 0);
}

TEST(MetricLabel, NamesFromTheMetricsPageAndTheKeyOtherwise) {
  EXPECT_EQ(metric_label("return_mean").title, "return (mean of the last 100 episodes)");
  EXPECT_EQ(metric_label("return_mean").axis, "return");
  EXPECT_EQ(metric_label("fps").axis, "frames / s");
  EXPECT_EQ(metric_label("my_custom_metric").title, "my_custom_metric");
  EXPECT_EQ(metric_label("my_custom_metric").axis, "my_custom_metric");
}

TEST(TimeUnit, SecondsMinutesOrHoursBySpan) {
  EXPECT_EQ(time_unit(300).name, "s");
  EXPECT_EQ(time_unit(3600).name, "min");
  EXPECT_EQ(time_unit(3600).seconds, 60);
  EXPECT_EQ(time_unit(86400).name, "h");
}

TEST(Smooth, EachPointIsTheMeanOfItAndThePointsBefore) {
  const Series s = {{0, 1}, {1, 2}, {2, 3}, {3, 4}};
  const Series two = smooth(s, 2);
  ASSERT_EQ(two.size(), 4u);
  EXPECT_EQ(two[0].y, 1);
  EXPECT_EQ(two[1].y, 1.5);
  EXPECT_EQ(two[2].y, 2.5);
  EXPECT_EQ(two[3].y, 3.5);
  EXPECT_EQ(two[3].x, 3);
  EXPECT_EQ(smooth(s, 1)[2].y, 3);
  EXPECT_EQ(smooth(s, 10)[3].y, 2.5);
}

TEST(GridFor, AMetricARowTheEnvsSideBySideAtMostThree) {
  EXPECT_EQ(grid_for(2, 1).rows, 2);
  EXPECT_EQ(grid_for(2, 1).cols, 1);
  EXPECT_EQ(grid_for(1, 2).cols, 2);
  EXPECT_EQ(grid_for(2, 2).rows, 2);
  EXPECT_EQ(grid_for(1, 4).cols, 3);
  EXPECT_EQ(grid_for(1, 4).rows, 2);
}

}  // namespace
}  // namespace moonseed::curves
