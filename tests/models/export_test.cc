// models/export.h against the learner's own nets: each kind of net is built,
// given random weights, run on fixed random inputs, exported, and
// tests/python/export_check.py loads the export with Debian's python3-torch and
// compares its outputs with the net's (docs/export.md).
#include "models/export.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/models/export_check.h"

namespace moonseed::models {
namespace {

namespace fs = std::filesystem;
using testing::run_export_check;
using testing::write_tensors;

std::string temp_dir() {
  std::string pattern = (fs::temp_directory_path() / "moonseed-export-XXXXXX").string();
  return ::mkdtemp(pattern.data());
}

envs::Space box(std::vector<int64_t> shape, envs::DType dtype, float low, float high) {
  envs::Space s;
  s.kind = envs::SpaceKind::kBox;
  s.dtype = dtype;
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  s.shape = std::move(shape);
  s.low.assign(static_cast<size_t>(n), low);
  s.high.assign(static_cast<size_t>(n), high);
  return s;
}

envs::EnvSpec env_of(const std::string& id, envs::Space observation, envs::Space action) {
  envs::EnvSpec spec;
  spec.id = id;
  spec.observation = std::move(observation);
  spec.action = std::move(action);
  return spec;
}

// Every parameter random, biases and log std included, so that none can be mixed up unseen.
void randomize(torch::nn::Module& net) {
  torch::NoGradGuard no_grad;
  for (auto& p : net.parameters()) p.copy_(torch::randn_like(p) * 0.5);
}

torch::Tensor observations(const envs::Space& space, int64_t n) {
  std::vector<int64_t> shape = {n};
  shape.insert(shape.end(), space.shape.begin(), space.shape.end());
  if (space.dtype == envs::DType::kUInt8) {
    return torch::randint(0, static_cast<int64_t>(space.high[0]) + 1, shape, torch::kUInt8);
  }
  return torch::randn(shape) * 2;
}

struct Cases {
  std::string root = temp_dir();
  std::vector<std::string> dirs;

  std::string add(const std::string& name) {
    dirs.push_back(root + "/" + name);
    fs::create_directories(dirs.back());
    return dirs.back();
  }
  ~Cases() {
    std::error_code ec;
    fs::remove_all(root, ec);
  }
};

const ExportOrigin kOrigin{"test-run", "ckpt-7.pt", 7, {}, ""};

void add_policy_case(Cases& cases, const std::string& name, const ModelSpec& model, const envs::EnvSpec& env) {
  PolicyNet net(model, env);
  randomize(*net);
  const torch::Tensor obs = observations(env.observation, 5);
  PolicyOutput out;
  {
    torch::NoGradGuard no_grad;
    out = net->forward(obs);
  }
  const std::string dir = cases.add(name);
  save_exported(export_policy_net(*net, model, env, kOrigin), dir + "/policy.pt");
  std::vector<std::pair<std::string, torch::Tensor>> data = {
      {"obs", obs}, {"out", out.logits_or_mean}, {"value", out.value}};
  if (!net->discrete()) data.emplace_back("log_std", out.log_std[0]);
  write_tensors(dir + "/data.pt", data);
}

// Two steps of a recurrent policy, the state of the first carried into the second.
void add_recurrent_policy_case(Cases& cases, const std::string& name, const ModelSpec& model,
                               const envs::EnvSpec& env) {
  PolicyNet net(model, env);
  randomize(*net);
  const int64_t B = 4;
  const torch::Tensor obs1 = observations(env.observation, B), obs2 = observations(env.observation, B);
  torch::NoGradGuard no_grad;
  const PolicyNetImpl::State s0 = net->initial_state(B);
  const torch::Tensor a1 = net->discrete() ? torch::tensor({-1, 0, 2, 1}, torch::kInt64) : torch::randn({B, net->action_size()});
  const torch::Tensor a2 = net->discrete() ? torch::tensor({1, 2, -1, 0}, torch::kInt64) : torch::randn({B, net->action_size()});
  const torch::Tensor r1 = torch::randn({B}), r2 = torch::randn({B});
  const auto [out1, s1] = net->step(obs1, a1, r1, s0);
  const auto [out2, s2] = net->step(obs2, a2, r2, s1);
  const std::string dir = cases.add(name);
  save_exported(export_policy_net(*net, model, env, kOrigin), dir + "/policy.pt");
  std::vector<std::pair<std::string, torch::Tensor>> data = {
      {"obs1", obs1}, {"obs2", obs2}, {"prev_action1", a1}, {"prev_action2", a2}, {"prev_reward1", r1},
      {"prev_reward2", r2}, {"out1", out1.logits_or_mean}, {"value1", out1.value},
      {"out2", out2.logits_or_mean}, {"value2", out2.value}, {"h0", s0.h}, {"c0", s0.c}, {"h2", s2.h}, {"c2", s2.c}};
  if (!net->discrete()) data.emplace_back("log_std", out1.log_std[0]);
  write_tensors(dir + "/data.pt", data);
}

void add_q_case(Cases& cases, const std::string& name, const QNetSpec& spec, const envs::EnvSpec& env) {
  QNet net(spec, env);
  randomize(*net);
  const int64_t B = 4;
  const torch::Tensor obs1 = observations(env.observation, B), obs2 = observations(env.observation, B);
  // -1: an episode's first step, whose previous action is a zero one-hot.
  const torch::Tensor a1 = torch::tensor({-1, 0, 2, 1}, torch::kInt64), a2 = torch::tensor({1, 2, -1, 0}, torch::kInt64);
  const torch::Tensor r1 = torch::randn({B}), r2 = torch::randn({B});
  torch::NoGradGuard no_grad;
  const QNetImpl::State s0 = net->initial_state(B);
  const auto [q1, s1] = net->step(obs1, a1, r1, s0);
  const auto [q2, s2] = net->step(obs2, a2, r2, s1);
  const std::string dir = cases.add(name);
  save_exported(export_q_net(*net, env, kOrigin), dir + "/policy.pt");
  const torch::Tensor none = torch::zeros({B, 0});
  write_tensors(dir + "/data.pt", {{"obs1", obs1}, {"prev_action1", a1}, {"prev_reward1", r1},
                                   {"obs2", obs2}, {"prev_action2", a2}, {"prev_reward2", r2},
                                   {"q1", q1}, {"q2", q2},
                                   {"h0", s0.h.defined() ? s0.h : none}, {"c0", s0.c.defined() ? s0.c : none},
                                   {"h2", s2.h.defined() ? s2.h : none}, {"c2", s2.c.defined() ? s2.c : none}});
}

TEST(Export, PyTorchComputesWhatTheLearnersNetsComputeForEveryKindOfNet) {
  torch::manual_seed(3);
  Cases cases;
  const envs::Space minatar = box({10, 10, 4}, envs::DType::kUInt8, 0, 1);

  ModelSpec mlp;  // the default: tanh 64 x 64, separate torsos
  add_policy_case(cases, "vtrace_discrete_mlp",
                  mlp, env_of("CartPole-v1", box({4}, envs::DType::kFloat32, -5, 5), envs::discrete_space(2)));

  ModelSpec shared;
  shared.hidden = {16, 8};
  shared.activation = "relu";
  shared.shared_torso = true;
  add_policy_case(cases, "vtrace_box_shared",
                  shared, env_of("Pendulum-v1", box({3}, envs::DType::kFloat32, -8, 8),
                                 box({2}, envs::DType::kFloat32, -2, 2)));

  ModelSpec conv;
  conv.kind = "layers";
  conv.layers = {{"channels_first"}, {"conv2d", 8, 3, 1, 1}, {"relu"},     {"maxpool2d", 0, 2, 2, 0},
                 {"conv2d", 6, 3, 2, 0}, {"elu"},       {"flatten"},  {"linear", 16}, {"tanh"}};
  add_policy_case(cases, "vtrace_conv_uint8", conv, env_of("MinAtar/Breakout-v1", minatar, envs::discrete_space(3)));

  ModelSpec impala;
  impala.kind = "layers";
  impala.layers = {{"impala_block", 4}, {"relu"}, {"flatten"}, {"linear", 8}, {"relu"}};
  add_policy_case(cases, "vtrace_impala_camera",
                  impala, env_of("Camera-v0", box({3, 12, 12}, envs::DType::kUInt8, 0, 255), envs::discrete_space(4)));

  ModelSpec lstm_policy;
  lstm_policy.kind = "layers";
  lstm_policy.layers = {{"channels_first"}, {"conv2d", 4, 3, 1, 0}, {"relu"}, {"flatten"}, {"linear", 8}, {"lstm", 6}};
  add_recurrent_policy_case(cases, "vtrace_lstm_uint8", lstm_policy,
                            env_of("MinAtar/Breakout-v1", minatar, envs::discrete_space(3)));
  ModelSpec lstm_only;
  lstm_only.kind = "layers";
  lstm_only.layers = {{"lstm", 5}};
  add_recurrent_policy_case(cases, "vtrace_lstm_box", lstm_only,
                            env_of("Pendulum-v1", box({3}, envs::DType::kFloat32, -8, 8),
                                   box({2}, envs::DType::kFloat32, -2, 2)));

  QNetSpec recurrent;
  recurrent.torso = {{"linear", 8}, {"relu"}};
  recurrent.lstm = 6;
  recurrent.head_hidden = 5;
  add_q_case(cases, "r2d2_lstm", recurrent,
             env_of("CartPole-v1", box({5}, envs::DType::kFloat32, -5, 5), envs::discrete_space(3)));

  QNetSpec plain;  // feed-forward, one plain linear head, no previous action or reward
  plain.torso = {{"channels_first"}, {"conv2d", 4, 3, 1, 0}, {"relu"}, {"flatten"}};
  plain.lstm = 0;
  plain.head_hidden = 0;
  plain.dueling = false;
  plain.prev_action_reward = false;
  add_q_case(cases, "r2d2_plain_uint8", plain, env_of("MinAtar/Breakout-v1", minatar, envs::discrete_space(3)));

  const testing::CheckResult check = run_export_check(cases.dirs, cases.root + "/check.log");
  EXPECT_EQ(check.exit_code, 0) << check.output;
  for (const std::string& dir : cases.dirs) EXPECT_NE(check.output.find(dir + ": OK"), std::string::npos) << check.output;
}

TEST(Export, TheSpecNamesTheEnvItsWrappersSpacesPreprocessingModelAndCheckpoint) {
  ModelSpec model;
  model.hidden = {4};
  const envs::EnvSpec env = env_of("MinAtar/Breakout-v1", box({10, 10, 4}, envs::DType::kUInt8, 0, 1), envs::discrete_space(3));
  PolicyNet net(model, env);
  ExportOrigin origin = kOrigin;
  origin.env_wrappers.push_back({"frame_stack", {{"n", 4}}});
  origin.env_wrappers.push_back({"scale_obs", {{"scale", 0.5}, {"offset", 0}}});
  const Exported e = export_policy_net(*net, model, env, origin);
  for (const char* part : {"\"algo\": \"vtrace\"", "\"env_id\": \"MinAtar/Breakout-v1\"",
                           "\"env_wrappers\": [{\"kind\": \"frame_stack\", \"n\": 4}, "
                           "{\"kind\": \"scale_obs\", \"scale\": 0.5, \"offset\": 0}]",
                           "\"observation\": {\"kind\": \"box\", \"dtype\": \"uint8\", \"shape\": [10, 10, 4]",
                           "\"action\": {\"kind\": \"discrete\", \"n\": 3", "\"uint8_scale\": 1,",
                           "\"layers\": [\"linear(4)\", \"tanh\"]", "\"outputs\": [\"logits\", \"value\"]",
                           "\"run_id\": \"test-run\"", "\"checkpoint\": \"ckpt-7.pt\"", "\"checkpoint_step\": 7"}) {
    EXPECT_NE(e.spec_json.find(part), std::string::npos) << part << " in\n" << e.spec_json;
  }
}

TEST(Export, AFileThatCannotBeWrittenLeavesNothingBehind) {
  const std::string dir = temp_dir();
  ModelSpec model;
  const envs::EnvSpec env = env_of("CartPole-v1", box({4}, envs::DType::kFloat32, -5, 5), envs::discrete_space(2));
  PolicyNet net(model, env);
  const Exported e = export_policy_net(*net, model, env, kOrigin);
  try {
    save_exported(e, dir + "/missing/policy.pt");
    FAIL() << "saved into a directory that does not exist";
  } catch (const std::runtime_error& error) {
    EXPECT_NE(std::string(error.what()).find(dir + "/missing/policy.pt.partial: No such file or directory"),
              std::string::npos)
        << error.what();
  }
  EXPECT_TRUE(fs::is_empty(dir));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace moonseed::models
