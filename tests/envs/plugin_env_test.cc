// PluginEnv: envs from C plugins (envs/plugin_env.h), loaded for real from the shared libraries
// tests/envs/CMakeLists.txt builds (the probe plugin and its variants, the Catch example).
#include "envs/plugin_env.h"

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "envs/env.h"
#include "envs/env_set.h"
#include "tests/error_text.h"

namespace moonseed::envs {
namespace {

using test::error_text;

const std::string kProbe = MOONSEED_PROBE_PLUGIN;
const std::string kCatch = MOONSEED_CATCH_PLUGIN;

std::unique_ptr<Env> probe(const EnvOptions& options = {}, const std::string& path = kProbe) {
  return make_env("Probe-v0", options, EnvFiles{"", path});
}

std::string probe_error(const EnvOptions& options, const std::string& path = kProbe) {
  return error_text([&] { probe(options, path); });
}

void expect_contains(const std::string& text, const std::string& part) {
  EXPECT_NE(text.find(part), std::string::npos) << "\"" << part << "\" not in: " << text;
}

TEST(PluginEnv, ConvertsAFloatBoxWithBoundsAndADiscreteAction) {
  auto env = probe({{"obs_size", 3}, {"max_episode_steps", 7}});
  const EnvSpec& spec = env->spec();
  EXPECT_EQ(spec.id, "Probe-v0");
  EXPECT_EQ(spec.observation.kind, SpaceKind::kBox);
  EXPECT_EQ(spec.observation.dtype, DType::kFloat32);
  EXPECT_EQ(spec.observation.shape, (std::vector<int64_t>{3}));
  EXPECT_EQ(spec.observation.low, (std::vector<float>{-1, -1, -1}));
  EXPECT_EQ(spec.observation.high, (std::vector<float>{1, 1, 1}));
  EXPECT_EQ(spec.action, discrete_space(2));
  EXPECT_EQ(spec.max_episode_steps, 7);
}

TEST(PluginEnv, ConvertsAUint8BoxOfRankTwoUnboundedBoxesAndABoxAction) {
  auto env = probe({{"uint8", 1}, {"box_action", 1}});
  const EnvSpec& spec = env->spec();
  EXPECT_EQ(spec.observation.dtype, DType::kUInt8);
  EXPECT_EQ(spec.observation.shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(spec.observation.byte_size(), 6);
  EXPECT_EQ(spec.observation.high, std::vector<float>(6, 255.f));
  EXPECT_EQ(spec.action.kind, SpaceKind::kBox);
  EXPECT_EQ(spec.action.shape, (std::vector<int64_t>{2}));
  EXPECT_EQ(spec.action.low, (std::vector<float>{-1, -1}));
  std::vector<uint8_t> obs(6);
  env->reset(uint64_t{1}, obs.data());
  EXPECT_EQ(obs, (std::vector<uint8_t>{0, 1, 2, 3, 4, 5}));
  const float action[2] = {0.25f, 0.f};
  EXPECT_EQ(env->step(action, obs.data()).reward, 0.25f);
  EXPECT_EQ(obs, (std::vector<uint8_t>{1, 2, 3, 4, 5, 6}));

  auto unbounded = probe({{"unbounded", 1}});
  EXPECT_TRUE(unbounded->spec().observation.low.empty());
  EXPECT_TRUE(unbounded->spec().observation.high.empty());
}

TEST(PluginEnv, StepsResetsAndTruncatesAsThePluginSays) {
  auto env = probe({{"max_episode_steps", 2}});
  std::vector<float> obs(4);
  env->reset(uint64_t{3}, obs.data());
  EXPECT_EQ(obs, (std::vector<float>{0, 0.5f, 0.5f, 0.5f}));
  const int32_t one = 1;
  StepResult r = env->step(&one, obs.data());
  EXPECT_EQ(r.reward, 1.f);
  EXPECT_FALSE(r.truncated);
  EXPECT_EQ(obs[0], 0.001f);
  r = env->step(&one, obs.data());
  EXPECT_TRUE(r.truncated);
  EXPECT_FALSE(r.terminated);
}

TEST(PluginEnv, AMissingFileIsNamed) {
  const std::string missing = "/nonexistent/libnothing.so";
  const std::string e = probe_error({}, missing);
  expect_contains(e, "plugin /nonexistent/libnothing.so: no such file");
}

TEST(PluginEnv, AFileThatIsNoLibraryIsNamedWithTheLoadersReason) {
  const std::string path = ::testing::TempDir() + "/not_a_library.so";
  std::FILE* f = std::fopen(path.c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fputs("not ELF\n", f);
  std::fclose(f);
  const std::string e = probe_error({}, path);
  expect_contains(e, "plugin " + path + ": cannot load it: ");
}

TEST(PluginEnv, AnUnreadableFileIsNamed) {
  if (::geteuid() == 0) GTEST_SKIP() << "root reads every file";
  const std::string path = ::testing::TempDir() + "/unreadable.so";
  std::filesystem::copy_file(kProbe, path, std::filesystem::copy_options::overwrite_existing);
  ::chmod(path.c_str(), 0);
  const std::string e = probe_error({}, path);
  expect_contains(e, "plugin " + path + ": cannot read it: Permission denied");
}

TEST(PluginEnv, ALibraryWithoutTheEntryPointIsNamed) {
  const std::string e = probe_error({}, MOONSEED_PROBE_PLUGIN_NO_ENTRY);
  expect_contains(e, std::string("plugin ") + MOONSEED_PROBE_PLUGIN_NO_ENTRY + ": exports no function moonseed_env_plugin");
}

TEST(PluginEnv, AnotherAbiVersionIsRefusedNamingBoth) {
  const std::string e = probe_error({}, MOONSEED_PROBE_PLUGIN_ABI99);
  expect_contains(e, std::string("plugin ") + MOONSEED_PROBE_PLUGIN_ABI99 +
                         ": built for plugin ABI version 99, but this engine speaks version 1");
}

TEST(PluginEnv, AnOptionOrIdThePluginRefusesCarriesItsMessage) {
  expect_contains(probe_error({{"speed", 2}}),
                  "plugin " + kProbe + ": refused to create \"Probe-v0\": unknown option \"speed\"");
  expect_contains(error_text([] { make_env("Other-v0", {}, EnvFiles{"", kProbe}); }),
                  "refused to create \"Other-v0\": unknown env id \"Other-v0\"");
  expect_contains(probe_error({{"obs_size", 0}}), "obs_size must be in [1, 64], got 0");
}

TEST(PluginEnv, AModelFileWithAPluginIsRefused) {
  expect_contains(error_text([] { make_env("Probe-v0", {}, EnvFiles{"/m.xml", kProbe}); }),
                  "env.model is read only by MuJoCo/Model-v0");
}

TEST(PluginEnv, AFailingStepThrowsNamingTheFileAndLeavesTheObservationAlone) {
  auto env = probe({{"fail_step_every", 2}});
  std::vector<float> obs(4);
  env->reset(uint64_t{0}, obs.data());
  const int32_t zero = 0;
  env->step(&zero, obs.data());
  const std::vector<float> before = obs;
  // The plugin scribbles over its buffer before it fails.
  const std::string e = error_text([&] { env->step(&zero, obs.data()); });
  EXPECT_EQ(e, "plugin " + kProbe + ": step failed: step 2 failed on purpose");
  EXPECT_EQ(obs, before);
}

TEST(PluginEnv, AFailingStepEndsOnlyThatEpisodeInAnEnvArray) {
  std::vector<std::unique_ptr<Env>> envs;
  envs.push_back(probe({{"fail_step_every", 2}}));
  envs.push_back(probe());
  EnvArray set(std::move(envs));
  std::vector<EnvOp> ops = {EnvOp::kReset, EnvOp::kReset};
  std::vector<float> obs(8);
  std::vector<float> rewards(2);
  std::vector<uint8_t> flags(2);
  std::vector<int32_t> actions = {1, 1};
  EnvSetCall call{0, 2, ops.data(), reinterpret_cast<const uint8_t*>(actions.data()), nullptr,
                  reinterpret_cast<uint8_t*>(obs.data()), rewards.data(), flags.data()};
  std::vector<EnvError> errors;
  set.run(call, errors);
  ops = {EnvOp::kStep, EnvOp::kStep};
  set.run(call, errors);
  EXPECT_TRUE(errors.empty());
  set.run(call, errors);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].env, 0u);
  EXPECT_EQ(errors[0].message, "plugin " + kProbe + ": step failed: step 2 failed on purpose");
  EXPECT_EQ(flags[0], kTruncated);
  EXPECT_EQ(obs[0], 0.001f);  // the last good observation
  EXPECT_EQ(flags[1], 0);
  EXPECT_EQ(obs[4], 0.002f);
}

TEST(PluginEnv, AStepThatWritesPastItsObservationEndsTheProcessNamingThePluginAndTheCall) {
  std::vector<std::unique_ptr<Env>> envs;
  envs.push_back(probe({{"overflow_at_step", 2}}));
  EnvArray set(std::move(envs));
  // The caller's buffer holds the observation and a float after it that the plugin must not touch.
  std::vector<float> obs(5, 7.f);
  std::vector<float> rewards(1);
  std::vector<uint8_t> flags(1);
  std::vector<EnvOp> ops = {EnvOp::kReset};
  const int32_t action = 1;
  EnvSetCall call{0, 1, ops.data(), reinterpret_cast<const uint8_t*>(&action), nullptr,
                  reinterpret_cast<uint8_t*>(obs.data()), rewards.data(), flags.data()};
  std::vector<EnvError> errors;
  set.run(call, errors);
  ops = {EnvOp::kStep};
  set.run(call, errors);
  // Not a failed step that ends an episode: the process cannot trust its memory any more.
  const std::string e = error_text([&] { set.run(call, errors); });
  EXPECT_TRUE(errors.empty());
  EXPECT_EQ(e, "plugin " + kProbe + ": step wrote past the end of its observation (16 bytes; Probe-v0 obs=box f32[4] "
               "act=discrete(2)): "
               "bytes 16 to 19 after its start were changed; fix the plugin's writes to obs");
  EXPECT_EQ(obs[4], 7.f) << "the caller's memory after the observation is untouched";
}

TEST(PluginEnv, ACrashInAPluginCallSaysWhichCallOfWhichPlugin) {
  // The crash kills the process it happens in: a child's, whose stderr the test reads.
  int err[2];
  ASSERT_EQ(::pipe(err), 0);
  const pid_t child = ::fork();
  if (child == 0) {
    ::dup2(err[1], STDERR_FILENO);
    auto env = probe({{"crash_at_step", 3}});
    std::vector<float> obs(4);
    env->reset(uint64_t{0}, obs.data());
    const int32_t action = 0;
    for (int i = 0; i < 5; ++i) env->step(&action, obs.data());
    ::_exit(0);
  }
  ::close(err[1]);
  std::string said;
  char buffer[512];
  for (ssize_t n; (n = ::read(err[0], buffer, sizeof buffer)) > 0;) said.append(buffer, static_cast<size_t>(n));
  ::close(err[0]);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status)) << status;
  EXPECT_EQ(WTERMSIG(status), SIGSEGV) << "the crash still ends the process by its signal";
  EXPECT_EQ(said, "moonseed: crashed (SIGSEGV) in the call to step of plugin " + kProbe + "\n");
}

TEST(PluginEnv, AFailingResetThrowsWithThePluginsMessage) {
  auto env = probe({{"fail_reset", 1}});
  std::vector<float> obs(4);
  EXPECT_EQ(error_text([&] { env->reset(std::nullopt, obs.data()); }),
            "plugin " + kProbe + ": reset failed: reset refused on purpose");
}

TEST(PluginEnv, StateRoundTripsWhenThePluginHasIt) {
  auto a = make_env("Catch-v0", {{"rows", 6}}, EnvFiles{"", kCatch});
  auto b = make_env("Catch-v0", {{"rows", 6}}, EnvFiles{"", kCatch});
  std::vector<float> obs_a(30), obs_b(30);
  a->reset(uint64_t{42}, obs_a.data());
  b->reset(uint64_t{7}, obs_b.data());
  const int32_t right = 2;
  a->step(&right, obs_a.data());
  b->set_state(a->get_state());
  EXPECT_EQ(a->get_state(), b->get_state());
  EXPECT_EQ(a->get_state().size(), 5u);
  for (int i = 0; i < 4; ++i) {
    const StepResult ra = a->step(&right, obs_a.data());
    const StepResult rb = b->step(&right, obs_b.data());
    EXPECT_EQ(obs_a, obs_b);
    EXPECT_EQ(ra.reward, rb.reward);
    EXPECT_EQ(ra.terminated, rb.terminated);
  }
  expect_contains(error_text([&] { a->set_state({1, 2}); }), "set_state failed: a Catch state has 5 values, got 2");
}

TEST(PluginEnv, StateCallsWithoutStateFunctionsSaySo) {
  auto env = probe({}, MOONSEED_PROBE_PLUGIN_NO_STATE);
  expect_contains(error_text([&] { env->get_state(); }),
                  "get_state: the plugin provides no state functions (get_state and set_state are NULL");
  expect_contains(error_text([&] { env->set_state({}); }), "set_state: the plugin provides no state functions");
}

TEST(PluginEnv, EnvsOfOnePathShareOneLoadedLibrary) {
  EXPECT_EQ(load_plugin(kProbe), load_plugin(kProbe));
}

TEST(PluginEnv, TheCatchExampleCatchesWhenThePaddleFollowsTheBall) {
  auto env = make_env("Catch-v0", {}, EnvFiles{"", kCatch});
  ASSERT_EQ(env->spec().observation.shape, (std::vector<int64_t>{50}));
  std::vector<float> obs(50);
  for (uint64_t seed = 0; seed < 5; ++seed) {
    env->reset(seed, obs.data());
    StepResult r;
    int steps = 0;
    while (!r.terminated) {
      int ball = 0, paddle = 0;
      for (int c = 0; c < 5; ++c) {
        for (int row = 0; row < 9; ++row) {
          if (obs[static_cast<size_t>(row * 5 + c)] == 1.f) ball = c;
        }
        if (obs[static_cast<size_t>(45 + c)] == 1.f) paddle = c;
      }
      const int32_t action = ball < paddle ? 0 : ball > paddle ? 2 : 1;
      r = env->step(&action, obs.data());
      ++steps;
    }
    EXPECT_EQ(steps, 9);
    EXPECT_EQ(r.reward, 1.f);
  }
}

}  // namespace
}  // namespace moonseed::envs
