// What R2D2's prioritized sequence replay (engine/replay/sequence_replay.h) costs the
// learner, against the learner's training step measured in the same run (the
// baseline). Sequences of L = 120 steps (burn-in 40 + trace 80), period 40,
// batch 64, two observation layouts:
//   (a) obs float [4], start columns h, c float [64] (CartPole-sized, QNet
//       with an MLP torso and LSTM 64);
//   (b) obs uint8 [4, 84, 84] (4 stacked frames, as the Atari QNet takes
//       them), start columns h, c float [512] (models::r2d2_atari_spec).
// Each step also stores action int64, reward float, terminated, truncated and
// valid uint8. Figures per case:
//   insert: per sequence, 64 streams round-robin into a full replay (FIFO
//           eviction): add_block + SequenceAssembler::push + insert(priority);
//   gather: gather() of 64 newly assembled sequences (the learner computes
//           their first priorities from it);
//   sample: sample(64) + update_priorities(64 keys);
//   step:   one R2D2 training step on a sampled batch: burn-in 40 steps of the
//           online and target nets without gradient from the stored state,
//           the 80-step unroll of both, double-Q n-step targets (n 5, gamma
//           0.997), r2d2_loss with the importance weights, priorities,
//           backward, grad-norm clip 40, Adam lr 1e-4 eps 1e-3.
// and the SumTree alone (set and find at 100k leaves). Every replay figure is
// also printed as a fraction of one training step. Replay figures and steps
// alternate in rounds so that machine noise hits them alike; each figure is the
// fastest of its rounds (noise from other processes only ever adds time). When
// the Atari step would take more than 30 s at batch 64 it is measured at a
// smaller batch and scaled linearly to 64 (the bench says so).
// Usage: replay_bench [--quick] [--threads N]   (N: torch intra-op threads,
// default the learner's learner.torch_threads)
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "bench/bench_util.h"
#include "engine/config/experiment_config.h"
#include "engine/learner/optimizer.h"
#include "engine/r2d2/r2d2.h"
#include "engine/replay/sequence_replay.h"
#include "engine/runtime/sum_tree.h"
#include "envs/spec.h"
#include "models/q_net.h"

namespace {

namespace engine = moonseed::engine;
namespace envs = moonseed::envs;
namespace models = moonseed::models;
using moonseed::bench::duration_text;
using moonseed::bench::fastest;
using moonseed::bench::per_call;
using moonseed::bench::rate_text;
using moonseed::bench::seconds_of;

constexpr int64_t kBatch = 64;
constexpr int64_t kBurnIn = 40;
constexpr int64_t kTrace = 80;
constexpr int64_t kPeriod = 40;
constexpr int64_t kStreams = 64;
constexpr double kAtariStepLimit = 30.0;  // seconds per step at batch 64 before a smaller batch is used

struct Options {
  bool quick = false;
  int threads = engine::LearnerConfig{}.torch_threads;
};

struct Layout {
  const char* label;
  std::vector<int64_t> obs_shape;
  torch::Dtype obs_dtype;
  envs::DType env_dtype;
  int64_t lstm;
  int64_t actions;
  int64_t capacity;
  bool atari;  // the net is models::r2d2_atari_spec()
};

long long ll(int64_t v) { return static_cast<long long>(v); }

// ---------------------------------------------------------------------------
// Replay side

std::vector<engine::ColumnSpec> step_columns(const Layout& l) {
  return {{"obs", l.obs_dtype, l.obs_shape},    {"action", torch::kInt64, {}},
          {"reward", torch::kFloat32, {}},      {"terminated", torch::kUInt8, {}},
          {"truncated", torch::kUInt8, {}},     {"valid", torch::kUInt8, {}}};
}

std::vector<engine::ColumnSpec> start_columns(const Layout& l) {
  return {{"h", torch::kFloat32, {l.lstm}}, {"c", torch::kFloat32, {l.lstm}}};
}

struct Block {
  std::map<std::string, torch::Tensor> steps, starts;
};

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

// kStreams streams adding blocks round-robin, as the learner would from its actors' envs.
class Streams {
 public:
  Streams(engine::SequenceReplay& replay, const Layout& l) : replay_(replay), rng_(7) {
    for (int64_t i = 0; i < kStreams; ++i) assemblers_.emplace_back(replay.config());
    for (int64_t i = 0; i < 8; ++i) blocks_.push_back(random_block(l, replay.block_length(), i));
  }

  // Adds one block to the next stream; returns the sequence it completes, if any.
  std::optional<std::vector<engine::BlockRef>> add_block() {
    const Block& b = blocks_[static_cast<size_t>(added_ % static_cast<int64_t>(blocks_.size()))];
    const engine::BlockRef ref = replay_.add_block(b.steps, b.starts);
    auto sequence = assemblers_[static_cast<size_t>(added_ % kStreams)].push(ref);
    ++added_;
    return sequence;
  }

  // The learner's insert path for one new sequence: blocks until one completes, then insert.
  void insert_one() {
    for (;;) {
      if (auto sequence = add_block()) {
        replay_.insert(*sequence, priority_(rng_));
        return;
      }
    }
  }

  std::vector<std::vector<engine::BlockRef>> assemble(int64_t n) {
    std::vector<std::vector<engine::BlockRef>> out;
    while (static_cast<int64_t>(out.size()) < n) {
      if (auto sequence = add_block()) out.push_back(std::move(*sequence));
    }
    return out;
  }

 private:
  engine::SequenceReplay& replay_;
  std::vector<engine::SequenceAssembler> assemblers_;
  std::vector<Block> blocks_;
  int64_t added_ = 0;
  std::mt19937_64 rng_;
  std::uniform_real_distribution<double> priority_{0.01, 2.0};
};

// ---------------------------------------------------------------------------
// Learner side: one R2D2 training step

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

class Trainer {
 public:
  explicit Trainer(const Layout& l)
      : online_(net_spec_of(l), env_spec_of(l)), target_(online_->clone_net()) {
    engine::OptimizerConfig config;
    config.kind = "adam";
    config.lr = 1e-4;
    config.eps = 1e-3;
    params_ = online_->parameters();
    optimizer_ = engine::make_optimizer(config, params_);
  }

  // One training step; returns the new priorities (as update_priorities would get them).
  std::vector<double> step(const engine::SampledBatch& sampled) {
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
          target_->unroll(trace(obs), trace(prev_action), trace(prev_reward), trace(reset), target_state)
              .first;
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

 private:
  models::QNet online_;
  models::QNet target_;
  std::vector<torch::Tensor> params_;
  std::unique_ptr<torch::optim::Optimizer> optimizer_;
};

// ---------------------------------------------------------------------------

void print_row(const char* what, double seconds, double items, double step) {
  std::printf("  %-52s %10s %12s/s %10.3g\n", what, duration_text(seconds).c_str(),
              rate_text(items / seconds).c_str(), seconds / step);
}

// Runs one layout; returns the seconds of one training step at batch 64 (measured or scaled).
double run_case(const Layout& l, const Options& o) {
  engine::SequenceReplayConfig config;
  config.capacity = l.capacity;
  config.sequence_length = kBurnIn + kTrace;
  config.period = kPeriod;
  config.max_streams = kStreams;
  config.seed = 1;
  engine::SequenceReplay replay(config, step_columns(l), start_columns(l));
  Streams streams(replay, l);
  std::printf("\ncase %s\n  replay: capacity %lld sequences, block ring %lld blocks of %lld steps, %.1f MB; "
              "filling...\n",
              l.label, ll(replay.capacity()), ll(replay.block_capacity()), ll(replay.block_length()),
              static_cast<double>(replay.bytes()) / 1e6);
  std::fflush(stdout);
  const double fill = seconds_of([&] {
    for (int64_t i = 0; i < l.capacity; ++i) streams.insert_one();
  });

  torch::manual_seed(3);
  Trainer trainer(l);
  // The Atari step: time one at a small batch first, then pick the batch.
  int64_t net_batch = kBatch;
  if (l.atari) {
    const int64_t probe = o.quick ? 1 : 4;
    trainer.step(replay.sample(probe));  // warm-up
    const double t = seconds_of([&] { trainer.step(replay.sample(probe)); });
    const double at64 = t * static_cast<double>(kBatch) / static_cast<double>(probe);
    if (o.quick) {
      net_batch = 2;
    } else if (at64 > kAtariStepLimit) {
      net_batch = probe;
      // The largest power of two whose step takes about 10 s at most.
      const double per_sequence = t / static_cast<double>(probe);
      while (net_batch * 2 <= kBatch && per_sequence * static_cast<double>(net_batch * 2) <= 10.0) {
        net_batch *= 2;
      }
    }
    std::printf("  Atari step at batch %lld: %s (-> ~%s at batch 64); measuring at batch %lld\n",
                ll(probe), duration_text(t).c_str(), duration_text(at64).c_str(), ll(net_batch));
  }
  std::printf("  (fill: %s)\n", duration_text(fill).c_str());
  std::fflush(stdout);
  trainer.step(replay.sample(net_batch));  // warm-up at the measured batch

  const int rounds = o.quick ? 1 : (l.atari ? 2 : 5);
  const int steps_per_round = o.quick ? 1 : (l.atari ? 1 : 3);
  const double slice = o.quick ? 0.02 : 0.25;
  // What gather() and sample() allocate for a batch of 64: one fresh tensor per column.
  int64_t batch_bytes = 0;
  for (const auto& c : step_columns(l)) batch_bytes += kBatch * (kBurnIn + kTrace) * c.value_bytes();
  for (const auto& c : start_columns(l)) batch_bytes += kBatch * c.value_bytes();
  std::vector<double> t_step, t_insert, t_gather, t_sample, t_touch;
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> priority(0.01, 2.0);
  std::vector<double> new_priorities(kBatch);
  for (int r = 0; r < rounds; ++r) {
    for (int s = 0; s < steps_per_round; ++s) {
      const engine::SampledBatch batch = replay.sample(net_batch);
      t_step.push_back(seconds_of([&] { trainer.step(batch); }));
    }
    t_insert.push_back(per_call(slice, 16, [&] { streams.insert_one(); }));
    const auto pending = streams.assemble(kBatch);
    t_gather.push_back(per_call(slice, 1, [&] { replay.gather(pending); }));
    // Then insert them, as the learner does: a sequence that is never inserted leaves the block
    // ring ahead of the sequence ring (docs/replay.md, "Ring sizes").
    for (const auto& sequence : pending) replay.insert(sequence, priority(rng));
    t_sample.push_back(per_call(slice, 1, [&] {
      for (double& p : new_priorities) p = priority(rng);
      const engine::SampledBatch b = replay.sample(kBatch);
      replay.update_priorities(b.keys, new_priorities);
    }));
    t_touch.push_back(per_call(slice, 1, [&] { torch::empty({batch_bytes}, torch::kUInt8).zero_(); }));
  }

  const double measured = fastest(t_step);
  const double step = measured * static_cast<double>(kBatch) / static_cast<double>(net_batch);
  std::printf("  %-52s %10s %14s %10s\n", "", "time", "rate", "x step");
  std::string step_label = std::string("training step, ") + (l.atari ? "Atari" : "small") + " net, batch 64";
  if (net_batch != kBatch) {
    step_label = std::string("training step, Atari net, batch ") + std::to_string(net_batch) + " x " +
                 std::to_string(kBatch / net_batch) + " (scaled)";
    std::printf("  (measured %s per step at batch %lld)\n", duration_text(measured).c_str(),
                ll(net_batch));
  }
  print_row(step_label.c_str(), step, kBatch, step);
  const double insert = fastest(t_insert);
  print_row("insert 1 sequence (add_block + assemble + insert)", insert, 1, step);
  print_row("insert 64 sequences", insert * kBatch, kBatch, step);
  print_row("gather 64 new sequences (for their first priorities)", fastest(t_gather), kBatch, step);
  print_row("sample 64 + update_priorities 64", fastest(t_sample), kBatch, step);
  char touch[64];
  std::snprintf(touch, sizeof touch, "  of which: first touch of a new %.1f MB batch",
                static_cast<double>(batch_bytes) / 1e6);
  print_row(touch, fastest(t_touch), kBatch, step);
  const engine::SequenceReplayStats stats = replay.stats();
  std::printf("  (rates in sequences/s; x step: fraction of one training step. %lld live sequences; "
              "evictions: %lld FIFO, %lld by block reuse)\n",
              ll(replay.size()), ll(stats.evicted_fifo), ll(stats.evicted_by_block_reuse));
  std::printf("  sample+update of 64 sequences = %.3g of one training step; insert of 64 = %.3g\n",
              fastest(t_sample) / step, insert * kBatch / step);
  std::fflush(stdout);
  return step;
}

void run_sum_tree(const Options& o, double small_step, double atari_step) {
  constexpr int64_t kLeaves = 100000;
  constexpr size_t kDraws = 1 << 16;
  engine::SumTree tree(kLeaves);
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<double> priority(0.01, 2.0);
  for (int64_t i = 0; i < kLeaves; ++i) tree.set(i, priority(rng));
  std::vector<int64_t> indices(kDraws);
  std::vector<double> priorities(kDraws), masses(kDraws);
  std::uniform_int_distribution<int64_t> index(0, kLeaves - 1);
  for (size_t i = 0; i < kDraws; ++i) {
    indices[i] = index(rng);
    priorities[i] = priority(rng);
  }
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  for (double& m : masses) m = unit(rng);  // scaled by the total at use

  const int rounds = o.quick ? 1 : 5;
  const double slice = o.quick ? 0.02 : 0.2;
  std::vector<double> t_set, t_find;
  size_t i = 0;
  int64_t sink = 0;
  for (int r = 0; r < rounds; ++r) {
    t_set.push_back(per_call(slice, 1024, [&] {
      tree.set(indices[i], priorities[i]);
      i = (i + 1) & (kDraws - 1);
    }));
    const double total = tree.total();
    t_find.push_back(per_call(slice, 1024, [&] {
      sink += tree.find(masses[i] * total);
      i = (i + 1) & (kDraws - 1);
    }));
  }
  const double set = fastest(t_set), find = fastest(t_find);
  const double per_batch = kBatch * (set + find);
  std::printf("\nsum tree, %lld leaves\n", ll(kLeaves));
  std::printf("  %-52s %10s %12s/s\n", "set (priority update)", duration_text(set).c_str(),
              rate_text(1 / set).c_str());
  std::printf("  %-52s %10s %12s/s\n", "find", duration_text(find).c_str(), rate_text(1 / find).c_str());
  std::printf("  64 sets + 64 finds = %s = %.3g of a small-net step, %.3g of an Atari step\n",
              duration_text(per_batch).c_str(), per_batch / small_step, per_batch / atari_step);
  if (sink == std::numeric_limits<int64_t>::min()) std::printf("%lld\n", ll(sink));
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--quick") {
      o.quick = true;
    } else if (arg == "--threads" && i + 1 < argc) {
      o.threads = std::atoi(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: replay_bench [--quick] [--threads N]\n");
      return 2;
    }
  }
  if (o.threads < 1) {
    std::fprintf(stderr, "replay_bench: --threads must be >= 1, got %d\n", o.threads);
    return 2;
  }
  at::set_num_threads(o.threads);
  torch::manual_seed(1);
  std::printf("replay_bench%s: batch %lld, L = %lld (burn-in %lld + trace %lld), period %lld, %lld streams "
              "round-robin, torch threads %d\n",
              o.quick ? " --quick" : "", ll(kBatch), ll(kBurnIn + kTrace), ll(kBurnIn), ll(kTrace),
              ll(kPeriod), ll(kStreams), o.threads);
  std::printf("each figure is the fastest of its rounds; x step = time / one training step (the baseline)\n");

  const Layout small{"(a): obs float [4], h, c float [64], 2 actions; net: linear 64 + relu, LSTM 64, "
                     "dueling 64",
                     {4}, torch::kFloat32, envs::DType::kFloat32, 64, 2, o.quick ? 10000 : 100000, false};
  const Layout atari{"(b): obs uint8 [4, 84, 84] (4 stacked frames), h, c float [512], 18 actions; "
                     "net: r2d2_atari_spec",
                     {4, 84, 84}, torch::kUInt8, envs::DType::kUInt8, 512, 18, o.quick ? 100 : 500, true};
  const double small_step = run_case(small, o);
  const double atari_step = run_case(atari, o);
  run_sum_tree(o, small_step, atari_step);
  return 0;
}
