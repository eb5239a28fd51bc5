// The boundary config's payload: what the learner sends actors in Welcome and
// ConfigUpdate.
#include "engine/config/actor_config.h"

#include <string>

#include <gtest/gtest.h>

namespace moonseed::engine {
namespace {

ActorConfig shaped() {
  ActorConfig c;
  // Newlines and a record-like line inside the text must not confuse the reader.
  c.reward_shaping.source = "function(n, reward)\nreward_shaping.first_line 1\n  reward[0] = 1\nend";
  c.reward_shaping.chunk_name = "@/runs/x/config.lua";
  c.reward_shaping.first_line = 71;
  return c;
}

std::optional<ActorConfig> decoded(const std::string& payload, std::string* error = nullptr) {
  std::string ignored;
  return decode_actor_config(payload, error ? error : &ignored);
}

TEST(ActorConfig, RoundTripsTheRewardShapingFunction) {
  const std::optional<ActorConfig> back = decoded(encode_actor_config(shaped()));
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(*back, shaped());
}

TEST(ActorConfig, AnEmptyPayloadAndAConfigWithoutShapingMeanNoShaping) {
  EXPECT_EQ(decoded(""), ActorConfig{});
  EXPECT_EQ(decoded(encode_actor_config(ActorConfig{})), ActorConfig{});
}

TEST(ActorConfig, IsTakenFromTheExperimentsRewardShaping) {
  ExperimentConfig experiment;
  experiment.reward_shaping = shaped().reward_shaping;
  EXPECT_EQ(actor_config_of(experiment), shaped());
}

TEST(ActorConfig, RecordsOfANewerLearnerAreSkipped) {
  const std::string payload = encode_actor_config(shaped()) + "exploration.epsilon 4\n0.05\n";
  EXPECT_EQ(decoded(payload), shaped());
}

TEST(ActorConfig, AMalformedPayloadIsAnErrorNotAnException) {
  const std::string good = encode_actor_config(shaped());
  std::string error;
  EXPECT_FALSE(decoded("hello", &error).has_value());
  EXPECT_NE(error.find("malformed actor config payload"), std::string::npos) << error;
  EXPECT_FALSE(decoded(good.substr(0, good.size() - 3)).has_value()) << "truncated";
  EXPECT_FALSE(decoded("moonseed-actor-config 1\nreward_shaping.source 99999999999\nx\n").has_value());
  EXPECT_FALSE(decoded("moonseed-actor-config 1\nreward_shaping.source -1\nx\n").has_value());
  EXPECT_FALSE(decoded("moonseed-actor-config 1\nreward_shaping.first_line 1\n0\n").has_value());
  EXPECT_FALSE(decoded("moonseed-actor-config 1\nreward_shaping.source 1\nxy").has_value());
}

}  // namespace
}  // namespace moonseed::engine
