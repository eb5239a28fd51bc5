#include "bench/replay_bench_workload.h"

#include <utility>

#include "engine/learner/optimizer.h"
#include "engine/r2d2/r2d2.h"

namespace moonseed::bench {
namespace {

// One block of g steps of random content; every 37th step ends an episode, so
// the n-step targets and resets have some work.
Block random_block(const Layout& l, int64_t g, int64_t index) {
  std::vector<int64_t> obs_sizes = {g};
  obs_sizes.insert(obs_sizes.end(), l.obs_shape.begin(), l.obs_shape.end());
  Block b;
  b.steps["obs"] = l.obs_dtype == torch::kUInt8 ? torch::randint(0, 256, obs_sizes, torch::kUInt8)
                                                  : torch::randn(obs_sizes);
  b.steps["action"] = torch::randint(0, l.actions, {g}, torch::kInt64);
  b.steps["reward"] = torch::randn({g});
  torch::Tensor terminated = torch::zeros({g}, torch::kUInt8);
  torch::Tensor valid = torch::ones({g}, torch::kUInt8);
  for (int64_t i = 0; i < g; ++i) {
    if ((index * g + i) % 37 == 36) {
      terminated[i] = 1;
      valid[i] = 0;
    }
  }
  b.steps["terminated"] = terminated;
  b.steps["truncated"] = torch::zeros({g}, torch::kUInt8);
  b.steps["valid"] = valid;
  b.starts["h"] = torch::randn({l.lstm});
  b.starts["c"] = torch::randn({l.lstm});
  return b;
}

// The env and the net a layout's Trainer is built for.
envs::EnvSpec env_spec_of(const Layout& l) {
  envs::EnvSpec spec;
  spec.id = "Bench-v0";
  spec.observation.kind = envs::SpaceKind::kBox;
  spec.observation.dtype = l.env_dtype;
  spec.observation.shape = l.obs_shape;
  spec.action.kind = envs::SpaceKind::kDiscrete;
  spec.action.n = l.actions;
  return spec;
}

models::QNetSpec net_spec_of(const Layout& l) {
  if (l.atari) return models::r2d2_atari_spec();
  models::QNetSpec spec;
  spec.torso = {models::LayerSpec{"linear", 64}, models::LayerSpec{"relu"}};
  spec.lstm = l.lstm;
  spec.head_hidden = 64;
  return spec;
}

// step[t - 1] along time, with `first` at t = 0.
torch::Tensor shifted(const torch::Tensor& x, double first) {
  const int64_t L = x.size(0);
  return torch::cat({torch::full_like(x.narrow(0, 0, 1), first), x.narrow(0, 0, L - 1)});
}

}  // namespace

std::vector<engine::ColumnSpec> step_columns(const Layout& l) {
  return {{"obs", l.obs_dtype, l.obs_shape},    {"action", torch::kInt64, {}},
          {"reward", torch::kFloat32, {}},      {"terminated", torch::kUInt8, {}},
          {"truncated", torch::kUInt8, {}},     {"valid", torch::kUInt8, {}}};
}

std::vector<engine::ColumnSpec> start_columns(const Layout& l) {
  return {{"h", torch::kFloat32, {l.lstm}}, {"c", torch::kFloat32, {l.lstm}}};
}

Streams::Streams(engine::SequenceReplay& replay, const Layout& l) : replay_(replay), rng_(7) {
  for (int64_t i = 0; i < kStreams; ++i) assemblers_.emplace_back(replay.config());
  for (int64_t i = 0; i < 8; ++i) blocks_.push_back(random_block(l, replay.block_length(), i));
}

std::optional<std::vector<engine::BlockRef>> Streams::add_block() {
  const Block& b = blocks_[static_cast<size_t>(added_ % static_cast<int64_t>(blocks_.size()))];
  const engine::BlockRef ref = replay_.add_block(b.steps, b.starts);
  auto sequence = assemblers_[static_cast<size_t>(added_ % kStreams)].push(ref);
  ++added_;
  return sequence;
}

void Streams::insert_one() {
  for (;;) {
    if (auto sequence = add_block()) {
      replay_.insert(*sequence, priority_(rng_));
      return;
    }
  }
}

std::vector<std::vector<engine::BlockRef>> Streams::assemble(int64_t n) {
  std::vector<std::vector<engine::BlockRef>> out;
  while (static_cast<int64_t>(out.size()) < n) {
    if (auto sequence = add_block()) out.push_back(std::move(*sequence));
  }
  return out;
}

Trainer::Trainer(const Layout& l) : online_(net_spec_of(l), env_spec_of(l)), target_(online_->clone_net()) {
  engine::OptimizerConfig config;
  config.kind = "adam";
  config.lr = 1e-4;
  config.eps = 1e-3;
  params_ = online_->parameters();
  optimizer_ = engine::make_optimizer(config, params_);
}

std::vector<double> Trainer::step(const engine::SampledBatch& sampled) {
  const engine::SequenceBatch& b = sampled.batch;
  const torch::Tensor& obs = b.steps.at("obs");
  const torch::Tensor action = b.steps.at("action");
  const torch::Tensor reward = b.steps.at("reward");
  const torch::Tensor valid = b.steps.at("valid").to(torch::kFloat32);
  const torch::Tensor prev_action = shifted(action, -1);
  const torch::Tensor prev_reward = shifted(reward, 0);
  const torch::Tensor reset = 1 - shifted(valid, 1);  // a step after a final observation starts an episode
  const auto burn = [](const torch::Tensor& t) { return t.narrow(0, 0, kBurnIn); };
  const auto trace = [](const torch::Tensor& t) { return t.narrow(0, kBurnIn, kTrace); };

  models::QNetImpl::State online_state{b.starts.at("h"), b.starts.at("c")};
  models::QNetImpl::State target_state = online_state;
  {
    torch::NoGradGuard no_grad;
    const auto burn_in = [&](models::QNet& net, const models::QNetImpl::State& state) {
      return net->unroll(burn(obs), burn(prev_action), burn(prev_reward), burn(reset), state).second;
    };
    online_state = burn_in(online_, online_state);
    target_state = burn_in(target_, target_state);
  }
  const torch::Tensor q =
      online_->unroll(trace(obs), trace(prev_action), trace(prev_reward), trace(reset), online_state).first;
  torch::Tensor bootstrap_q;
  {
    torch::NoGradGuard no_grad;
    const torch::Tensor q_target =
        target_->unroll(trace(obs), trace(prev_action), trace(prev_reward), trace(reset), target_state).first;
    bootstrap_q = q_target.gather(-1, q.detach().argmax(-1, /*keepdim=*/true)).squeeze(-1);
  }
  engine::NStepInput in;
  in.rewards = trace(reward);
  in.terminated = trace(b.steps.at("terminated")).to(torch::kFloat32);
  in.truncated = trace(b.steps.at("truncated")).to(torch::kFloat32);
  in.valid = trace(valid);
  in.bootstrap_q = bootstrap_q;
  const engine::NStepTargets targets = engine::n_step_targets(in, engine::NStepParams{});

  engine::TdInput td;
  td.targets = targets.targets;
  td.q_taken = q.gather(-1, trace(action).unsqueeze(-1)).squeeze(-1);
  td.mask = targets.mask;
  td.burn_in = 0;
  const torch::Tensor weights = torch::tensor(sampled.weights, torch::kFloat64).to(torch::kFloat32);
  const torch::Tensor loss = engine::r2d2_loss(td, weights);
  const torch::Tensor priorities = engine::sequence_priorities(td).to(torch::kFloat64).contiguous();

  optimizer_->zero_grad();
  loss.backward();
  engine::clip_grad_norm(params_, 40.0);
  optimizer_->step();
  const double* p = priorities.data_ptr<double>();
  return std::vector<double>(p, p + priorities.numel());
}

}  // namespace moonseed::bench
