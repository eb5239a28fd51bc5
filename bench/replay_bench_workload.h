// The workload of bench/replay_bench.cc, apart from what it measures: the
// sequence shape, the observation layouts, a replay's columns for a layout,
// streams of random blocks feeding a SequenceReplay as a learner's actors
// would, and one R2D2 training step on a sampled batch (the bench's baseline).
//
// Ownership: Streams keeps a reference to the replay it feeds, which must
// outlive it, and owns its assemblers and eight pre-made blocks it adds in
// turn; Trainer owns its online and target nets and their optimizer.
// Failure: LibTorch and SequenceReplay errors propagate as exceptions (the
// bench dies with them).
// Thread-safety: none; the bench's one thread uses them.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "engine/replay/sequence_replay.h"
#include "envs/spec.h"
#include "models/q_net.h"

namespace moonseed::bench {

// Batch 64 of sequences of burn-in 40 + trace 80 steps, period 40, 64 streams.
inline constexpr int64_t kBatch = 64;
inline constexpr int64_t kBurnIn = 40;
inline constexpr int64_t kTrace = 80;
inline constexpr int64_t kPeriod = 40;
inline constexpr int64_t kStreams = 64;

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

// Per step: obs, action, reward and the terminated, truncated, valid flags.
std::vector<engine::ColumnSpec> step_columns(const Layout& l);
// Per sequence: the LSTM state h, c it starts from.
std::vector<engine::ColumnSpec> start_columns(const Layout& l);

// One block's tensors, as SequenceReplay::add_block takes them.
struct Block {
  std::map<std::string, torch::Tensor> steps, starts;
};

// kStreams streams adding blocks round-robin, as the learner would from its actors' envs.
class Streams {
 public:
  Streams(engine::SequenceReplay& replay, const Layout& l);

  // Adds one block to the next stream; returns the sequence it completes, if any.
  std::optional<std::vector<engine::BlockRef>> add_block();

  // The learner's insert path for one new sequence: blocks until one completes, then insert.
  void insert_one();

  // The next `n` sequences the streams complete, not inserted.
  std::vector<std::vector<engine::BlockRef>> assemble(int64_t n);

 private:
  engine::SequenceReplay& replay_;
  std::vector<engine::SequenceAssembler> assemblers_;
  std::vector<Block> blocks_;
  int64_t added_ = 0;
  std::mt19937_64 rng_;
  std::uniform_real_distribution<double> priority_{0.01, 2.0};
};

// The learner's R2D2 step for a layout's net: online and target QNets, Adam lr 1e-4 eps 1e-3.
class Trainer {
 public:
  explicit Trainer(const Layout& l);

  // One training step; returns the new priorities (as update_priorities would get them).
  std::vector<double> step(const engine::SampledBatch& sampled);

 private:
  models::QNet online_;
  models::QNet target_;
  std::vector<torch::Tensor> params_;
  std::unique_ptr<torch::optim::Optimizer> optimizer_;
};

}  // namespace moonseed::bench
