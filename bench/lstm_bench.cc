// The recurrent learner's speed (docs/performance.md "Recurrent learner"), in one run:
//
//   lstm_bench [SECONDS_PER_SLICE] [all|kernels|learner]      defaults 0.3, all
//
// 1. lstm_sequence's kernels (models/sequence_lstm.h) on the sizes of the R2D2 recipes, forward
//    and backward, with no resets and with episodes of about 30 steps: milliseconds per call and
//    each kernel's speed as a ratio to the stepwise LSTMCell loop (the engine's unroll before
//    the fused kernel).
// 2. R2D2's learning step in the engine (R2d2Core::learn: sample a batch from the prioritized
//    replay, burn-in and trace of the online and target nets, n-step double-Q targets in h-space,
//    backward, clip, Adam, new priorities) against a pure-LibTorch ceiling: the same torso,
//    torch::nn::LSTM and dueling heads, the same batch and sequence length, the burn-in and trace
//    of both nets, a one-step squared loss, backward, clip and Adam on tensors already made,
//    nothing else. Printed as steps per second and their ratio (goal: at least 0.8).
//    Also the cost of the priorities R2D2 computes for each new sequence at insertion.
//
// Variants alternate in slices and each keeps its fastest slice (bench/bench_util.h): noise
// from other processes only ever adds time. One torch thread, as the learner's default.
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "base/heap.h"
#include "bench/bench_util.h"
#include "envs/env.h"
#include "models/device.h"
#include "models/sequence_lstm.h"
#include "tests/engine/r2d2/r2d2_local_run.h"

namespace {

using namespace moonseed;
using bench::fastest;
using bench::per_call;

struct Recipe {
  const char* label;
  const char* env_id;
  std::vector<models::LayerSpec> torso;
  int64_t lstm, head_hidden, batch, burn_in, trace, period;
};

std::vector<Recipe> recipes() {
  using models::LayerSpec;
  return {
      {"CartPole (classic_r2d2)", "CartPole-v1", {LayerSpec{"linear", 64}, LayerSpec{"relu"}}, 64, 64, 32, 8, 24, 16},
      {"MinAtar (minatar_r2d2)", "MinAtar/Breakout-v1",
       {LayerSpec{"channels_first"}, LayerSpec{"conv2d", 16, 3}, LayerSpec{"relu"}, LayerSpec{"flatten"},
        LayerSpec{"linear", 128}, LayerSpec{"relu"}},
       128, 128, 32, 10, 40, 20},
  };
}

// ---- 1. kernels ---------------------------------------------------------------------------------

void kernels(const Recipe& r, int64_t inputs, double slice) {
  const int64_t T = r.burn_in + r.trace, B = r.batch, H = r.lstm;
  torch::manual_seed(1);
  torch::nn::LSTMCell cell(inputs, H);
  const models::LstmWeights w = models::lstm_weights(*cell);
  const torch::Tensor x = torch::randn({T, B, inputs}).set_requires_grad(true);
  const torch::Tensor h0 = torch::zeros({B, H}), c0 = torch::zeros({B, H});
  for (const double episode : {0.0, 30.0}) {
    torch::Tensor keep = torch::ones({T, B});
    if (episode > 0) keep = (torch::rand({T, B}) >= 1.0 / episode).to(torch::kFloat32);
    const models::LstmKernel kinds[] = {models::LstmKernel::kStepwise, models::LstmKernel::kSplit,
                                        models::LstmKernel::kFused};
    std::vector<double> train[3], infer[3];
    for (int round = 0; round < 3; ++round) {
      for (int k = 0; k < 3; ++k) {
        train[k].push_back(per_call(slice, 1, [&] {
          const models::LstmSequence s = models::lstm_sequence(x, h0, c0, keep, w, kinds[k]);
          s.out.sum().backward();
        }));
        infer[k].push_back(per_call(slice, 1, [&] {
          torch::NoGradGuard no_grad;
          models::lstm_sequence(x, h0, c0, keep, w, kinds[k]);
        }));
      }
    }
    const double base_train = fastest(train[0]), base_infer = fastest(infer[0]);
    std::printf("  %s, T %lld B %lld in %lld H %lld, %s:\n", r.label, static_cast<long long>(T),
                static_cast<long long>(B), static_cast<long long>(inputs), static_cast<long long>(H),
                episode > 0 ? "episodes of ~30 steps" : "no resets");
    for (int k = 0; k < 3; ++k) {
      std::printf("    %-9s forward+backward %7.2f ms (%5.2fx)   forward without grad %7.2f ms (%5.2fx)\n",
                  models::lstm_kernel_name(kinds[k]), fastest(train[k]) * 1e3, base_train / fastest(train[k]),
                  fastest(infer[k]) * 1e3, base_infer / fastest(infer[k]));
    }
  }
}

// ---- 2. the learning step against the ceiling ---------------------------------------------------

// The in-process CartPole settings (tests/engine/r2d2/r2d2_local_run.h) at the recipe's sizes.
engine::R2d2CoreConfig core_config(const Recipe& r) {
  engine::R2d2CoreConfig c = engine::testing::cartpole_config(r.lstm);
  c.trainer.burn_in = r.burn_in;
  c.trainer.trace = r.trace;
  c.replay.period = r.period;
  c.limiter.min_size_to_sample = 1;
  c.batch = r.batch;
  c.net.torso = r.torso;
  c.net.head_hidden = r.head_hidden;
  return c;
}

// Plays `slots` envs with random actions into the core's recorder until `sequences` are queued.
class Filler {
 public:
  Filler(const std::string& env_id, int slots) {
    for (int i = 0; i < slots; ++i) envs_.push_back(envs::make_env(env_id));
    spec_ = envs_[0]->spec();
    bytes_ = spec_.observation.numel() * (spec_.observation.dtype == envs::DType::kUInt8 ? 1 : 4);
    obs_.assign(static_cast<size_t>(slots), std::vector<uint8_t>(static_cast<size_t>(bytes_)));
    flags_.assign(static_cast<size_t>(slots), envs::kFirst);
    rewards_.assign(static_cast<size_t>(slots), 0.f);
    for (int i = 0; i < slots; ++i) envs_[static_cast<size_t>(i)]->reset(100 + i, obs_[static_cast<size_t>(i)].data());
  }
  const envs::EnvSpec& spec() const { return spec_; }

  void fill(engine::R2d2Core& core, int64_t sequences) {
    int64_t queued = 0;
    while (queued < sequences) {
      for (size_t i = 0; i < envs_.size(); ++i) {
        const int32_t a = static_cast<int32_t>(rng_() % static_cast<uint64_t>(spec_.action.n));
        queued = core.prefill(static_cast<int>(i), obs_[i].data(), rewards_[i], flags_[i], a);
        if (flags_[i] & (envs::kTerminated | envs::kTruncated)) {
          envs_[i]->reset(std::nullopt, obs_[i].data());
          flags_[i] = envs::kFirst;
          rewards_[i] = 0;
          continue;
        }
        const envs::StepResult s = envs_[i]->step(&a, obs_[i].data());
        rewards_[i] = s.reward;
        flags_[i] = s.terminated ? envs::kTerminated : s.truncated ? envs::kTruncated : 0;
      }
    }
  }

 private:
  std::vector<std::unique_ptr<envs::Env>> envs_;
  envs::EnvSpec spec_;
  int64_t bytes_ = 0;
  std::vector<std::vector<uint8_t>> obs_;
  std::vector<uint8_t> flags_;
  std::vector<float> rewards_;
  std::mt19937_64 rng_{3};
};

// The same net in plain LibTorch: torso, [features, one-hot a_{t-1}, r_{t-1}] -> nn::LSTM -> dueling heads.
struct PlainNet : torch::nn::Module {
  PlainNet(const Recipe& r, const envs::EnvSpec& spec) : actions(spec.action.n) {
    if (r.torso.front().kind == "channels_first") {
      const auto& s = spec.observation.shape;  // [H, W, C]
      image = true;
      torso = register_module("torso", torch::nn::Sequential(
                                           torch::nn::Conv2d(torch::nn::Conv2dOptions(s[2], 16, 3)), torch::nn::ReLU(),
                                           torch::nn::Flatten(), torch::nn::Linear(16 * (s[0] - 2) * (s[1] - 2), 128),
                                           torch::nn::ReLU()));
      features = 128;
    } else {
      torso = register_module("torso", torch::nn::Sequential(torch::nn::Linear(spec.observation.numel(), 64),
                                                             torch::nn::ReLU()));
      features = 64;
    }
    lstm = register_module("lstm", torch::nn::LSTM(features + actions + 1, r.lstm));
    value = register_module("value", torch::nn::Sequential(torch::nn::Linear(r.lstm, r.head_hidden),
                                                           torch::nn::ReLU(), torch::nn::Linear(r.head_hidden, 1)));
    advantage = register_module(
        "advantage", torch::nn::Sequential(torch::nn::Linear(r.lstm, r.head_hidden), torch::nn::ReLU(),
                                           torch::nn::Linear(r.head_hidden, actions)));
  }
  // obs [T, B, obs...] -> q [T, B, A] and the state after T steps.
  std::pair<torch::Tensor, std::tuple<torch::Tensor, torch::Tensor>> forward(
      const torch::Tensor& obs, const torch::Tensor& prev_action, const torch::Tensor& prev_reward,
      const std::tuple<torch::Tensor, torch::Tensor>& state) {
    const int64_t T = obs.size(0), B = obs.size(1);
    torch::Tensor x = obs.flatten(0, 1).to(torch::kFloat32);
    if (image) x = x.permute({0, 3, 1, 2});
    else x = x.flatten(1);
    x = torso->forward(x).reshape({T, B, features});
    x = torch::cat({x, torch::one_hot(prev_action, actions).to(torch::kFloat32), prev_reward.unsqueeze(2)}, 2);
    auto [out, next] = lstm->forward(x, state);
    const torch::Tensor a = advantage->forward(out);
    return {value->forward(out) + a - a.mean(2, true), next};
  }
  int64_t actions, features = 0;
  bool image = false;
  torch::nn::Sequential torso{nullptr}, value{nullptr}, advantage{nullptr};
  torch::nn::LSTM lstm{nullptr};
};

struct Ceiling {
  Ceiling(const Recipe& r, const envs::EnvSpec& spec) : recipe(r) {
    torch::manual_seed(2);
    online = std::make_shared<PlainNet>(r, spec);
    target = std::make_shared<PlainNet>(r, spec);
    for (auto& p : target->parameters()) p.set_requires_grad(false);
    optimizer = std::make_unique<torch::optim::Adam>(online->parameters(), torch::optim::AdamOptions(1e-4).eps(1e-3));
    const int64_t L = r.burn_in + r.trace, B = r.batch;
    std::vector<int64_t> shape{L, B};
    for (int64_t d : spec.observation.shape) shape.push_back(d);
    obs = spec.observation.dtype == envs::DType::kUInt8 ? torch::randint(0, 2, shape, torch::kUInt8)
                                                        : torch::randn(shape);
    action = torch::randint(0, spec.action.n, {L, B}, torch::kInt64);
    prev_action = torch::randint(0, spec.action.n, {L, B}, torch::kInt64);
    reward = torch::rand({L, B});
    state = {torch::zeros({1, B, r.lstm}), torch::zeros({1, B, r.lstm})};
  }
  void step() {
    const int64_t burn = recipe.burn_in, T = recipe.trace;
    auto part = [](const torch::Tensor& t, int64_t b, int64_t n) { return t.narrow(0, b, n); };
    std::tuple<torch::Tensor, torch::Tensor> s_online = state, s_target = state;
    torch::Tensor q_target;
    {
      torch::NoGradGuard no_grad;
      s_online = online->forward(part(obs, 0, burn), part(prev_action, 0, burn), part(reward, 0, burn), state).second;
      s_target = target->forward(part(obs, 0, burn), part(prev_action, 0, burn), part(reward, 0, burn), state).second;
      q_target = target->forward(part(obs, burn, T), part(prev_action, burn, T), part(reward, burn, T), s_target).first;
    }
    const torch::Tensor q =
        online->forward(part(obs, burn, T), part(prev_action, burn, T), part(reward, burn, T), s_online).first;
    const torch::Tensor taken = q.gather(2, part(action, burn, T).unsqueeze(2)).squeeze(2);
    const torch::Tensor y = part(reward, burn, T) + 0.99 * std::get<0>(q_target.max(2));
    const torch::Tensor loss = (taken - y).pow(2).mean();
    optimizer->zero_grad();
    loss.backward();
    torch::nn::utils::clip_grad_norm_(online->parameters(), 40.0);
    optimizer->step();
  }
  Recipe recipe;
  std::shared_ptr<PlainNet> online, target;
  std::unique_ptr<torch::optim::Adam> optimizer;
  torch::Tensor obs, action, prev_action, reward;
  std::tuple<torch::Tensor, torch::Tensor> state;
};

void learner(const Recipe& r, double slice) {
  Filler filler(r.env_id, 16);
  engine::R2d2Core core(core_config(r), filler.spec(), 16, torch::kCPU);
  filler.fill(core, 400);
  core.insert_prefilled();
  Ceiling ceiling(r, filler.spec());
  // One engine step, then one ceiling step, over and over for about 10 slices: the machine's speed
  // drifts by more than the difference being measured, and pairs see the same drift.
  std::vector<double> engine_s, ceiling_s, ratios, insert_s;
  const auto stop = bench::Clock::now() + std::chrono::duration_cast<bench::Clock::duration>(
                                              std::chrono::duration<double>(slice * 10));
  while (bench::Clock::now() < stop || engine_s.size() < 5) {
    engine_s.push_back(bench::seconds_of([&] {
      core.ready_to_learn(std::chrono::milliseconds(0));
      core.learn();
    }));
    ceiling_s.push_back(bench::seconds_of([&] { ceiling.step(); }));
    ratios.push_back(ceiling_s.back() / engine_s.back());
    if (engine_s.size() % 8 == 0) {  // now and then one learning step's worth of new sequences
      filler.fill(core, r.batch);
      insert_s.push_back(bench::seconds_of([&] { core.insert_prefilled(); }) / static_cast<double>(r.batch));
    }
  }
  if (insert_s.empty()) {
    filler.fill(core, r.batch);
    insert_s.push_back(bench::seconds_of([&] { core.insert_prefilled(); }) / static_cast<double>(r.batch));
  }
  std::printf("  %s: engine %6.1f steps/s, pure-LibTorch ceiling %6.1f steps/s (medians of %zu pairs): "
              "ratio %.2f (median of the pairs' ratios); insertion priorities %.3f ms per sequence\n",
              r.label, 1 / bench::median(engine_s), 1 / bench::median(ceiling_s), engine_s.size(),
              bench::median(ratios), bench::median(insert_s) * 1e3);
}

}  // namespace

int main(int argc, char** argv) {
  const double slice = argc > 1 ? std::atof(argv[1]) : 0.3;
  const std::string part = argc > 2 ? argv[2] : "all";
  if (!(slice > 0) || (part != "all" && part != "kernels" && part != "learner")) {
    std::fprintf(stderr, "usage: lstm_bench [SECONDS_PER_SLICE > 0] [all|kernels|learner]\n");
    return 2;
  }
  // As moonseed-engine's threads do, for both sides: one intra-op thread,
  // denormals flushed, freed memory kept.
  models::prepare_math_thread(1);
  base::keep_freed_memory();
  if (part != "learner") std::printf("lstm_sequence kernels (speed-up against the stepwise LSTMCell loop):\n");
  for (const Recipe& r : recipes()) {
    if (part == "learner") break;
    const envs::EnvSpec spec = envs::make_env(r.env_id)->spec();
    int64_t features = 0;  // the torso's last linear layer
    for (const models::LayerSpec& l : r.torso) features = l.kind == "linear" ? l.out : features;
    kernels(r, features + spec.action.n + 1, slice);
  }
  if (part == "kernels") return 0;
  std::printf("R2D2 learning step, engine against a pure-LibTorch ceiling (same net, batch, sequence):\n");
  for (const Recipe& r : recipes()) learner(r, slice);
  return 0;
}
