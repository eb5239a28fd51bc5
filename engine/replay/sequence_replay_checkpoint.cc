// SequenceReplay::save and load: the replay's checkpoint file (torch::serialize
// archive; docs/replay.md lists its keys).
#include "base/text.h"
#include "engine/replay/sequence_replay.h"

#include <cmath>
#include <filesystem>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "engine/learner/checkpoint.h"

namespace moonseed::engine {
namespace {

// Bumped when the layout of the file changes incompatibly.
constexpr int64_t kFormatVersion = 1;
const char* const kFormatKey = "moonseed_replay_format";

template <typename T>
torch::Tensor tensor_of(const std::vector<T>& values, torch::Dtype dtype, std::vector<int64_t> sizes) {
  static_assert(sizeof(T) == 8 || sizeof(T) == 1, "int64, uint64, double or uint8 values");
  return torch::from_blob(const_cast<T*>(values.data()), sizes, torch::dtype(dtype)).clone();
}

template <typename T>
std::vector<T> values_of(const torch::Tensor& t) {
  const T* p = static_cast<const T*>(t.data_ptr());
  return std::vector<T>(p, p + t.numel());
}

// Reads one replay file; every failure is a CheckpointError naming the path.
class FileReader {
 public:
  FileReader(torch::serialize::InputArchive& archive, const std::string& path)
      : archive_(archive), path_(path) {}

  CheckpointError corrupt(const std::string& what) const {
    return CheckpointError("replay checkpoint " + path_ + " is corrupt: " + what);
  }
  CheckpointError mismatch(const std::string& what) const {
    return CheckpointError("replay checkpoint " + path_ + " does not fit this replay: " + what);
  }

  c10::IValue value(const std::string& key) {
    c10::IValue v;
    if (!archive_.try_read(key, v)) throw corrupt("it has no " + key);
    return v;
  }
  int64_t integer(const std::string& key) {
    const c10::IValue v = value(key);
    if (!v.isInt()) throw corrupt(key + " is not an integer");
    return v.toInt();
  }
  double real(const std::string& key) {
    const c10::IValue v = value(key);
    if (!v.isDouble()) throw corrupt(key + " is not a number");
    return v.toDouble();
  }
  std::string string(const std::string& key) {
    const c10::IValue v = value(key);
    if (!v.isString()) throw corrupt(key + " is not a string");
    return v.toStringRef();
  }
  torch::Tensor tensor(const std::string& key, torch::Dtype dtype, const std::vector<int64_t>& sizes) {
    torch::Tensor t;
    if (!archive_.try_read(key, t, /*is_buffer=*/true)) throw corrupt("it has no tensor " + key);
    if (t.scalar_type() != dtype || t.sizes() != torch::IntArrayRef(sizes)) {
      std::ostringstream os;
      os << key << " is " << t.scalar_type() << " " << t.sizes() << ", expected " << c10::toString(dtype)
         << " " << torch::IntArrayRef(sizes);
      throw corrupt(os.str());
    }
    return t.contiguous();
  }
  // A saved config value that must equal this replay's.
  template <typename T>
  void expect_same(const std::string& key, T saved, T current) {
    if (saved != current) {
      std::ostringstream os;
      os.precision(17);
      os << key << " is " << saved << " in the file but " << current << " in this replay";
      throw mismatch(os.str());
    }
  }

 private:
  torch::serialize::InputArchive& archive_;
  const std::string& path_;
};

}  // namespace

void SequenceReplay::save(const std::string& path) const {
  torch::serialize::OutputArchive archive;
  base::MutexLock guard(mu_);
  const State& s = state_;
  archive.write(kFormatKey, c10::IValue(kFormatVersion));
  archive.write("capacity", c10::IValue(config_.capacity));
  archive.write("sequence_length", c10::IValue(config_.sequence_length));
  archive.write("period", c10::IValue(config_.period));
  archive.write("max_streams", c10::IValue(config_.max_streams));
  archive.write("priority_exponent", c10::IValue(config_.priority_exponent));
  archive.write("step_columns", c10::IValue(describe_columns(step_specs_)));
  archive.write("start_columns", c10::IValue(describe_columns(start_specs_)));
  // The archive keeps references: the file is written under the lock.
  for (size_t i = 0; i < s.step_columns.size(); ++i) {
    archive.write("step_column_" + std::to_string(i), s.step_columns[i].storage, /*is_buffer=*/true);
  }
  for (size_t i = 0; i < s.start_columns.size(); ++i) {
    archive.write("start_column_" + std::to_string(i), s.start_columns[i].storage, /*is_buffer=*/true);
  }
  const int64_t capacity = config_.capacity;
  archive.write("block_generation", tensor_of(s.block_generation, torch::kInt64, {block_capacity_}), true);
  archive.write("next_block", c10::IValue(s.next_block));
  archive.write("sequence_blocks",
                tensor_of(s.sequence_blocks, torch::kInt64, {capacity, blocks_per_sequence_}), true);
  archive.write("sequence_generation", tensor_of(s.sequence_generation, torch::kInt64, {capacity}), true);
  archive.write("sequence_live", tensor_of(s.sequence_live, torch::kUInt8, {capacity}), true);
  std::vector<double> leaves(static_cast<size_t>(capacity));
  for (int64_t i = 0; i < capacity; ++i) leaves[static_cast<size_t>(i)] = s.tree.get(i);
  archive.write("leaves", tensor_of(leaves, torch::kFloat64, {capacity}), true);
  archive.write("next_sequence", c10::IValue(s.next_sequence));
  std::ostringstream rng;
  rng << s.rng;
  archive.write("rng", c10::IValue(rng.str()));
  const SequenceReplayStats& st = s.stats;
  archive.write("stats", c10::IValue(std::vector<int64_t>{
                             st.blocks_added, st.inserted, st.rejected_inserts, st.sampled,
                             st.stale_updates, st.evicted_fifo, st.evicted_by_block_reuse}));
  const RateLimiterCounters counters = limiter_.counters();
  archive.write("limiter_inserts", c10::IValue(counters.inserts));
  archive.write("limiter_samples", c10::IValue(counters.samples));
  write_archive_atomically(archive, path, "replay checkpoint");
}

void SequenceReplay::load(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) throw CheckpointError("replay checkpoint not found: " + path);
  torch::serialize::InputArchive archive;
  try {
    archive.load_from(path, torch::Device(torch::kCPU));
  } catch (const c10::Error& e) {
    throw CheckpointError("replay checkpoint " + path + " cannot be read (truncated or corrupt): " +
                          short_reason(e));
  }
  FileReader in(archive, path);
  const int64_t capacity = config_.capacity;
  State s(capacity);
  RateLimiterCounters counters;
  try {
    c10::IValue format;
    if (!archive.try_read(kFormatKey, format) || !format.isInt()) {
      throw CheckpointError("file " + path + " is not a Moonseed replay checkpoint");
    }
    if (format.toInt() != kFormatVersion) {
      throw CheckpointError("replay checkpoint " + path + " has format " + std::to_string(format.toInt()) +
                            ", this build reads format " + std::to_string(kFormatVersion));
    }
    in.expect_same("capacity", in.integer("capacity"), config_.capacity);
    in.expect_same("sequence_length", in.integer("sequence_length"), config_.sequence_length);
    in.expect_same("period", in.integer("period"), config_.period);
    in.expect_same("max_streams", in.integer("max_streams"), config_.max_streams);
    in.expect_same("priority_exponent", in.real("priority_exponent"), config_.priority_exponent);
    in.expect_same("step_columns", in.string("step_columns"), describe_columns(step_specs_));
    in.expect_same("start_columns", in.string("start_columns"), describe_columns(start_specs_));

    for (size_t i = 0; i < step_specs_.size(); ++i) {
      const ColumnSpec& spec = step_specs_[i];
      s.step_columns.push_back({spec, spec.value_bytes(),
                                in.tensor("step_column_" + std::to_string(i), spec.dtype,
                                          spec.with_leading({block_capacity_, block_length_}))});
    }
    for (size_t i = 0; i < start_specs_.size(); ++i) {
      const ColumnSpec& spec = start_specs_[i];
      s.start_columns.push_back({spec, spec.value_bytes(),
                                 in.tensor("start_column_" + std::to_string(i), spec.dtype,
                                           spec.with_leading({block_capacity_}))});
    }
    s.block_generation = values_of<uint64_t>(in.tensor("block_generation", torch::kInt64, {block_capacity_}));
    s.block_users.resize(static_cast<size_t>(block_capacity_));
    s.next_block = in.integer("next_block");
    if (s.next_block < 0 || s.next_block >= block_capacity_) throw in.corrupt("next_block is out of range");
    s.sequence_blocks =
        values_of<int64_t>(in.tensor("sequence_blocks", torch::kInt64, {capacity, blocks_per_sequence_}));
    s.sequence_generation = values_of<uint64_t>(in.tensor("sequence_generation", torch::kInt64, {capacity}));
    s.sequence_live = values_of<uint8_t>(in.tensor("sequence_live", torch::kUInt8, {capacity}));
    const std::vector<double> leaves = values_of<double>(in.tensor("leaves", torch::kFloat64, {capacity}));
    s.next_sequence = in.integer("next_sequence");
    if (s.next_sequence < 0 || s.next_sequence >= capacity) throw in.corrupt("next_sequence is out of range");

    for (int64_t i = 0; i < capacity; ++i) {
      const auto k = static_cast<size_t>(i);
      if (!std::isfinite(leaves[k]) || leaves[k] < 0 || (leaves[k] > 0 && !s.sequence_live[k])) {
        throw in.corrupt("priority " + base::number_text(leaves[k]) + " of sequence slot " + std::to_string(i));
      }
      if (!s.sequence_live[k]) continue;
      s.tree.set(i, leaves[k]);
      ++s.live;
      for (int64_t j = 0; j < blocks_per_sequence_; ++j) {
        const int64_t block = s.sequence_blocks[static_cast<size_t>(i * blocks_per_sequence_ + j)];
        if (block < 0 || block >= block_capacity_ || s.block_generation[static_cast<size_t>(block)] == 0) {
          throw in.corrupt("sequence slot " + std::to_string(i) + " uses block slot " + std::to_string(block));
        }
        s.block_users[static_cast<size_t>(block)].push_back({i, s.sequence_generation[k]});
      }
    }
    std::istringstream rng(in.string("rng"));
    rng >> s.rng;
    if (rng.fail()) throw in.corrupt("the sampling generator's state cannot be parsed");
    const c10::IValue stats = in.value("stats");
    if (!stats.isIntList() || stats.toIntList().size() != 7) throw in.corrupt("stats is not a list of 7 integers");
    const auto st = stats.toIntVector();
    s.stats = {st[0], st[1], st[2], st[3], st[4], st[5], st[6]};
    counters.inserts = in.integer("limiter_inserts");
    counters.samples = in.integer("limiter_samples");
    if (counters.inserts < 0 || counters.samples < 0) throw in.corrupt("negative rate limiter counters");
  } catch (const c10::Error& e) {
    throw in.corrupt(short_reason(e));
  }
  base::MutexLock guard(mu_);
  state_ = std::move(s);
  limiter_.restore(counters);
}

}  // namespace moonseed::engine
