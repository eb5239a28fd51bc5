#include "engine/runtime/sum_tree.h"

#include <cmath>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace moonseed::engine {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// Leaves 1, 0, 3, 2, 0 (capacity 5, not a power of two): total 6; leaf 0 owns
// [0, 1), leaf 2 owns [1, 4), leaf 3 owns [4, 6).
SumTree hand_built() {
  SumTree tree(5);
  tree.set(0, 1.0);
  tree.set(2, 3.0);
  tree.set(3, 2.0);
  return tree;
}

std::string message_of_set(SumTree& tree, int64_t index, double priority) {
  try {
    tree.set(index, priority);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "(no exception)";
}

TEST(SumTreeTest, TotalIsTheSumOfTheLeaves) {
  SumTree tree = hand_built();
  EXPECT_EQ(tree.total(), 6.0);
  EXPECT_EQ(tree.count_set(), 3);
  EXPECT_EQ(tree.get(2), 3.0);
  tree.set(2, 0.5);
  EXPECT_EQ(tree.total(), 3.5);
  tree.set(4, 10.0);
  EXPECT_EQ(tree.total(), 13.5);
  EXPECT_EQ(tree.count_set(), 4);
}

TEST(SumTreeTest, FindReturnsTheLeafWhoseIntervalHoldsTheMass) {
  const SumTree tree = hand_built();
  EXPECT_EQ(tree.find(0.0), 0);
  EXPECT_EQ(tree.find(0.999), 0);
  EXPECT_EQ(tree.find(1.0), 2);  // leaf 1 is 0 and owns nothing
  EXPECT_EQ(tree.find(2.5), 2);
  EXPECT_EQ(tree.find(3.999), 2);
  EXPECT_EQ(tree.find(4.0), 3);
  EXPECT_EQ(tree.find(5.999), 3);
}

TEST(SumTreeTest, FindAtOrPastTheTotalClampsToTheLastNonZeroLeaf) {
  const SumTree tree = hand_built();
  EXPECT_EQ(tree.find(6.0), 3);  // leaf 4 is 0
  EXPECT_EQ(tree.find(100.0), 3);
  EXPECT_EQ(tree.find(kInf), 3);
}

TEST(SumTreeTest, FindNeverReturnsAZeroLeafWhenRoundingLosesMass) {
  // 0.1 + 0.2 rounds up to 0.30000000000000004; mass just below it would
  // leave 0.2 - epsilon after subtracting 0.1 along some paths.
  SumTree tree(4);
  tree.set(0, 0.1);
  tree.set(1, 0.2);
  const double mass = std::nextafter(tree.total(), 0.0);
  const int64_t i = tree.find(mass);
  EXPECT_TRUE(i == 0 || i == 1) << i;
  EXPECT_GT(tree.get(i), 0.0);
}

TEST(SumTreeTest, MinIsOverTheLeavesThatAreSet) {
  SumTree tree = hand_built();
  EXPECT_EQ(tree.min(), 1.0);
  tree.set(0, 0.0);
  EXPECT_EQ(tree.min(), 2.0);
  tree.set(4, 0.25);
  EXPECT_EQ(tree.min(), 0.25);
  tree.clear();
  EXPECT_EQ(tree.min(), kInf);
  EXPECT_EQ(tree.total(), 0.0);
  EXPECT_EQ(tree.count_set(), 0);
}

TEST(SumTreeTest, CapacityOneWorks) {
  SumTree tree(1);
  tree.set(0, 2.0);
  EXPECT_EQ(tree.find(0.0), 0);
  EXPECT_EQ(tree.find(1.9), 0);
  EXPECT_EQ(tree.min(), 2.0);
}

TEST(SumTreeTest, RejectsNegativeAndNonFinitePrioritiesNamingValueAndIndex) {
  SumTree tree(5);
  const std::string negative = message_of_set(tree, 3, -1.5);
  EXPECT_NE(negative.find("-1.5"), std::string::npos) << negative;
  EXPECT_NE(negative.find("index 3"), std::string::npos) << negative;
  const std::string nan = message_of_set(tree, 2, std::nan(""));
  EXPECT_NE(nan.find("nan"), std::string::npos) << nan;
  EXPECT_NE(nan.find("index 2"), std::string::npos) << nan;
  EXPECT_NE(message_of_set(tree, 1, kInf).find("inf"), std::string::npos);
  EXPECT_EQ(tree.total(), 0.0);  // nothing was written
}

TEST(SumTreeTest, RejectsBadIndexCapacityAndMass) {
  SumTree tree = hand_built();
  EXPECT_THROW(tree.set(5, 1.0), std::out_of_range);
  EXPECT_THROW(tree.set(-1, 1.0), std::out_of_range);
  EXPECT_THROW(tree.get(5), std::out_of_range);
  EXPECT_THROW(SumTree(0), std::invalid_argument);
  EXPECT_THROW(tree.find(-0.5), std::invalid_argument);
  EXPECT_THROW(tree.find(std::nan("")), std::invalid_argument);
  EXPECT_THROW(SumTree(3).find(0.0), std::logic_error);
}

TEST(SumTreeTest, TotalStaysExactAfterManyUpdates) {
  SumTree tree(37);
  std::vector<double> leaves(37, 0.0);
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<double> value(0.0, 1000.0);
  for (int i = 0; i < 20000; ++i) {
    const auto k = static_cast<size_t>(rng() % 37);
    leaves[k] = (rng() % 5 == 0) ? 0.0 : value(rng);
    tree.set(static_cast<int64_t>(k), leaves[k]);
  }
  double sum = 0;
  for (double v : leaves) sum += v;
  EXPECT_NEAR(tree.total(), sum, 1e-9 * sum);
}

TEST(SumTreeTest, UniformMassesHitLeavesInProportionToTheirPriorities) {
  const std::vector<double> priorities = {1, 2, 3, 4, 0, 10};  // total 20
  SumTree tree(static_cast<int64_t>(priorities.size()));
  for (size_t i = 0; i < priorities.size(); ++i) tree.set(static_cast<int64_t>(i), priorities[i]);
  constexpr int kDraws = 200000;
  std::vector<int> counts(priorities.size(), 0);
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> mass(0.0, tree.total());
  for (int i = 0; i < kDraws; ++i) ++counts[static_cast<size_t>(tree.find(mass(rng)))];
  EXPECT_EQ(counts[4], 0);
  for (size_t i = 0; i < priorities.size(); ++i) {
    const double p = priorities[i] / 20.0;
    // 5 binomial standard deviations: a false alarm about once in 1.7 million.
    const double tolerance = 5 * std::sqrt(kDraws * p * (1 - p));
    EXPECT_NEAR(counts[i], kDraws * p, tolerance) << "leaf " << i;
  }
}

}  // namespace
}  // namespace moonseed::engine
