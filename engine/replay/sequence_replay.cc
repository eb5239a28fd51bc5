#include "engine/replay/sequence_replay.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <set>
#include <sstream>
#include <stdexcept>
#include <utility>

#include "base/check.h"
#include "base/text.h"
#include "engine/learner/checkpoint.h"

namespace moonseed::engine {
namespace {

void check_specs(const std::vector<ColumnSpec>& steps, const std::vector<ColumnSpec>& starts) {
  if (steps.empty()) throw std::invalid_argument("SequenceReplay: at least one step column is needed");
  std::set<std::string> names;
  for (const auto* specs : {&steps, &starts}) {
    for (const ColumnSpec& spec : *specs) {
      if (spec.name.empty()) throw std::invalid_argument("SequenceReplay: a column has an empty name");
      if (!names.insert(spec.name).second) {
        throw std::invalid_argument("SequenceReplay: column " + spec.name + " is declared twice");
      }
      for (int64_t d : spec.shape) {
        if (d < 1) {
          throw std::invalid_argument("SequenceReplay: column " + spec.describe() +
                                      " has a dimension < 1");
        }
      }
    }
  }
}

// Checks `t` against a column: same dtype, sizes = leading + the column's shape.
void check_tensor(const ColumnSpec& spec, const torch::Tensor& t, const std::vector<int64_t>& leading,
                  const char* kind) {
  const std::vector<int64_t> want = spec.with_leading(leading);
  if (!t.defined() || t.scalar_type() != spec.dtype || t.sizes() != torch::IntArrayRef(want)) {
    std::ostringstream os;
    os << "SequenceReplay::add_block: " << kind << " column " << spec.name << " needs "
       << c10::toString(spec.dtype) << " " << torch::IntArrayRef(want) << ", got ";
    if (t.defined()) {
      os << t.scalar_type() << " " << t.sizes();
    } else {
      os << "an undefined tensor";
    }
    throw std::invalid_argument(os.str());
  }
}

// Checks that `tensors` names exactly the columns of `specs`.
void check_names(const std::vector<ColumnSpec>& specs, const std::map<std::string, torch::Tensor>& tensors,
                 const char* kind) {
  for (const ColumnSpec& spec : specs) {
    if (tensors.count(spec.name) == 0) {
      throw std::invalid_argument(std::string("SequenceReplay::add_block: ") + kind + " column " +
                                  spec.name + " is missing");
    }
  }
  for (const auto& entry : tensors) {
    // Not a structured binding: C++17 cannot capture one in a lambda (GCC
    // allows it, clang, which checks the locking here, does not).
    const std::string& name = entry.first;
    const bool known = std::any_of(specs.begin(), specs.end(),
                                   [&](const ColumnSpec& s) { return s.name == name; });
    if (!known) {
      throw std::invalid_argument(std::string("SequenceReplay::add_block: there is no ") + kind +
                                  " column " + name + " (" + kind + " columns: " +
                                  describe_columns(specs) + ")");
    }
  }
}

// Copies `t` (any device or layout; checked shape) into `bytes` bytes at `dst`.
void copy_in(const torch::Tensor& t, uint8_t* dst, int64_t bytes, const torch::Tensor& dst_view) {
  if (t.device().is_cpu() && t.is_contiguous()) {
    std::memcpy(dst, t.data_ptr(), static_cast<size_t>(bytes));
  } else {
    dst_view.copy_(t);
  }
}

uint8_t* bytes_of(const torch::Tensor& t) { return static_cast<uint8_t*>(t.data_ptr()); }

double uniform01(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

void check_priority(double priority, const char* where, size_t index) {
  if (!std::isfinite(priority) || priority < 0) {
    throw std::invalid_argument(std::string("SequenceReplay::") + where + ": priority " + base::number_text(priority) +
                                " at index " + std::to_string(index) + " must be finite and >= 0");
  }
}

}  // namespace

std::string ColumnSpec::describe() const {
  std::ostringstream os;
  os << name << " " << c10::toString(dtype) << " [";
  for (size_t i = 0; i < shape.size(); ++i) os << (i ? ", " : "") << shape[i];
  os << "]";
  return os.str();
}

int64_t ColumnSpec::value_bytes() const {
  int64_t n = static_cast<int64_t>(c10::elementSize(dtype));
  for (int64_t d : shape) n *= d;
  return n;
}

std::vector<int64_t> ColumnSpec::with_leading(std::vector<int64_t> leading) const {
  leading.insert(leading.end(), shape.begin(), shape.end());
  return leading;
}

std::string describe_columns(const std::vector<ColumnSpec>& specs) {
  std::string out;
  for (const ColumnSpec& spec : specs) out += (out.empty() ? "" : "; ") + spec.describe();
  return out.empty() ? "(none)" : out;
}

void validate(const SequenceReplayConfig& c) {
  auto positive = [](int64_t v, const char* field) {
    if (v < 1) {
      throw std::invalid_argument(std::string("SequenceReplayConfig: ") + field + " must be >= 1, got " +
                                  std::to_string(v));
    }
  };
  positive(c.capacity, "capacity");
  positive(c.sequence_length, "sequence_length");
  positive(c.period, "period");
  positive(c.max_streams, "max_streams");
  if (c.period > c.sequence_length) {
    throw std::invalid_argument("SequenceReplayConfig: period " + std::to_string(c.period) +
                                " must be <= sequence_length " + std::to_string(c.sequence_length));
  }
  auto exponent = [](double v, const char* field) {
    if (!std::isfinite(v) || v < 0) {
      throw std::invalid_argument(std::string("SequenceReplayConfig: ") + field +
                                  " must be finite and >= 0, got " + base::number_text(v));
    }
  };
  exponent(c.priority_exponent, "priority_exponent");
  exponent(c.importance_exponent, "importance_exponent");
}

// ---------------------------------------------------------------------------
// SequenceAssembler

SequenceAssembler::SequenceAssembler(const SequenceReplayConfig& config) {
  validate(config);
  const int64_t g = std::gcd(config.sequence_length, config.period);
  blocks_per_sequence_ = config.sequence_length / g;
  blocks_per_period_ = config.period / g;
  recent_.resize(static_cast<size_t>(blocks_per_sequence_));
}

std::optional<std::vector<BlockRef>> SequenceAssembler::push(const BlockRef& block) {
  recent_[static_cast<size_t>(pushed_ % blocks_per_sequence_)] = block;
  ++pushed_;
  if (pushed_ < blocks_per_sequence_ || (pushed_ - blocks_per_sequence_) % blocks_per_period_ != 0) {
    return std::nullopt;
  }
  std::vector<BlockRef> sequence;
  sequence.reserve(recent_.size());
  for (int64_t i = 0; i < blocks_per_sequence_; ++i) {
    sequence.push_back(recent_[static_cast<size_t>((pushed_ + i) % blocks_per_sequence_)]);
  }
  return sequence;
}

void SequenceAssembler::reset() { pushed_ = 0; }

// ---------------------------------------------------------------------------
// SequenceReplay

namespace {
const SequenceReplayConfig& validated(const SequenceReplayConfig& config) {
  validate(config);
  return config;
}
}  // namespace

SequenceReplay::SequenceReplay(const SequenceReplayConfig& config, std::vector<ColumnSpec> step_columns,
                               std::vector<ColumnSpec> start_columns, const RateLimiterConfig& limiter,
                               Clock* clock)
    : config_(validated(config)),
      step_specs_((check_specs(step_columns, start_columns), std::move(step_columns))),
      start_specs_(std::move(start_columns)),
      block_length_(std::gcd(config.sequence_length, config.period)),
      blocks_per_sequence_(config.sequence_length / block_length_),
      block_capacity_(config.capacity * (config.period / block_length_) +
                      config.max_streams * (blocks_per_sequence_ + config.period / block_length_)),
      state_(fresh_state()),
      limiter_(limiter, clock) {}

SequenceReplay::State SequenceReplay::fresh_state() const {
  State s(config_.capacity);
  for (const ColumnSpec& spec : step_specs_) {
    s.step_columns.push_back(
        {spec, spec.value_bytes(),
         torch::zeros(spec.with_leading({block_capacity_, block_length_}), torch::dtype(spec.dtype))});
  }
  for (const ColumnSpec& spec : start_specs_) {
    s.start_columns.push_back(
        {spec, spec.value_bytes(), torch::zeros(spec.with_leading({block_capacity_}), torch::dtype(spec.dtype))});
  }
  s.block_generation.assign(static_cast<size_t>(block_capacity_), 0);
  s.block_users.resize(static_cast<size_t>(block_capacity_));
  s.sequence_blocks.assign(static_cast<size_t>(config_.capacity * blocks_per_sequence_), -1);
  s.sequence_generation.assign(static_cast<size_t>(config_.capacity), 0);
  s.sequence_live.assign(static_cast<size_t>(config_.capacity), 0);
  s.rng.seed(config_.seed);
  return s;
}

BlockRef SequenceReplay::add_block(const std::map<std::string, torch::Tensor>& steps,
                                   const std::map<std::string, torch::Tensor>& starts) {
  check_names(step_specs_, steps, "step");
  check_names(start_specs_, starts, "start");
  for (const ColumnSpec& spec : step_specs_) check_tensor(spec, steps.at(spec.name), {block_length_}, "step");
  for (const ColumnSpec& spec : start_specs_) check_tensor(spec, starts.at(spec.name), {}, "start");

  base::MutexLock guard(mu_);
  State& s = state_;
  const int64_t slot = s.next_block;
  const auto b = static_cast<size_t>(slot);
  for (const SequenceKey& user : s.block_users[b]) {
    const auto k = static_cast<size_t>(user.slot);
    if (s.sequence_live[k] && s.sequence_generation[k] == user.generation) {
      remove_sequence(s, user.slot);
      ++s.stats.evicted_by_block_reuse;
    }
  }
  s.block_users[b].clear();
  for (Column& c : s.step_columns) {
    const int64_t bytes = block_length_ * c.value_bytes;
    copy_in(steps.at(c.spec.name), bytes_of(c.storage) + slot * bytes, bytes, c.storage[slot]);
  }
  for (Column& c : s.start_columns) {
    copy_in(starts.at(c.spec.name), bytes_of(c.storage) + slot * c.value_bytes, c.value_bytes, c.storage[slot]);
  }
  const uint64_t generation = ++s.block_generation[b];
  s.next_block = (slot + 1) % block_capacity_;
  ++s.stats.blocks_added;
  return {slot, generation};
}

void SequenceReplay::check_blocks(const State& s, const std::vector<BlockRef>& blocks, const char* what) const {
  if (static_cast<int64_t>(blocks.size()) != blocks_per_sequence_) {
    throw std::invalid_argument(std::string("SequenceReplay::") + what + ": a sequence has " +
                                std::to_string(blocks.size()) + " blocks, it needs sequence_length / g = " +
                                std::to_string(blocks_per_sequence_));
  }
  for (const BlockRef& ref : blocks) {
    base::require_index(ref.slot, block_capacity_, "SequenceReplay::", what, ": block slot");
  }
}

SequenceBatch SequenceReplay::gather_slots(const State& s, const std::vector<int64_t>& slots) const {
  const int64_t n = static_cast<int64_t>(slots.size()) / blocks_per_sequence_;
  const int64_t length = config_.sequence_length;
  SequenceBatch batch;
  for (const Column& c : s.step_columns) {
    torch::Tensor out = torch::empty(c.spec.with_leading({length, n}), torch::dtype(c.spec.dtype));
    const uint8_t* src = bytes_of(c.storage);
    uint8_t* dst = bytes_of(out);
    const auto step = static_cast<size_t>(c.value_bytes);
    // out[t, j] = block (t / g) of sequence j, its step t % g.
    for (int64_t j = 0; j < n; ++j) {
      for (int64_t k = 0; k < blocks_per_sequence_; ++k) {
        const int64_t block = slots[static_cast<size_t>(j * blocks_per_sequence_ + k)];
        for (int64_t i = 0; i < block_length_; ++i) {
          const int64_t t = k * block_length_ + i;
          std::memcpy(dst + static_cast<size_t>(t * n + j) * step,
                      src + static_cast<size_t>(block * block_length_ + i) * step, step);
        }
      }
    }
    batch.steps.emplace(c.spec.name, std::move(out));
  }
  for (const Column& c : s.start_columns) {
    torch::Tensor out = torch::empty(c.spec.with_leading({n}), torch::dtype(c.spec.dtype));
    const auto value = static_cast<size_t>(c.value_bytes);
    for (int64_t j = 0; j < n; ++j) {
      const int64_t block = slots[static_cast<size_t>(j * blocks_per_sequence_)];
      std::memcpy(bytes_of(out) + static_cast<size_t>(j) * value,
                  bytes_of(c.storage) + static_cast<size_t>(block) * value, value);
    }
    batch.starts.emplace(c.spec.name, std::move(out));
  }
  return batch;
}

SequenceBatch SequenceReplay::gather(const std::vector<std::vector<BlockRef>>& sequences) const {
  std::vector<int64_t> slots;
  slots.reserve(sequences.size() * static_cast<size_t>(blocks_per_sequence_));
  base::MutexLock guard(mu_);
  for (const auto& blocks : sequences) {
    check_blocks(state_, blocks, "gather");
    for (const BlockRef& ref : blocks) {
      const uint64_t now = state_.block_generation[static_cast<size_t>(ref.slot)];
      if (ref.generation == 0 || ref.generation != now) {
        throw std::invalid_argument("SequenceReplay::gather: block slot " + std::to_string(ref.slot) +
                                    " generation " + std::to_string(ref.generation) +
                                    " was overwritten (now generation " + std::to_string(now) + ")");
      }
      slots.push_back(ref.slot);
    }
  }
  return gather_slots(state_, slots);
}

void SequenceReplay::remove_sequence(State& s, int64_t slot) {
  s.sequence_live[static_cast<size_t>(slot)] = 0;
  s.tree.set(slot, 0.0);
  --s.live;
}

std::optional<SequenceKey> SequenceReplay::insert(const std::vector<BlockRef>& blocks, double priority) {
  check_priority(priority, "insert", 0);
  const double leaf = std::pow(priority, config_.priority_exponent);
  base::MutexLock guard(mu_);
  State& s = state_;
  check_blocks(s, blocks, "insert");
  for (const BlockRef& ref : blocks) {
    const uint64_t now = s.block_generation[static_cast<size_t>(ref.slot)];
    if (ref.generation == 0 || ref.generation != now) {
      ++s.stats.rejected_inserts;
      return std::nullopt;
    }
  }
  const int64_t slot = s.next_sequence;
  const auto k = static_cast<size_t>(slot);
  if (s.sequence_live[k]) {
    remove_sequence(s, slot);
    ++s.stats.evicted_fifo;
  }
  const SequenceKey key{slot, ++s.sequence_generation[k]};
  s.sequence_live[k] = 1;
  ++s.live;
  s.tree.set(slot, leaf);
  for (size_t i = 0; i < blocks.size(); ++i) {
    const BlockRef& ref = blocks[i];
    s.sequence_blocks[k * blocks.size() + i] = ref.slot;
    // Drop keys of sequences that are gone, so the list stays as short as the
    // number of live sequences that use the block.
    auto& users = s.block_users[static_cast<size_t>(ref.slot)];
    users.erase(std::remove_if(users.begin(), users.end(),
                               [&](const SequenceKey& u) REQUIRES(mu_) {
                                 const auto j = static_cast<size_t>(u.slot);
                                 return !s.sequence_live[j] || s.sequence_generation[j] != u.generation;
                               }),
                users.end());
    users.push_back(key);
  }
  s.next_sequence = (slot + 1) % config_.capacity;
  ++s.stats.inserted;
  limiter_.inserted(1);
  return key;
}

SampledBatch SequenceReplay::sample(int64_t batch_size) {
  if (batch_size < 1) {
    throw std::invalid_argument("SequenceReplay::sample: batch_size must be >= 1, got " +
                                std::to_string(batch_size));
  }
  base::MutexLock guard(mu_);
  State& s = state_;
  if (s.tree.count_set() == 0) {
    throw std::logic_error("SequenceReplay::sample: nothing to sample (" + std::to_string(s.live) +
                           " live sequences, none with a priority > 0)");
  }
  const double total = s.tree.total();
  const double min_leaf = s.tree.min();
  SampledBatch out;
  out.keys.reserve(static_cast<size_t>(batch_size));
  out.probabilities.reserve(static_cast<size_t>(batch_size));
  out.weights.reserve(static_cast<size_t>(batch_size));
  std::vector<int64_t> slots;
  slots.reserve(static_cast<size_t>(batch_size * blocks_per_sequence_));
  for (int64_t i = 0; i < batch_size; ++i) {
    const double mass = (static_cast<double>(i) + uniform01(s.rng)) * total / static_cast<double>(batch_size);
    const int64_t slot = s.tree.find(mass);
    const double leaf = s.tree.get(slot);
    out.keys.push_back({slot, s.sequence_generation[static_cast<size_t>(slot)]});
    out.probabilities.push_back(leaf / total);
    out.weights.push_back(std::pow(min_leaf / leaf, config_.importance_exponent));
    const auto first = s.sequence_blocks.begin() + slot * blocks_per_sequence_;
    slots.insert(slots.end(), first, first + blocks_per_sequence_);
  }
  out.batch = gather_slots(s, slots);
  s.stats.sampled += batch_size;
  limiter_.sampled(batch_size);
  return out;
}

void SequenceReplay::update_priorities(const std::vector<SequenceKey>& keys,
                                       const std::vector<double>& priorities) {
  if (keys.size() != priorities.size()) {
    throw std::invalid_argument("SequenceReplay::update_priorities: " + std::to_string(keys.size()) +
                                " keys but " + std::to_string(priorities.size()) + " priorities");
  }
  for (size_t i = 0; i < keys.size(); ++i) {
    check_priority(priorities[i], "update_priorities", i);
    base::require_index(keys[i].slot, config_.capacity, "SequenceReplay::update_priorities: key ", i, ": slot");
  }
  base::MutexLock guard(mu_);
  State& s = state_;
  for (size_t i = 0; i < keys.size(); ++i) {
    const auto k = static_cast<size_t>(keys[i].slot);
    if (!s.sequence_live[k] || s.sequence_generation[k] != keys[i].generation) {
      ++s.stats.stale_updates;
      continue;
    }
    s.tree.set(keys[i].slot, std::pow(priorities[i], config_.priority_exponent));
  }
}

int64_t SequenceReplay::size() const {
  base::MutexLock guard(mu_);
  return state_.live;
}

SequenceReplayStats SequenceReplay::stats() const {
  base::MutexLock guard(mu_);
  return state_.stats;
}

int64_t SequenceReplay::bytes() const {
  base::MutexLock guard(mu_);
  const State& s = state_;
  int64_t total = 0;
  for (const auto* columns : {&s.step_columns, &s.start_columns}) {
    for (const Column& c : *columns) total += static_cast<int64_t>(c.storage.nbytes());
  }
  total += static_cast<int64_t>(s.block_generation.size() * sizeof(uint64_t));
  for (const auto& users : s.block_users) {
    total += static_cast<int64_t>(sizeof(users) + users.capacity() * sizeof(SequenceKey));
  }
  total += static_cast<int64_t>(s.sequence_blocks.size() * sizeof(int64_t) +
                                s.sequence_generation.size() * sizeof(uint64_t) + s.sequence_live.size());
  return total + s.tree.bytes();
}

}  // namespace moonseed::engine
