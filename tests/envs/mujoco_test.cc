// The MuJoCo env family (envs/mujoco/mujoco_env.h, docs/envs-mujoco.md) on real models: the
// shipped inverted pendulum, its MJCF source file through MuJoCo/Model-v0, and the humanoid of
// Debian's libmujoco-samples.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "base/log.h"
#include "envs/env.h"
#include "envs/mujoco/mujoco_env.h"
#include "envs/numpy_rng.h"
#include "tests/envs/env_test_util.h"

namespace moonseed::envs {
namespace {

using testing::reset_env;
using testing::set_physics;

const std::string kPendulumFile = MOONSEED_SOURCE_DIR "/envs/mujoco/models/inverted_pendulum.xml";
constexpr double kPendulumTimestep = 0.02;  // the file's <option timestep>

std::unique_ptr<Env> model_env(const EnvOptions& options, const std::string& path = kPendulumFile) {
  return make_env(MujocoEnv::kModelId, options, EnvFiles{path});
}

std::string error_of(const std::function<void()>& make) {
  try {
    make();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

testing::Outcome step_values(Env& env, const std::vector<float>& action) {
  testing::Outcome out;
  out.obs.resize(static_cast<size_t>(env.spec().observation.numel()));
  out.result = env.step(action.data(), out.obs.data());
  return out;
}

// A file in a fresh temporary directory, removed with the object.
struct TempFile {
  std::filesystem::path dir, path;
  TempFile(const std::string& name, const std::string& text) {
    dir = std::filesystem::temp_directory_path() / ("moonseed_mujoco_test_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    path = dir / name;
    std::ofstream(path) << text;
  }
  ~TempFile() { std::filesystem::remove_all(dir); }
};

// Runs `f` with the working directory set to a fresh temporary one, restored after.
template <typename F>
void in_temp_directory(const std::filesystem::path& dir, F&& f) {
  const std::filesystem::path before = std::filesystem::current_path();
  std::filesystem::create_directories(dir);
  std::filesystem::current_path(dir);
  f();
  std::filesystem::current_path(before);
}

bool humanoid_installed() { return testing::unavailable_because(MujocoEnv::kHumanoidId).empty(); }

TEST(Mujoco, InvertedPendulumSpecIsQposQvelAndTheCtrlrange) {
  const auto env = make_env(MujocoEnv::kInvertedPendulumId);
  const EnvSpec& spec = env->spec();
  EXPECT_EQ(spec.observation.shape, (std::vector<int64_t>{4}));  // nq 2 + nv 2
  EXPECT_EQ(spec.action.shape, (std::vector<int64_t>{1}));
  EXPECT_EQ(spec.action.low, (std::vector<float>{-3.f}));
  EXPECT_EQ(spec.action.high, (std::vector<float>{3.f}));
  EXPECT_EQ(spec.max_episode_steps, 1000);
}

TEST(Mujoco, ExcludingCurrentPositionsLeavesOutTwoQposValues) {
  EXPECT_EQ(model_env({})->spec().observation.numel(), 4);
  const auto env = model_env({{"exclude_current_positions_from_observation", 1}});
  EXPECT_EQ(env->spec().observation.numel(), 2);
  set_physics(*env, {0.3, 0.1, -0.5, 0.7});
  std::vector<double> state = env->get_state();
  const std::vector<float> obs = step_values(*env, {0.f}).obs;
  state = env->get_state();
  EXPECT_EQ(obs, (std::vector<float>{static_cast<float>(state[2]), static_cast<float>(state[3])}));
}

TEST(Mujoco, SameSeedSameStartAndTheNoiseIsGymnasiumsUniformDraws) {
  const auto a = make_env(MujocoEnv::kInvertedPendulumId);
  const auto b = make_env(MujocoEnv::kInvertedPendulumId);
  const std::vector<float> first = reset_env(*a, 7);
  EXPECT_EQ(reset_env(*b, 7), first);
  EXPECT_NE(reset_env(*b, 8), first);
  // qpos0 is 0: qpos = U(-0.01, 0.01) for nq values, then qvel likewise, in that order.
  Pcg64 rng(7);
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(first[i], static_cast<float>(rng.uniform(-0.01, 0.01))) << i;
    EXPECT_LE(std::abs(first[i]), 0.01f);
  }
}

TEST(Mujoco, ResetNoiseScaleBoundsTheUniformNoiseAndNormalQvelNoiseDrawsOtherValues) {
  const auto wide = model_env({{"reset_noise_scale", 0.5}});
  for (uint64_t seed = 0; seed < 20; ++seed) {
    for (float v : reset_env(*wide, seed)) EXPECT_LE(std::abs(v), 0.5f);
  }
  const auto normal = model_env({{"reset_noise_scale", 0.5}, {"normal_qvel_noise", 1}});
  const std::vector<float> uniform_start = reset_env(*wide, 3);
  const std::vector<float> normal_start = reset_env(*normal, 3);
  EXPECT_EQ(normal_start[0], uniform_start[0]);  // qpos: the same uniform draws
  EXPECT_EQ(normal_start[1], uniform_start[1]);
  EXPECT_NE(normal_start[2], uniform_start[2]);  // qvel: 0.5 * N(0, 1)
  EXPECT_EQ(reset_env(*normal, 3), normal_start);
  // Some of many normal draws leave the uniform's bounds: it is not uniform noise rescaled.
  bool beyond = false;
  for (uint64_t seed = 0; seed < 200 && !beyond; ++seed) {
    const std::vector<float> s = reset_env(*normal, seed);
    beyond = std::abs(s[2]) > 0.5f || std::abs(s[3]) > 0.5f;
  }
  EXPECT_TRUE(beyond);
}

TEST(Mujoco, ActionsAreClippedToTheCtrlrange) {
  const auto env = model_env({{"forward_reward_weight", 0}, {"ctrl_cost_weight", 0.5}});
  set_physics(*env, {0, 0, 0, 0});
  const std::vector<double> start = env->get_state();
  const testing::Outcome at_bound = step_values(*env, {3.f});
  env->set_state(start);
  const testing::Outcome beyond = step_values(*env, {100.f});
  EXPECT_EQ(beyond.obs, at_bound.obs);
  EXPECT_EQ(beyond.result.reward, at_bound.result.reward);
  EXPECT_FLOAT_EQ(beyond.result.reward, -0.5f * 9.f);  // the cost of the clipped control
  env->set_state(start);
  EXPECT_FLOAT_EQ(step_values(*env, {-100.f}).result.reward, -0.5f * 9.f);
}

TEST(Mujoco, CtrlCostIsTheWeightTimesTheSumOfSquaredControls) {
  const auto env = model_env({{"forward_reward_weight", 0}, {"ctrl_cost_weight", 0.25}});
  set_physics(*env, {0, 0, 0, 0});
  EXPECT_EQ(step_values(*env, {2.f}).result.reward, static_cast<float>(-0.25 * 4.0));
}

TEST(Mujoco, ForwardRewardIsTheRootsXVelocityOverTheStep) {
  const auto env = model_env({{"forward_reward_weight", 2}, {"ctrl_cost_weight", 0}, {"frame_skip", 3}});
  set_physics(*env, {0, 0, 0.4, 0, 0, 0, 0, 0});  // qpos, qvel, qacc_warmstart, time, x
  const float reward = step_values(*env, {1.f}).result.reward;
  const std::vector<double> state = env->get_state();
  const double x_before = 0, x_after = state[0];
  EXPECT_EQ(state[7], x_after);  // the state keeps x for the next step
  EXPECT_GT(x_after, x_before);
  EXPECT_EQ(reward, static_cast<float>(2 * (x_after - x_before) / (3 * kPendulumTimestep)));
}

TEST(Mujoco, HealthyRewardIsPaidPerStepAndLeavingTheAngleRangeTerminates) {
  const auto env = make_env(MujocoEnv::kInvertedPendulumId);
  set_physics(*env, {0, 0.05, 0, 0});
  const testing::Outcome upright = step_values(*env, {0.f});
  EXPECT_EQ(upright.result.reward, 1.f);
  EXPECT_FALSE(upright.result.terminated);
  set_physics(*env, {0, 0.5, 0, 0});  // beyond 0.2 rad
  const testing::Outcome fallen = step_values(*env, {0.f});
  EXPECT_TRUE(fallen.result.terminated);
  EXPECT_EQ(fallen.result.reward, 1.f);  // v4's rule: paid while terminating on unhealthy
}

TEST(Mujoco, WithoutTerminateWhenUnhealthyAnUnhealthyStepGoesOnUnpaid) {
  const auto env = make_env(MujocoEnv::kInvertedPendulumId, {{"terminate_when_unhealthy", 0}});
  set_physics(*env, {0, 0.5, 0, 0});
  const testing::Outcome fallen = step_values(*env, {0.f});
  EXPECT_FALSE(fallen.result.terminated);
  EXPECT_EQ(fallen.result.reward, 0.f);
}

TEST(Mujoco, HealthyRangeOptionsAreChecked) {
  EXPECT_TRUE(contains(error_of([] { model_env({{"healthy_z_index", 7}}); }), "healthy_z_index"));
  EXPECT_TRUE(contains(error_of([] { model_env({{"healthy_angle_min", 1}, {"healthy_angle_max", 0}}); }),
                       "healthy_angle_min"));
  EXPECT_TRUE(contains(error_of([] { model_env({{"frame_skip", 0}}); }), "frame_skip must be in [1, 1000]"));
  EXPECT_TRUE(contains(error_of([] { model_env({{"reset_noise_scale", -1}}); }), "reset_noise_scale must be >= 0"));
  EXPECT_TRUE(contains(error_of([] { model_env({{"normal_qvel_noise", 2}}); }), "0 or 1"));
}

TEST(Mujoco, FrameSkipStepsTheSimulationThatManyTimesteps) {
  for (int frame_skip : {1, 2, 5}) {
    const auto env = model_env({{"frame_skip", frame_skip}});
    const auto* mujoco = dynamic_cast<const MujocoEnv*>(env.get());
    ASSERT_NE(mujoco, nullptr);
    EXPECT_DOUBLE_EQ(mujoco->dt(), kPendulumTimestep * frame_skip);
    set_physics(*env, {0, 0, 0, 0});
    const size_t time_index = 2 + 2 * 2;  // after qpos (2), qvel (2), act (0), qacc_warmstart (2)
    const double before = env->get_state()[time_index];
    step_values(*env, {0.f});
    EXPECT_NEAR(env->get_state()[time_index] - before, kPendulumTimestep * frame_skip, 1e-12) << frame_skip;
  }
}

TEST(Mujoco, AMissingModelFileIsAnErrorNamingThePath) {
  const std::string path = "/nonexistent/moonseed/robot.xml";
  const std::string error = error_of([&] { model_env({}, path); });
  EXPECT_TRUE(contains(error, path)) << error;
  EXPECT_TRUE(contains(error, "MuJoCo/Model-v0")) << error;
  EXPECT_TRUE(contains(error, "no such file")) << error;
  EXPECT_TRUE(contains(error, "XML_ERROR_FILE_NOT_FOUND")) << error;  // mj_loadXML's own words
  EXPECT_FALSE(contains(error, "\n")) << error;
}

TEST(Mujoco, AnInvalidModelIsAnErrorWithMujocosOwnMessage) {
  const TempFile file("broken.xml", "<mujoco><worldbody><body><geom type=\"sphere\"></body></worldbody></mujoco>\n");
  const std::string error = error_of([&] { model_env({}, file.path.string()); });
  EXPECT_TRUE(contains(error, file.path.string())) << error;
  EXPECT_TRUE(contains(error, "XML")) << error;  // MuJoCo's parser names the XML error and its line
  const TempFile unknown("unknown.xml", "<mujoco><worldbody><bogus/></worldbody></mujoco>\n");
  const std::string unknown_error = error_of([&] { model_env({}, unknown.path.string()); });
  EXPECT_TRUE(contains(unknown_error, "bogus")) << unknown_error;
  // MuJoCo's message spans lines; the error is one line (a config issue, a log line).
  EXPECT_TRUE(contains(unknown_error, "unrecognized element; Element 'bogus', line 1")) << unknown_error;
  EXPECT_FALSE(contains(error, "\n")) << error;
}

TEST(Mujoco, AModelWithoutActuatorsIsRefused) {
  const TempFile file("still.xml", "<mujoco><worldbody><body><joint type=\"slide\"/><geom size=\"0.1\"/>"
                                   "</body></worldbody></mujoco>\n");
  EXPECT_TRUE(contains(error_of([&] { model_env({}, file.path.string()); }), "no actuator"));
}

// A NaN control makes MuJoCo warn (mjWARN_BADCTRL) and zero the controls. The warning reaches the
// log sink, and MuJoCo writes no MUJOCO_LOG.TXT into the working directory.
TEST(Mujoco, MujocoWarningsGoToTheLogNotToAFile) {
  std::vector<std::string> lines;
  const base::LogSink previous = base::set_log_sink([&](const base::LogLine& line) {
    if (line.component == "mujoco") lines.emplace_back(line.text);
  });
  const TempFile scratch("unused.xml", "");
  in_temp_directory(scratch.dir / "cwd", [&] {
    const auto env = make_env(MujocoEnv::kInvertedPendulumId);
    reset_env(*env, 0);
    step_values(*env, {std::nanf("")});
    EXPECT_FALSE(std::filesystem::exists("MUJOCO_LOG.TXT"));
  });
  base::set_log_sink(previous);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_TRUE(contains(lines[0], "CTRL")) << lines[0];
}

TEST(Mujoco, OnlyModelV0ReadsEnvModelAndItNeedsOne) {
  EXPECT_TRUE(contains(error_of([] { make_env(MujocoEnv::kModelId); }), "env.model"));
  EXPECT_TRUE(contains(error_of([] { make_env("CartPole-v1", {}, EnvFiles{kPendulumFile}); }),
                       "reads no model file"));
}

TEST(Mujoco, HumanoidLoadsWithGymnasiumsHumanoidV4Defaults) {
  if (!humanoid_installed()) {
    GTEST_SKIP() << MujocoEnv::kHumanoidPath << " is missing: apt-get install libmujoco-samples";
  }
  const auto env = make_env(MujocoEnv::kHumanoidId);
  const auto* mujoco = dynamic_cast<const MujocoEnv*>(env.get());
  ASSERT_NE(mujoco, nullptr);
  EXPECT_EQ(mujoco->nq(), 28);
  EXPECT_EQ(mujoco->nv(), 27);
  EXPECT_EQ(env->spec().observation.numel(), 28 - 2 + 27);
  EXPECT_EQ(env->spec().action.low, std::vector<float>(21, -1.f));
  EXPECT_EQ(env->spec().action.high, std::vector<float>(21, 1.f));
  EXPECT_DOUBLE_EQ(mujoco->dt(), 0.005 * 5);
  const std::vector<float> start = reset_env(*env, 0);
  EXPECT_NEAR(start[0], 1.5f, 0.01f);  // qpos[2], the torso's height, observed first
  // Standing still: the healthy reward minus a small control cost, plus the centre of mass's drift.
  const testing::Outcome out = step_values(*env, std::vector<float>(21, 0.1f));
  EXPECT_FALSE(out.result.terminated);
  EXPECT_NEAR(out.result.reward, 5.0 - 0.1 * 21 * 0.01, 0.5);
}

TEST(Mujoco, HumanoidThatFallsTerminatesBelowTheHealthyHeight) {
  if (!humanoid_installed()) {
    GTEST_SKIP() << MujocoEnv::kHumanoidPath << " is missing: apt-get install libmujoco-samples";
  }
  const auto env = make_env(MujocoEnv::kHumanoidId);
  reset_env(*env, 1);
  const std::vector<float> limp(21, 0.f);
  int steps = 0;
  testing::Outcome out;
  do {
    out = step_values(*env, limp);
    ++steps;
  } while (!out.result.terminated && !out.result.truncated);
  EXPECT_TRUE(out.result.terminated) << "after " << steps << " steps";
  EXPECT_LT(env->get_state()[2], 1.0);  // qpos[2] left healthy_z_range (1, 2)
  EXPECT_FALSE(make_env(MujocoEnv::kHumanoidId, {{"terminate_when_unhealthy", 0}}) == nullptr);
}

}  // namespace
}  // namespace moonseed::envs
