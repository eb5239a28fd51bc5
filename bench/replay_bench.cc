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
// The workload (layouts, streams of blocks, the training step) is
// bench/replay_bench_workload.h; this file measures it and prints the figures.
// Usage: replay_bench [--quick] [--threads N]   (N: torch intra-op threads,
// default the learner's learner.torch_threads)
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "bench/bench_util.h"
#include "bench/replay_bench_workload.h"
#include "engine/config/experiment_config.h"
#include "engine/runtime/sum_tree.h"

namespace moonseed::bench {
namespace {

constexpr double kAtariStepLimit = 30.0;  // seconds per step at batch 64 before a smaller batch is used

struct Options {
  bool quick = false;
  int threads = engine::LearnerConfig{}.torch_threads;
};

long long ll(int64_t v) { return static_cast<long long>(v); }

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

int run(int argc, char** argv) {
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

}  // namespace
}  // namespace moonseed::bench

int main(int argc, char** argv) { return moonseed::bench::run(argc, argv); }
