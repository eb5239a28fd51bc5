// Env wrappers (envs/wrappers/wrappers.h): each alone and stacked, against lone envs stepped by
// hand; what a failed inner step does through them; the specs they give the learner.
#include "envs/wrappers/wrappers.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "envs/env.h"

namespace moonseed::envs {
namespace {

WrapperSpec wrapper(const std::string& kind, const std::vector<std::pair<std::string, double>>& given = {}) {
  WrapperSpec w;
  const std::string problem = make_wrapper(kind, given, &w);
  if (!problem.empty()) throw std::logic_error(problem);
  return w;
}

std::unique_ptr<EnvSet> array_of(const std::string& id, int n, const EnvOptions& options = {}) {
  std::vector<std::unique_ptr<Env>> envs;
  for (int i = 0; i < n; ++i) envs.push_back(make_env(id, options));
  return std::make_unique<EnvArray>(std::move(envs));
}

// One env's outputs of one call through a set.
struct Out {
  std::vector<uint8_t> obs;
  float reward = 0;
  uint8_t flags = 0;
  float env_reward = 0;  // NaN: no wrapper changed the reward
};

// Drives a set one env call at a time (env 0 unless told), keeping the errors it reports.
class Driver {
 public:
  explicit Driver(std::unique_ptr<EnvSet> set) : set_(std::move(set)) {}
  EnvSet& set() { return *set_; }

  std::vector<Out> run(const std::vector<EnvOp>& ops, const std::vector<int32_t>& actions,
                       const std::vector<uint64_t>* seeds = nullptr, uint32_t begin = 0) {
    const size_t n = ops.size();
    const size_t obs_bytes = static_cast<size_t>(set_->spec().observation.byte_size());
    obs_.resize(std::max(obs_.size(), n * obs_bytes));
    rewards_.assign(n, -99.f);
    flags_.assign(n, 0xEE);
    env_rewards_.assign(n, std::nanf(""));
    EnvSetCall call;
    call.begin = begin;
    call.count = static_cast<uint32_t>(n);
    call.ops = ops.data();
    call.actions = reinterpret_cast<const uint8_t*>(actions.data());
    call.seeds = seeds ? seeds->data() : nullptr;
    call.observations = obs_.data();
    call.rewards = rewards_.data();
    call.flags = flags_.data();
    call.env_rewards = env_rewards_.data();
    set_->run(call, errors);
    std::vector<Out> out(n);
    for (size_t i = 0; i < n; ++i) {
      out[i].obs.assign(obs_.begin() + i * obs_bytes, obs_.begin() + (i + 1) * obs_bytes);
      out[i].reward = rewards_[i];
      out[i].flags = flags_[i];
      out[i].env_reward = env_rewards_[i];
    }
    return out;
  }
  Out reset(uint64_t seed) {
    const std::vector<uint64_t> seeds = {seed};
    return run({EnvOp::kReset}, {0}, &seeds)[0];
  }
  Out step(int32_t action) { return run({EnvOp::kStep}, {action})[0]; }

  std::vector<EnvError> errors;

 private:
  std::unique_ptr<EnvSet> set_;
  std::vector<uint8_t> obs_;
  std::vector<float> rewards_;
  std::vector<uint8_t> flags_;
  std::vector<float> env_rewards_;
};

// A lone env stepped by hand: what the wrappers' results are checked against.
struct Lone {
  explicit Lone(const std::string& id, const EnvOptions& options = {}) : env(make_env(id, options)) {}
  std::vector<uint8_t> reset(uint64_t seed) {
    std::vector<uint8_t> obs(static_cast<size_t>(env->spec().observation.byte_size()));
    env->reset(seed, obs.data());
    return obs;
  }
  Out step(int32_t action) {
    Out out;
    out.obs.resize(static_cast<size_t>(env->spec().observation.byte_size()));
    StepResult r = env->step(&action, out.obs.data());
    out.reward = r.reward;
    out.flags = static_cast<uint8_t>((r.terminated ? kTerminated : 0) | (r.truncated ? kTruncated : 0));
    return out;
  }
  std::unique_ptr<Env> env;
};

std::vector<float> floats(const std::vector<uint8_t>& bytes) {
  std::vector<float> out(bytes.size() / sizeof(float));
  std::memcpy(out.data(), bytes.data(), bytes.size());
  return out;
}

std::vector<uint8_t> concat(const std::vector<std::vector<uint8_t>>& parts) {
  std::vector<uint8_t> out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

// A CartPole whose step number `fail_at` (counted from construction) throws, leaving obs alone.
class Faulty final : public Env {
 public:
  explicit Faulty(int fail_at) : fail_at_(fail_at) {}
  const EnvSpec& spec() const override { return cartpole_->spec(); }
  void reset(std::optional<uint64_t> seed, void* obs) override { cartpole_->reset(seed, obs); }
  StepResult step(const void* action, void* obs) override {
    if (++count_ == fail_at_) throw std::runtime_error("boom at step " + std::to_string(count_));
    return cartpole_->step(action, obs);
  }
  std::vector<double> get_state() const override { return cartpole_->get_state(); }
  void set_state(const std::vector<double>& state) override { cartpole_->set_state(state); }

 private:
  int fail_at_;
  int count_ = 0;
  std::unique_ptr<Env> cartpole_ = make_env("CartPole-v1");
};

// ---- specs ----

TEST(WrappedSpec, FrameStackRepeatsTheLastAxisAndItsBoundsOldestFirst) {
  const EnvSpec base = make_env("CartPole-v1")->spec();
  const EnvSpec s = wrapped_spec(base, {wrapper("frame_stack", {{"n", 3}})});
  EXPECT_EQ(s.observation.shape, (std::vector<int64_t>{12}));
  ASSERT_EQ(s.observation.low.size(), 12u);
  for (size_t j = 0; j < 3; ++j) {
    for (size_t c = 0; c < 4; ++c) EXPECT_EQ(s.observation.high[j * 4 + c], base.observation.high[c]);
  }
  const EnvSpec pixels = make_env("MinAtar/Breakout-v1")->spec();
  const EnvSpec p = wrapped_spec(pixels, {wrapper("frame_stack", {{"n", 4}})});
  EXPECT_EQ(p.observation.shape, (std::vector<int64_t>{10, 10, 16}));
  EXPECT_EQ(p.observation.dtype, DType::kUInt8);
  EXPECT_EQ(p.observation.low.size(), 1600u);
}

TEST(WrappedSpec, TimeLimitActionRepeatAndScalingReshapeTheSpec) {
  const EnvSpec base = make_env("CartPole-v1")->spec();  // 500 steps
  EXPECT_EQ(wrapped_spec(base, {wrapper("time_limit", {{"max_steps", 100}})}).max_episode_steps, 100);
  EXPECT_EQ(wrapped_spec(base, {wrapper("time_limit", {{"max_steps", 900}})}).max_episode_steps, 500);
  EXPECT_EQ(wrapped_spec(base, {wrapper("action_repeat", {{"k", 3}})}).max_episode_steps, 167);
  // Counted in the steps of where it stands: outside the repeat, in outer steps.
  EXPECT_EQ(wrapped_spec(base, {wrapper("action_repeat", {{"k", 3}}), wrapper("time_limit", {{"max_steps", 100}})})
                .max_episode_steps,
            100);
  EXPECT_EQ(wrapped_spec(base, {wrapper("time_limit", {{"max_steps", 100}}), wrapper("action_repeat", {{"k", 3}})})
                .max_episode_steps,
            34);
  const EnvSpec pixels = make_env("MinAtar/Breakout-v1")->spec();
  const EnvSpec scaled = wrapped_spec(pixels, {wrapper("scale_obs", {{"scale", -0.5}, {"offset", 1}})});
  EXPECT_EQ(scaled.observation.dtype, DType::kFloat32);
  EXPECT_EQ(scaled.observation.byte_size(), 400 * 4);
  EXPECT_EQ(scaled.observation.low[0], 0.5f);  // 1 * -0.5 + 1
  EXPECT_EQ(scaled.observation.high[0], 1.f);  // 0 * -0.5 + 1
  // clip_reward and sticky_actions leave the spec alone.
  EXPECT_EQ(wrapped_spec(base, {wrapper("clip_reward"), wrapper("sticky_actions")}), base);
}

TEST(WrappedSpec, AWrapperThatDoesNotFitItsSpecIsRefusedNamingItsPlace) {
  EnvSpec discrete_obs = make_env("CartPole-v1")->spec();
  discrete_obs.observation = discrete_space(5);
  try {
    wrapped_spec(discrete_obs, {wrapper("time_limit", {{"max_steps", 5}}), wrapper("frame_stack")});
    FAIL();
  } catch (const WrapperUnfit& e) {
    EXPECT_EQ(std::string(e.what()).rfind("env.wrappers[2] (frame_stack): needs a box observation, got ", 0), 0u)
        << e.what();
    // Apart, for a config issue whose field names the wrapper (no "env.wrappers: env.wrappers[2]").
    EXPECT_EQ(e.field(), "env.wrappers[2] (frame_stack)");
    EXPECT_EQ(e.why().rfind("needs a box observation, got ", 0), 0u) << e.why();
  }
  WrapperSpec bad = wrapper("frame_stack");
  bad.params[0].second = 65;
  try {
    wrapped_spec(make_env("CartPole-v1")->spec(), {bad});
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "env.wrappers[1] (frame_stack): n must be an integer in [1, 64], got 65");
  }
}

// ---- each wrapper alone ----

TEST(FrameStack, StartsWithTheFirstFrameNTimesThenShiftsOldestFirst) {
  Driver d(wrap(array_of("CartPole-v1", 1), {wrapper("frame_stack", {{"n", 3}})}, 0));
  Lone lone("CartPole-v1");
  const auto o0 = lone.reset(7);
  Out r = d.reset(7);
  EXPECT_EQ(r.obs, concat({o0, o0, o0}));
  EXPECT_EQ(r.flags, kFirst);
  const Out s1 = lone.step(1), s2 = lone.step(0), s3 = lone.step(1);
  EXPECT_EQ(d.step(1).obs, concat({o0, o0, s1.obs}));
  EXPECT_EQ(d.step(0).obs, concat({o0, s1.obs, s2.obs}));
  Out w3 = d.step(1);
  EXPECT_EQ(w3.obs, concat({s1.obs, s2.obs, s3.obs}));
  EXPECT_EQ(w3.reward, 1.f);
  // A reset fills the stack again.
  const auto o1 = lone.reset(8);
  EXPECT_EQ(d.reset(8).obs, concat({o1, o1, o1}));
}

TEST(FrameStack, StacksPixelFramesAlongTheChannelAxis) {
  Driver d(wrap(array_of("MinAtar/Breakout-v1", 1), {wrapper("frame_stack", {{"n", 2}})}, 0));
  Lone lone("MinAtar/Breakout-v1");
  const auto o0 = lone.reset(3);
  d.reset(3);
  const Out s1 = lone.step(2);
  const Out w1 = d.step(2);
  // [10, 10, 4] -> [10, 10, 8]: at each cell, the old frame's 4 channels, then the new one's.
  ASSERT_EQ(w1.obs.size(), 800u);
  for (size_t cell = 0; cell < 100; ++cell) {
    for (size_t c = 0; c < 4; ++c) {
      EXPECT_EQ(w1.obs[cell * 8 + c], o0[cell * 4 + c]);
      EXPECT_EQ(w1.obs[cell * 8 + 4 + c], s1.obs[cell * 4 + c]);
    }
  }
}

TEST(ActionRepeat, StepsKTimesSummingRewardsAndStopsAtTheEpisodesEnd) {
  Driver d(wrap(array_of("CartPole-v1", 1), {wrapper("action_repeat", {{"k", 3}})}, 0));
  Lone lone("CartPole-v1");
  lone.reset(5);
  d.reset(5);
  lone.step(1), lone.step(1);
  const Out third = lone.step(1);
  Out w = d.step(1);
  EXPECT_EQ(w.obs, third.obs);  // float observations: no pooling by default
  EXPECT_EQ(w.reward, 3.f);
  EXPECT_EQ(w.flags, 0);
  // Pushing right until the pole falls: the outer step ends where the inner episode did.
  int inner = 3;
  Out last;
  do {
    last = lone.step(1);
    ++inner;
  } while (!(last.flags & kTerminated));
  int outer_steps = 1;
  Out wl;
  do {
    wl = d.step(1);
    ++outer_steps;
  } while (!(wl.flags & (kTerminated | kTruncated)));
  EXPECT_EQ(outer_steps, (inner + 2) / 3);
  EXPECT_EQ(wl.flags, kTerminated);
  EXPECT_EQ(wl.obs, last.obs);
  EXPECT_EQ(wl.reward, static_cast<float>(inner - (outer_steps - 1) * 3));
}

TEST(ActionRepeat, PoolsTheLastTwoPixelFramesByDefault) {
  Driver d(wrap(array_of("MinAtar/Breakout-v1", 1), {wrapper("action_repeat", {{"k", 3}})}, 0));
  Lone lone("MinAtar/Breakout-v1");
  lone.reset(11);
  d.reset(11);
  for (int step = 0; step < 5; ++step) {
    const Out a = lone.step(1), b = lone.step(1), c = lone.step(1);
    const Out w = d.step(1);
    std::vector<uint8_t> expected(c.obs.size());
    for (size_t x = 0; x < expected.size(); ++x) expected[x] = std::max(b.obs[x], c.obs[x]);
    EXPECT_EQ(w.obs, expected) << "step " << step;
    EXPECT_EQ(w.reward, a.reward + b.reward + c.reward);
    if (c.flags) break;
  }
  // max_pool = 0: the last frame only.
  Driver last(wrap(array_of("MinAtar/Breakout-v1", 1), {wrapper("action_repeat", {{"k", 2}, {"max_pool", 0}})}, 0));
  Lone lone2("MinAtar/Breakout-v1");
  lone2.reset(11);
  last.reset(11);
  lone2.step(1);
  EXPECT_EQ(last.step(1).obs, lone2.step(1).obs);
}

TEST(ActionRepeat, SkipsEnvsWhoseEpisodeEndedEarlierInTheRepeat) {
  // Two envs in one call: env 0 is one step from its time limit, env 1 is not.
  Driver d(wrap(array_of("CartPole-v1", 2, {{"max_episode_steps", 2}}), {wrapper("action_repeat", {{"k", 4}})}, 0));
  const std::vector<uint64_t> seeds = {1, 2};
  d.run({EnvOp::kReset, EnvOp::kReset}, {0, 0}, &seeds);
  const auto out = d.run({EnvOp::kStep, EnvOp::kSkip}, {0, 0});
  EXPECT_EQ(out[0].reward, 2.f);  // two steps, then the limit: not stepped again after it
  EXPECT_EQ(out[0].flags, kTruncated);
  EXPECT_EQ(out[1].reward, -99.f);  // skipped: left alone
  EXPECT_TRUE(d.errors.empty());
}

TEST(TimeLimit, TruncatesAtMaxStepsAndCountsFromEachReset) {
  Driver d(wrap(array_of("CartPole-v1", 1), {wrapper("time_limit", {{"max_steps", 3}})}, 0));
  EXPECT_EQ(d.set().spec().max_episode_steps, 3);
  for (int episode = 0; episode < 2; ++episode) {
    d.reset(static_cast<uint64_t>(episode));
    EXPECT_EQ(d.step(0).flags, 0);
    EXPECT_EQ(d.step(1).flags, 0);
    const Out third = d.step(0);
    EXPECT_EQ(third.flags, kTruncated);
    EXPECT_EQ(third.reward, 1.f);
  }
}

TEST(ClipReward, ClipsStepRewardsToTheBounds) {
  Driver d(wrap(array_of("MountainCar-v0", 1), {wrapper("clip_reward", {{"low", -0.25}, {"high", 0.5}})}, 0));
  EXPECT_EQ(d.reset(1).reward, 0.f);
  EXPECT_EQ(d.step(0).reward, -0.25f);  // MountainCar pays -1 a step
  Driver c(wrap(array_of("CartPole-v1", 1), {wrapper("clip_reward", {{"low", -0.25}, {"high", 0.5}})}, 0));
  c.reset(1);
  EXPECT_EQ(c.step(0).reward, 0.5f);
  Driver defaults(wrap(array_of("CartPole-v1", 1), {wrapper("clip_reward")}, 0));
  defaults.reset(1);
  EXPECT_EQ(defaults.step(0).reward, 1.f);
}

TEST(ClipReward, KeepsTheEnvsOwnRewardForTheReturnsThroughActionRepeat) {
  Driver d(wrap(array_of("CartPole-v1", 1), {wrapper("clip_reward", {{"low", 0}, {"high", 0.5}})}, 0));
  d.reset(1);
  Out s = d.step(0);
  EXPECT_EQ(s.reward, 0.5f);
  EXPECT_EQ(s.env_reward, 1.f);
  // Clipped inside a repeat: the learner trains on 3 x 0.5, the env paid 3.
  Driver inside(wrap(array_of("CartPole-v1", 1),
                     {wrapper("clip_reward", {{"low", 0}, {"high", 0.5}}), wrapper("action_repeat", {{"k", 3}})}, 0));
  inside.reset(1);
  s = inside.step(0);
  EXPECT_EQ(s.reward, 1.5f);
  EXPECT_EQ(s.env_reward, 3.f);
  // Clipped outside it: the sum 3 is clipped to 0.5, the env paid 3.
  Driver outside(wrap(array_of("CartPole-v1", 1),
                      {wrapper("action_repeat", {{"k", 3}}), wrapper("clip_reward", {{"low", 0}, {"high", 0.5}})}, 0));
  outside.reset(1);
  s = outside.step(0);
  EXPECT_EQ(s.reward, 0.5f);
  EXPECT_EQ(s.env_reward, 3.f);
  // Without a clip nothing is written: the rewards are the env's.
  Driver plain(wrap(array_of("CartPole-v1", 1), {wrapper("frame_stack", {{"n", 2}})}, 0));
  plain.reset(1);
  EXPECT_TRUE(std::isnan(plain.step(0).env_reward));
}

TEST(StickyActions, AlwaysStickyRepeatsTheResetsNoOpAndNeverStickyPassesThrough) {
  Driver always(wrap(array_of("CartPole-v1", 1), {wrapper("sticky_actions", {{"p", 1}})}, 0));
  Driver never(wrap(array_of("CartPole-v1", 1), {wrapper("sticky_actions", {{"p", 0}})}, 0));
  Lone zeros("CartPole-v1"), given("CartPole-v1");
  zeros.reset(4), given.reset(4);
  always.reset(4), never.reset(4);
  for (int t = 0; t < 8; ++t) {
    // Asked for 1 every time: the always-sticky env keeps applying the 0 it started with.
    EXPECT_EQ(always.step(1).obs, zeros.step(0).obs) << t;
    EXPECT_EQ(never.step(1).obs, given.step(1).obs) << t;
  }
}

// The actions a sticky CartPole applied, recovered by replaying each step on a lone env.
std::vector<int32_t> applied_actions(uint64_t first_seed, uint64_t reset_seed, int steps) {
  Driver d(wrap(array_of("CartPole-v1", 1), {wrapper("sticky_actions", {{"p", 0.5}})}, first_seed));
  Lone lone("CartPole-v1");
  d.reset(reset_seed);
  lone.reset(reset_seed);
  std::vector<int32_t> applied;
  for (int t = 0; t < steps; ++t) {
    const Out w = d.step(t % 2);
    const std::vector<double> state = lone.env->get_state();
    const Out as_given = lone.step(t % 2);
    if (as_given.obs == w.obs) {
      applied.push_back(t % 2);
    } else {
      lone.env->set_state(state);
      EXPECT_EQ(lone.step(1 - t % 2).obs, w.obs);
      applied.push_back(1 - t % 2);
    }
    if (w.flags) break;
  }
  return applied;
}

TEST(StickyActions, AreReproducibleFromTheResetSeed) {
  const std::vector<int32_t> a = applied_actions(0, 21, 12);
  // The same reset seed gives the same sticky draws, whatever the set's first seed.
  EXPECT_EQ(applied_actions(99, 21, 12), a);
  // Some steps kept the previous action (actions alternate, so a repeat shows).
  int repeats = 0;
  for (size_t t = 1; t < a.size(); ++t) repeats += a[t] == a[t - 1];
  EXPECT_GT(repeats, 0);
  EXPECT_NE(applied_actions(0, 22, 12), a);
}

TEST(ScaleObs, TurnsBytesIntoScaledFloats) {
  Driver d(wrap(array_of("MinAtar/Breakout-v1", 1), {wrapper("scale_obs")}, 0));
  Lone lone("MinAtar/Breakout-v1");
  const auto o0 = lone.reset(2);
  const std::vector<float> f = floats(d.reset(2).obs);
  ASSERT_EQ(f.size(), o0.size());
  int ones = 0;
  for (size_t x = 0; x < f.size(); ++x) {
    EXPECT_EQ(f[x], static_cast<float>(o0[x] * (1.0 / 255.0)));
    ones += o0[x] == 1;
  }
  EXPECT_GT(ones, 0);
  Driver c(wrap(array_of("CartPole-v1", 1), {wrapper("scale_obs", {{"scale", 2}, {"offset", 1}})}, 0));
  Lone cart("CartPole-v1");
  const std::vector<float> raw = floats(cart.reset(2));
  const std::vector<float> scaled = floats(c.reset(2).obs);
  for (size_t x = 0; x < raw.size(); ++x) EXPECT_EQ(scaled[x], static_cast<float>(raw[x] * 2.0 + 1.0));
}

// ---- stacked ----

TEST(Wrappers, StackedInOrderInnermostFirst) {
  // time_limit(3) innermost, then sticky (p 0), action_repeat(2), frame_stack(2) outermost.
  const WrapperList list = {wrapper("time_limit", {{"max_steps", 3}}), wrapper("sticky_actions", {{"p", 0}}),
                            wrapper("action_repeat", {{"k", 2}}), wrapper("frame_stack", {{"n", 2}})};
  Driver d(wrap(array_of("CartPole-v1", 1), list, 0));
  EXPECT_EQ(d.set().spec(), wrapped_spec(make_env("CartPole-v1")->spec(), list));
  EXPECT_EQ(d.set().spec().observation.shape, (std::vector<int64_t>{8}));
  EXPECT_EQ(d.set().spec().max_episode_steps, 2);  // 3 inner steps, in steps of 2
  Lone lone("CartPole-v1");
  const auto o0 = lone.reset(9);
  EXPECT_EQ(d.reset(9).obs, concat({o0, o0}));
  // The repeat applies the outer action twice.
  lone.step(1);
  const Out t2 = lone.step(1);
  const Out w1 = d.step(1);
  EXPECT_EQ(w1.obs, concat({o0, t2.obs}));
  EXPECT_EQ(w1.reward, 2.f);
  EXPECT_EQ(w1.flags, 0);
  // Third inner step hits the inner time limit: the repeat stops after one step.
  const Out t3 = lone.step(0);
  const Out w2 = d.step(0);
  EXPECT_EQ(w2.obs, concat({t2.obs, t3.obs}));
  EXPECT_EQ(w2.reward, 1.f);
  EXPECT_EQ(w2.flags, kTruncated);
}

// ---- failures ----

TEST(Wrappers, AFailedInnerStepEndsOnlyThatEpisodeThroughEveryWrapper) {
  const WrapperList list = {wrapper("sticky_actions", {{"p", 0}}), wrapper("scale_obs", {{"scale", 2}}),
                            wrapper("action_repeat", {{"k", 2}}), wrapper("time_limit", {{"max_steps", 50}}),
                            wrapper("clip_reward"), wrapper("frame_stack", {{"n", 2}})};
  std::vector<std::unique_ptr<Env>> envs;
  envs.push_back(make_env("CartPole-v1"));
  envs.push_back(std::make_unique<Faulty>(4));  // fails in the second repeat of the second outer step
  Driver d(wrap(std::make_unique<EnvArray>(std::move(envs)), list, 0));
  const std::vector<uint64_t> seeds = {1, 2};
  d.run({EnvOp::kReset, EnvOp::kReset}, {0, 0}, &seeds);
  const auto first = d.run({EnvOp::kStep, EnvOp::kStep}, {1, 1});
  ASSERT_TRUE(d.errors.empty());
  const auto second = d.run({EnvOp::kStep, EnvOp::kStep}, {0, 0});
  ASSERT_EQ(d.errors.size(), 1u);  // reported once, by the innermost set
  EXPECT_EQ(d.errors[0].env, 1u);
  EXPECT_EQ(d.errors[0].message, "boom at step 4");
  EXPECT_EQ(second[1].flags, kTruncated);
  EXPECT_EQ(second[1].reward, 0.f);
  EXPECT_EQ(second[1].obs, first[1].obs);  // the outer observation stays the last one
  EXPECT_EQ(second[0].flags, 0);
  EXPECT_EQ(second[0].reward, 1.f);
  // Its next reset starts every wrapper's state afresh: the stack holds the new first frame twice.
  const std::vector<uint64_t> reseed = {3};
  const Out again = d.run({EnvOp::kReset}, {0}, &reseed, 1)[0];
  EXPECT_EQ(again.flags, kFirst);
  const std::vector<float> f = floats(again.obs);
  Lone lone("CartPole-v1");
  const std::vector<float> o = floats(lone.reset(3));
  for (size_t x = 0; x < 4; ++x) {
    EXPECT_EQ(f[x], static_cast<float>(o[x] * 2.0));
    EXPECT_EQ(f[4 + x], f[x]);
  }
  const Out on = d.run({EnvOp::kStep}, {0}, nullptr, 1)[0];
  EXPECT_EQ(on.flags, 0);
  EXPECT_EQ(on.reward, 1.f);  // clipped sum of two steps
}

}  // namespace
}  // namespace moonseed::envs
