#include "engine/learner/log_unrolls.h"

#include <cstring>
#include <fstream>
#include <stdexcept>
#include <vector>

#include <gtest/gtest.h>

#include "tests/explog/explog_test_util.h"
#include "engine/learner/experience_recorder.h"
#include "rpc/messages.h"

namespace moonseed::engine {
namespace {

using explog::testing::TempDir;

constexpr int64_t kT = 4;

envs::EnvSpec spec_of(envs::SpaceKind action_kind) {
  envs::EnvSpec spec;
  spec.id = "Test-v0";
  spec.observation.kind = envs::SpaceKind::kBox;
  spec.observation.shape = {2};
  spec.action.kind = action_kind;
  spec.action.n = 5;
  if (action_kind == envs::SpaceKind::kBox) spec.action.shape = {2};
  return spec;
}

// A copy of everything an unroll holds that training reads.
struct Copy {
  std::vector<uint8_t> observations, actions, terminated, truncated, valid;
  std::vector<float> logp, rewards;
  std::vector<int64_t> versions;
  std::vector<uint64_t> configs;
  explicit Copy(const Unroll& u)
      : observations(u.observations), actions(u.actions), terminated(u.terminated), truncated(u.truncated),
        valid(u.valid), logp(u.behaviour_logp), rewards(u.rewards), versions(u.policy_version),
        configs(u.config_version) {}
  bool operator==(const Copy& o) const {
    return observations == o.observations && actions == o.actions && terminated == o.terminated &&
           truncated == o.truncated && valid == o.valid && logp == o.logp && rewards == o.rewards &&
           versions == o.versions && configs == o.configs;
  }
};

// Plays `steps` steps on each of two slots, interleaved, with episodes that
// end by termination, by truncation and by both, mid-unroll and on step T; records
// every unroll and returns copies of them per slot, in order.
std::vector<std::vector<Copy>> record_streams(const std::string& dir, const envs::EnvSpec& spec, int steps) {
  const UnrollShape shape = UnrollShape::from_spec(spec, kT);
  UnrollStore store(2, UnrollPool::create(shape));
  RecordConfig config;
  config.enabled = true;
  ExperienceRecorder recorder(config, dir, "run", spec, shape, 2);
  std::vector<std::vector<Copy>> out(2);
  std::vector<bool> final_sent(2, true);
  for (int t = 0; t < steps; ++t) {
    for (int slot = 0; slot < 2; ++slot) {
      uint8_t flags = 0;
      if (final_sent[slot]) flags = envs::kFirst;
      else if ((t + slot) % 13 == 12) flags = envs::kTerminated | envs::kTruncated;  // both at once
      else if ((t + slot) % 7 == 6) flags = envs::kTerminated;
      else if ((t + slot) % 11 == 10) flags = envs::kTruncated;
      final_sent[slot] = (flags & (envs::kTerminated | envs::kTruncated)) != 0;
      const float obs[2] = {static_cast<float>(slot), static_cast<float>(t)};
      UnrollPtr done = store.observe(slot, reinterpret_cast<const uint8_t*>(obs), 0.5f * t + slot, flags,
                                     static_cast<uint64_t>(t / 10));
      if (done) {
        out[static_cast<size_t>(slot)].emplace_back(*done);
        recorder.offer(std::move(done));
      }
      const float action[2] = {static_cast<float>(t % 5), -1.f * slot};
      int64_t discrete = t % 5;
      store.act(slot, spec.action.kind == envs::SpaceKind::kBox ? static_cast<const void*>(action) : &discrete,
                -0.1f * static_cast<float>(t % 3), t / 4);
    }
  }
  recorder.close();
  return out;
}

void expect_rebuilt(const envs::EnvSpec& spec) {
  TempDir tmp;
  const std::vector<std::vector<Copy>> original = record_streams(tmp.path(), spec, 60);
  LogUnrolls log(tmp.path(), spec, kT);
  std::vector<std::vector<Copy>> rebuilt(2);
  while (UnrollPtr u = log.next()) {
    ASSERT_GE(u->slot, 0);
    ASSERT_LT(u->slot, 2);
    rebuilt[static_cast<size_t>(u->slot)].emplace_back(*u);
  }
  EXPECT_EQ(log.streams(), 2);
  EXPECT_TRUE(log.problems().empty());
  for (size_t s = 0; s < 2; ++s) {
    // The last unroll's step T was never recorded (it is step 0 of an unroll
    // that did not complete), so the log rebuilds all but the last.
    ASSERT_EQ(rebuilt[s].size() + 1, original[s].size()) << "stream " << s;
    for (size_t i = 0; i < rebuilt[s].size(); ++i) EXPECT_TRUE(rebuilt[s][i] == original[s][i]) << s << " " << i;
  }
  // A second pass gives the same.
  log.rewind();
  int64_t again = 0;
  while (log.next()) ++again;
  EXPECT_EQ(again, static_cast<int64_t>(rebuilt[0].size() + rebuilt[1].size()));
}

TEST(LogUnrolls, RebuildsTheUnrollsTheLearnerBuiltExactlyDiscrete) { expect_rebuilt(spec_of(envs::SpaceKind::kDiscrete)); }

TEST(LogUnrolls, RebuildsTheUnrollsTheLearnerBuiltExactlyBox) { expect_rebuilt(spec_of(envs::SpaceKind::kBox)); }

TEST(LogUnrolls, ARunDirectoryMeansItsExperienceLog) {
  TempDir tmp;
  const envs::EnvSpec spec = spec_of(envs::SpaceKind::kDiscrete);
  record_streams(tmp.sub("experience"), spec, 20);
  LogUnrolls log(tmp.path(), spec, kT);
  EXPECT_EQ(log.directory(), tmp.sub("experience"));
  EXPECT_TRUE(log.next());
}

TEST(LogUnrolls, RefusesALogOfAnotherEnvNamingTheColumn) {
  TempDir tmp;
  record_streams(tmp.path(), spec_of(envs::SpaceKind::kDiscrete), 20);
  envs::EnvSpec other = spec_of(envs::SpaceKind::kDiscrete);
  other.observation.shape = {3};
  try {
    LogUnrolls log(tmp.path(), other, kT);
    FAIL() << "expected an error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("'observation'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("f32[2]"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("f32[3]"), std::string::npos) << e.what();
  }
  EXPECT_THROW(LogUnrolls(tmp.sub("missing"), other, kT), std::invalid_argument);
}

}  // namespace
}  // namespace moonseed::engine
