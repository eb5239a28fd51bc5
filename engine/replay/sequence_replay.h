// SequenceReplay: R2D2's prioritized replay of fixed-length sequences
// (Kapturowski et al. 2019), kept on the learner. docs/replay.md has the design.
//
// Sequences of L = burn_in + trace steps; a stream (one env) starts a new one
// every `period` steps, so its consecutive sequences overlap by L - period
// steps. Steps are stored once, in blocks of g = gcd(L, period) consecutive
// steps of one stream, and a sequence is the list of its L / g consecutive
// blocks. R2D2's 40 + 80 steps, period 40, give g = 40 and 3 blocks per
// sequence: a third of the memory of copying steps into every sequence.
//
//   learner, per stream:   ref = replay.add_block(steps, starts);     // [g, ...] each
//                          if (auto seq = assembler.push(ref)) pending.push_back(*seq);
//   learner, new sequences: batch = replay.gather(pending); priorities from the net;
//                          replay.insert(pending[i], priority_i);
//   training thread:        if (replay.await_sample(64, timeout)) {
//                            SampledBatch b = replay.sample(64);  ... train ...
//                            replay.update_priorities(b.keys, new_priorities); }
//
// Columns are generic: the learner declares what a step holds (step columns,
// one value per step, e.g. "obs" uint8 {4, 84, 84}, "action" int64 {}) and what
// a block holds at its first step (start columns, e.g. the LSTM state "h", "c"
// float {512}); a sequence's start values are those of its first block. Each
// column is one preallocated CPU tensor, [block_capacity, g, shape...] for
// step columns and [block_capacity, shape...] for start columns.
//
// Ownership and lifetimes:
//   blocks     a ring of block_capacity() slots; add_block() overwrites the
//              oldest. A BlockRef {slot, generation} names one write of a slot.
//   sequences  a FIFO ring of capacity() slots of L / g block slots each, with
//              a priority in a SumTree. Inserting into a full replay evicts
//              the oldest sequence. When add_block() overwrites a block that a
//              live sequence still uses, that sequence is removed at once
//              (counted in stats().evicted_by_block_reuse). The block ring holds
//              capacity * period / g + max_streams * (L + period) / g blocks,
//              enough that with up to max_streams streams inserting round-robin
//              FIFO eviction always comes first (docs/replay.md derives it).
//   keys       a SequenceKey {slot, generation} names one insert; a priority
//              update for a key whose sequence is gone is ignored and counted.
//   batches    gather() and sample() return tensors the caller owns.
//   limiter    the replay owns a RateLimiter (unlimited by default): insert()
//              and sample() account to it; await_insert() / await_sample() wait
//              on it without holding the replay's lock. Its counters are saved
//              with the replay.
//
// Sampling: stratified proportional. [0, total) is split into batch_size equal
// strata and one uniform point of each is found in the SumTree, so P(i) =
// p_i^alpha / sum_j p_j^alpha. The importance weight (N P(i))^-beta divided by
// its maximum over all sampleable sequences is (min_j p_j^alpha / p_i^alpha)^beta,
// in (0, 1]; N (sequences with a priority > 0) cancels.
//
// Errors: a bad config, column spec, column tensor (missing or unknown name,
// wrong dtype or shape), block or priority is std::invalid_argument naming it;
// sample() of a replay with nothing to sample is std::logic_error; gather() of
// a block that was overwritten is std::invalid_argument (gather right after
// assembling); insert() of a block that was overwritten is an expected outcome:
// std::nullopt. save()/load() fail with CheckpointError (engine/learner/checkpoint.h)
// naming the path and the reason; a failed load() leaves the replay unchanged.
//
// Thread-safety: all members may be called from any thread. One mutex guards
// the storage; gather() and sample() copy out under it, so the caller trains on
// its own tensors while inserts go on. save() holds it while writing. Lock
// order: the replay's mutex, then the RateLimiter's.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "base/mutex.h"
#include "engine/runtime/clock.h"
#include "engine/runtime/rate_limiter.h"
#include "engine/runtime/sum_tree.h"

namespace moonseed::engine {

struct ColumnSpec {
  std::string name;
  torch::Dtype dtype = torch::kFloat32;
  std::vector<int64_t> shape;  // one value's shape; {} for a scalar

  std::string describe() const;  // "obs Byte [4, 84, 84]"
  int64_t value_bytes() const;   // bytes of one value
  std::vector<int64_t> with_leading(std::vector<int64_t> leading) const;  // leading + shape
};

// "obs Byte [4, 84, 84]; action Long []", or "(none)".
std::string describe_columns(const std::vector<ColumnSpec>& specs);

struct SequenceReplayConfig {
  int64_t capacity = 10000;           // sequences alive at once
  int64_t sequence_length = 120;      // burn_in + trace
  int64_t period = 40;                // steps between the starts of a stream's sequences
  double priority_exponent = 0.9;     // alpha
  double importance_exponent = 0.6;   // beta
  uint64_t seed = 0;                  // of the sampling generator
  // Streams inserting round-robin that the block ring is sized for. Count the
  // sequences the learner holds between assembling and inserting them as
  // streams too. More streams only cost evictions by block reuse.
  int64_t max_streams = 256;
};

// Throws std::invalid_argument naming the field: sizes must be positive,
// period <= sequence_length, exponents finite and >= 0.
void validate(const SequenceReplayConfig& config);

struct BlockRef {
  int64_t slot = -1;
  uint64_t generation = 0;  // 0: never written
};

struct SequenceKey {
  int64_t slot = -1;
  uint64_t generation = 0;
  bool operator==(const SequenceKey& o) const { return slot == o.slot && generation == o.generation; }
};

// Per stream: the last L / g blocks; yields a complete sequence every
// period / g blocks once L / g blocks have arrived. Not thread-safe (one per
// stream, used by the thread that adds that stream's blocks).
class SequenceAssembler {
 public:
  // Throws std::invalid_argument for a config validate() rejects.
  explicit SequenceAssembler(const SequenceReplayConfig& config);

  std::optional<std::vector<BlockRef>> push(const BlockRef& block);
  // Forgets the stream's blocks (the stream restarted, e.g. an actor reconnected).
  void reset();

 private:
  int64_t blocks_per_sequence_;
  int64_t blocks_per_period_;
  std::vector<BlockRef> recent_;  // ring of the last blocks_per_sequence_ blocks
  int64_t pushed_ = 0;            // since the last reset
};

struct SequenceBatch {
  std::map<std::string, torch::Tensor> steps;   // time-major [L, n, shape...]
  std::map<std::string, torch::Tensor> starts;  // [n, shape...]
};

struct SampledBatch {
  SequenceBatch batch;
  std::vector<SequenceKey> keys;
  std::vector<double> probabilities;  // P(i)
  std::vector<double> weights;        // importance weights in (0, 1]
};

struct SequenceReplayStats {
  int64_t blocks_added = 0;
  int64_t inserted = 0;          // sequences made sampleable
  int64_t rejected_inserts = 0;  // insert() of a sequence whose block was gone
  int64_t sampled = 0;           // sequences drawn, with repetition
  int64_t stale_updates = 0;     // priority updates for sequences that were gone
  int64_t evicted_fifo = 0;
  int64_t evicted_by_block_reuse = 0;
};

class SequenceReplay {
 public:
  // Allocates all storage. Column names must be unique and non-empty across
  // both kinds, shapes positive; at least one step column. `clock` is the
  // RateLimiter's (nullptr: steady clock).
  SequenceReplay(const SequenceReplayConfig& config, std::vector<ColumnSpec> step_columns,
                 std::vector<ColumnSpec> start_columns, const RateLimiterConfig& limiter = {},
                 Clock* clock = nullptr);
  SequenceReplay(const SequenceReplay&) = delete;
  SequenceReplay& operator=(const SequenceReplay&) = delete;

  const SequenceReplayConfig& config() const { return config_; }
  int64_t block_length() const { return block_length_; }            // g
  int64_t blocks_per_sequence() const { return blocks_per_sequence_; }  // L / g
  int64_t block_capacity() const { return block_capacity_; }
  int64_t capacity() const { return config_.capacity; }

  // Copies one block in: `steps` maps every step column to a [g, shape...]
  // tensor, `starts` every start column to a [shape...] tensor, dtypes exact.
  BlockRef add_block(const std::map<std::string, torch::Tensor>& steps,
                     const std::map<std::string, torch::Tensor>& starts) EXCLUDES(mu_);

  // Copies out the given sequences (each L / g block refs, oldest first).
  SequenceBatch gather(const std::vector<std::vector<BlockRef>>& sequences) const EXCLUDES(mu_);

  // Makes a sequence sampleable with raw priority `priority` (finite, >= 0;
  // the replay raises it to alpha). std::nullopt when one of its blocks was
  // overwritten since add_block().
  std::optional<SequenceKey> insert(const std::vector<BlockRef>& blocks, double priority) EXCLUDES(mu_);

  // Draws batch_size sequences (see "Sampling" above).
  SampledBatch sample(int64_t batch_size) EXCLUDES(mu_);

  // Sets new raw priorities; keys whose sequence is gone are skipped and counted.
  // All priorities are checked before any is applied.
  void update_priorities(const std::vector<SequenceKey>& keys, const std::vector<double>& priorities)
      EXCLUDES(mu_);

  // RateLimiter waits for one sequence to insert / batch_size to sample.
  // Never under mu_: inserting and sampling go on while one waits.
  bool await_insert(std::chrono::milliseconds timeout) EXCLUDES(mu_) {
    return limiter_.await_insert(1, timeout);
  }
  bool await_sample(int64_t batch_size, std::chrono::milliseconds timeout) EXCLUDES(mu_) {
    return limiter_.await_sample(batch_size, timeout);
  }
  RateLimiter& rate_limiter() { return limiter_; }

  int64_t size() const EXCLUDES(mu_);  // live sequences
  SequenceReplayStats stats() const EXCLUDES(mu_);
  // Bytes allocated for columns and indexes (what scales with the capacities).
  int64_t bytes() const EXCLUDES(mu_);

  // Everything needed to resume: config, column specs, storage, ring positions,
  // generations, priorities, the sampling generator and the limiter's counters.
  // Crash-safe like save_checkpoint (PATH.partial, fsync, rename, fsync dir).
  void save(const std::string& path) const EXCLUDES(mu_);
  // Restores a file written by save() of a replay with the same columns and the
  // same capacity, sequence_length, period, max_streams and priority_exponent.
  // importance_exponent and seed may differ: this replay's beta is kept, and
  // the file's generator state replaces the seeded one.
  void load(const std::string& path) EXCLUDES(mu_);

 private:
  struct Column {
    ColumnSpec spec;
    int64_t value_bytes = 0;  // one step's (step columns) or one block's (start columns)
    torch::Tensor storage;
  };
  // Everything load() replaces, guarded by mu_.
  struct State {
    explicit State(int64_t capacity) : tree(capacity) {}
    std::vector<Column> step_columns;
    std::vector<Column> start_columns;
    std::vector<uint64_t> block_generation;               // [block_capacity], 0: never written
    std::vector<std::vector<SequenceKey>> block_users;    // [block_capacity] live-or-stale keys
    int64_t next_block = 0;
    std::vector<int64_t> sequence_blocks;                 // [capacity * L / g] block slots
    std::vector<uint64_t> sequence_generation;            // [capacity]
    std::vector<uint8_t> sequence_live;                   // [capacity]
    SumTree tree;                                         // leaves: priority^alpha
    int64_t next_sequence = 0;
    int64_t live = 0;
    std::mt19937_64 rng;
    SequenceReplayStats stats;
  };

  State fresh_state() const;  // empty, columns allocated and zeroed
  void check_blocks(const State& s, const std::vector<BlockRef>& blocks, const char* what) const;
  // Copies out the sequences whose block slots are `slots` (L / g per sequence).
  SequenceBatch gather_slots(const State& s, const std::vector<int64_t>& slots) const;
  void remove_sequence(State& s, int64_t slot);

  const SequenceReplayConfig config_;
  const std::vector<ColumnSpec> step_specs_;
  const std::vector<ColumnSpec> start_specs_;
  const int64_t block_length_;
  const int64_t blocks_per_sequence_;
  const int64_t block_capacity_;

  mutable base::Mutex mu_;
  State state_ GUARDED_BY(mu_);
  // Has its own lock, taken after mu_ (insert, sample and load account to it
  // under mu_); its waits run without mu_.
  RateLimiter limiter_;
};

}  // namespace moonseed::engine
