// describe_env: the learner's spec of an env, plugin envs through a real child process
// (`moonseed-actor describe-env`, the binary this build made).
#include "envs/describe.h"

#include <stdlib.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <limits>
#include <string>

#include "envs/env.h"
#include "tests/error_text.h"

namespace moonseed::envs {
namespace {

using test::error_text;

const std::string kProbe = MOONSEED_PROBE_PLUGIN;

class DescribeEnv : public ::testing::Test {
 protected:
  void SetUp() override { ::setenv("MOONSEED_ACTOR_BINARY", MOONSEED_ACTOR_BINARY, 1); }
  void TearDown() override { ::unsetenv("MOONSEED_ACTOR_BINARY"); }
};

void expect_contains(const std::string& text, const std::string& part) {
  EXPECT_NE(text.find(part), std::string::npos) << "\"" << part << "\" not in: " << text;
}

TEST_F(DescribeEnv, ABuiltInEnvIsDescribedInProcess) {
  ::setenv("MOONSEED_ACTOR_BINARY", "/nonexistent/moonseed-actor", 1);  // no child may run
  const EnvDescription d = describe_env("CartPole-v1", {{"max_episode_steps", 100}}, {});
  EXPECT_EQ(d.spec, make_env("CartPole-v1", {{"max_episode_steps", 100}})->spec());
  EXPECT_EQ(d.first_observation.size(), 16u);
}

TEST_F(DescribeEnv, APluginEnvIsDescribedByAChildExactlyAsItLoadsHere) {
  for (const EnvOptions& options : {EnvOptions{{"obs_size", 5}, {"max_episode_steps", 9}},
                                    EnvOptions{{"uint8", 1}, {"box_action", 1}}, EnvOptions{{"unbounded", 1}}}) {
    const EnvFiles files{"", kProbe};
    const EnvDescription d = describe_env("Probe-v0", options, files);
    EXPECT_EQ(d.spec, make_env("Probe-v0", options, files)->spec()) << d.spec.describe();
    EXPECT_EQ(d.first_observation, describe_here("Probe-v0", options, files).first_observation);
  }
}

TEST_F(DescribeEnv, APluginThatCrashesWhileDescribingIsALoadErrorNamingTheFile) {
  const std::string e =
      error_text([] { describe_env("Probe-v0", {{"crash_in_create", 1}}, EnvFiles{"", kProbe}); });
  expect_contains(e, "plugin " + kProbe + ": describing env \"Probe-v0\" in a child process (");
  expect_contains(e, "the plugin crashed: the process died of signal 11 (Segmentation fault)");
  // ... and in which call: the child's last words.
  expect_contains(e, "moonseed: crashed (SIGSEGV) in the call to create of plugin " + kProbe);
}

TEST_F(DescribeEnv, ARefusalIsThePluginsOwnMessage) {
  EXPECT_EQ(error_text([] { describe_env("Probe-v0", {{"speed", 2}}, EnvFiles{"", kProbe}); }),
            "plugin " + kProbe + ": refused to create \"Probe-v0\": unknown option \"speed\"");
  expect_contains(error_text([] { describe_env("Probe-v0", {}, EnvFiles{"", MOONSEED_PROBE_PLUGIN_ABI99}); }),
                  "built for plugin ABI version 99");
}

TEST_F(DescribeEnv, AMissingPluginOrActorBinaryIsNamed) {
  expect_contains(error_text([] { describe_env("Probe-v0", {}, EnvFiles{"", "/nonexistent/libp.so"}); }),
                  "plugin /nonexistent/libp.so: no such file");
  ::setenv("MOONSEED_ACTOR_BINARY", "/nonexistent/moonseed-actor", 1);
  expect_contains(error_text([] { describe_env("Probe-v0", {}, EnvFiles{"", kProbe}); }),
                  "(/nonexistent/moonseed-actor describe-env) failed: cannot run /nonexistent/moonseed-actor");
}

// env.python: the spec from `python3 -m moonseed.actor --describe`, the package found beside the actor
// binary and the module on files.python_path.
EnvFiles python_env(const std::string& factory) {
  EnvFiles files;
  files.python = "numpy_envs:" + factory;
  files.python_path = MOONSEED_SOURCE_DIR "/tests/python";
  return files;
}

class DescribePythonEnv : public DescribeEnv {
 protected:
  void SetUp() override {
    DescribeEnv::SetUp();
    ::setenv("MOONSEED_PYTHON", MOONSEED_PYTHON, 1);
  }
  void TearDown() override {
    ::unsetenv("MOONSEED_PYTHON");
    DescribeEnv::TearDown();
  }
};

TEST_F(DescribePythonEnv, APythonEnvIsDescribedByAPythonChildWithItsSpecAndSeededFirstObservation) {
  const EnvDescription d = describe_env("CartPole-v1", {}, python_env("cartpole"));
  // numpy_envs.cartpole has Moonseed's CartPole-v1 spaces and limit, and draws its seeded reset
  // from the same generator: the learner sees the built-in env's exact description.
  auto own = make_env("CartPole-v1");
  EXPECT_EQ(d.spec, own->spec()) << d.spec.describe();
  std::vector<uint8_t> first(16);
  own->reset(uint64_t{0}, first.data());
  EXPECT_EQ(d.first_observation, first);
}

TEST_F(DescribePythonEnv, WhatTheEnvPrintsToStdoutDoesNotCorruptTheDescription) {
  EXPECT_EQ(describe_env("CartPole-v1", {}, python_env("chatty_cartpole")).spec, make_env("CartPole-v1")->spec());
}

TEST_F(DescribePythonEnv, FailuresNameTheFactoryAndSayWhy) {
  // The factory raises (numpy_envs.cartpole refuses an option it does not take).
  expect_contains(error_text([] { describe_env("X-v0", {{"speed", 2}}, python_env("cartpole")); }),
                  "env.python = \"numpy_envs:cartpole\": moonseed actor: making env 0 failed: TypeError: cartpole() got an "
                  "unexpected keyword argument 'speed'");
  expect_contains(error_text([] { describe_env("X-v0", {}, python_env("no_such_factory")); }),
                  "env.python = \"numpy_envs:no_such_factory\": moonseed actor: --env numpy_envs:no_such_factory: "
                  "module numpy_envs has no no_such_factory");
  expect_contains(error_text([] { describe_env("X-v0", {}, python_env("crashing")); }),
                  "Python crashed: the process died of signal 11 (Segmentation fault)");
  ::setenv("MOONSEED_PYTHON", "/nonexistent/python3", 1);
  expect_contains(error_text([] { describe_env("X-v0", {}, python_env("cartpole")); }),
                  "failed: cannot run /nonexistent/python3: No such file or directory (set MOONSEED_PYTHON to the "
                  "interpreter to use)");
}

TEST_F(DescribePythonEnv, AChildThatTakesTooLongIsKilledAtTheTimeoutWhichTheUserCanRaise) {
  ::setenv("MOONSEED_DESCRIBE_TIMEOUT_S", "1", 1);
  const auto start = std::chrono::steady_clock::now();
  const std::string error = error_text([] { describe_env("X-v0", {}, python_env("sleepy")); });
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ::unsetenv("MOONSEED_DESCRIBE_TIMEOUT_S");
  expect_contains(error, "it did not finish within 1 s (does making or resetting the env loop? "
                         "MOONSEED_DESCRIBE_TIMEOUT_S=SECONDS waits longer)");
  // Not the factory's minute: the child was killed (generous bound: this is not a timing test).
  EXPECT_LT(waited, 50);
  EXPECT_EQ(describe_timeout_s(), kDescribeTimeoutS);
  ::setenv("MOONSEED_DESCRIBE_TIMEOUT_S", "nonsense", 1);
  EXPECT_EQ(describe_timeout_s(), kDescribeTimeoutS);
  ::setenv("MOONSEED_DESCRIBE_TIMEOUT_S", "120", 1);
  EXPECT_EQ(describe_timeout_s(), 120);
  ::unsetenv("MOONSEED_DESCRIBE_TIMEOUT_S");
}

TEST_F(DescribePythonEnv, ThePythonActorCommandPutsThePackageThenTheEnvsPathFirst) {
  ::setenv("PYTHONPATH", "/inherited", 1);
  const PythonCommand c = python_actor_command(python_env("cartpole"));
  ::unsetenv("PYTHONPATH");
  const std::string actor = MOONSEED_ACTOR_BINARY;
  EXPECT_EQ(c.argv, (std::vector<std::string>{MOONSEED_PYTHON, "-m", "moonseed.actor", "--env", "numpy_envs:cartpole"}));
  EXPECT_EQ(c.environment, (std::vector<std::string>{"PYTHONPATH=" + actor.substr(0, actor.rfind('/')) + "/python:" +
                                                     MOONSEED_SOURCE_DIR "/tests/python:/inherited"}));
  ::unsetenv("MOONSEED_PYTHON");
  EXPECT_EQ(python_interpreter(), "/usr/bin/python3");
}

TEST(EnvDescriptionText, RoundTripsEverySpaceAndRefusesOtherText) {
  EnvDescription d;
  d.spec.id = "X-v0";
  d.spec.observation.kind = SpaceKind::kBox;
  d.spec.observation.dtype = DType::kUInt8;
  d.spec.observation.shape = {1, 3};
  const float inf = std::numeric_limits<float>::infinity();
  d.spec.observation.low = {-inf, 0.1f, -3e-9f};
  d.spec.observation.high = {inf, 1.0f / 3, 255};
  d.spec.action = discrete_space(7);
  d.spec.max_episode_steps = 12;
  d.first_observation = {0, 255, 16};
  const EnvDescription back = parse_description(description_text(d), "X-v0");
  EXPECT_EQ(back.spec, d.spec);
  EXPECT_EQ(back.first_observation, d.first_observation);

  d.spec.action = float32_box({-1, -2}, {1, 2});
  d.spec.observation.low.clear();
  d.spec.observation.high.clear();
  EXPECT_EQ(parse_description(description_text(d), "X-v0").spec, d.spec);

  expect_contains(error_text([] { parse_description("hello\n", "X"); }), "not an env description");
  std::string text = description_text(d);
  text.replace(text.find("first_observation ") + 18, 2, "zz");
  expect_contains(error_text([&] { parse_description(text, "X"); }), "is not hexadecimal");
}

TEST(DescribeArguments, RoundTrip) {
  const EnvOptions options = {{"a", 0.1}, {"b", -3}};
  const std::vector<std::string> args = describe_arguments("Id-v0", options, EnvFiles{"/m.xml", "/p.so"});
  ASSERT_EQ(args.front(), "describe-env");
  std::string id;
  EnvOptions back;
  EnvFiles files;
  parse_describe_arguments(std::vector<std::string>(args.begin() + 1, args.end()), &id, &back, &files);
  EXPECT_EQ(id, "Id-v0");
  EXPECT_EQ(back, options);
  EXPECT_EQ(files, (EnvFiles{"/m.xml", "/p.so"}));
}

}  // namespace
}  // namespace moonseed::envs
