// config_problems: the rules the loader reports and the learner enforces on
// configs built in C++.
#include "engine/config/config_problems.h"
#include "engine/r2d2/config/r2d2_config.h"

#include <stdexcept>
#include <string>

#include <gtest/gtest.h>

namespace moonseed::engine {
namespace {

TEST(ConfigProblems, TheDefaultsHaveNone) {
  EXPECT_TRUE(config_problems(ExperimentConfig{}).empty());
  EXPECT_NO_THROW(check_config(ExperimentConfig{}));
}

TEST(ConfigProblems, AFieldOutOfItsSchemaRangeIsOne) {
  ExperimentConfig c;
  c.topology.actors = 0;  // the learner once checked this by hand
  const std::vector<ConfigProblem> problems = config_problems(c);
  ASSERT_FALSE(problems.empty());
  EXPECT_EQ(problems[0].fields, std::vector<std::string>{"topology.actors"});
  EXPECT_NE(problems[0].str().find("topology.actors: expected an integer"), std::string::npos) << problems[0].str();
}

TEST(ConfigProblems, ARuleBetweenFieldsBlamesTheFieldToChangeFirst) {
  ExperimentConfig c;
  c.topology.envs_per_actor = 2;
  c.topology.groups_per_actor = 3;
  const std::vector<ConfigProblem> problems = config_problems(c);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0].fields, (std::vector<std::string>{"topology.groups_per_actor", "topology.envs_per_actor"}));
  EXPECT_NE(problems[0].message.find("groups_per_actor (3) exceeds envs_per_actor (2)"), std::string::npos);
}

TEST(ConfigProblems, R2d2RulesApplyOnlyToR2d2) {
  ExperimentConfig c;
  c.section<engine::R2d2Config>().batch = c.section<engine::R2d2Config>().min_fill + 1;
  EXPECT_TRUE(config_problems(c).empty());
  c.algo = "r2d2";
  const std::vector<ConfigProblem> problems = config_problems(c);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0].fields.front(), "r2d2.batch");
}

TEST(ConfigProblems, CheckConfigThrowsNamingEveryProblem) {
  ExperimentConfig c;
  c.topology.actors = 0;
  c.topology.groups_per_actor = c.topology.envs_per_actor + 1;
  try {
    check_config(c);
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    const std::string what = e.what();
    EXPECT_EQ(what.rfind("invalid config: topology.actors: ", 0), 0u) << what;
    EXPECT_NE(what.find("; topology.groups_per_actor: groups_per_actor"), std::string::npos) << what;
  }
}

}  // namespace
}  // namespace moonseed::engine
