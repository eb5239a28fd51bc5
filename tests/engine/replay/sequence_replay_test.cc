#include "engine/replay/sequence_replay.h"

#include <stdlib.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "engine/learner/checkpoint.h"
#include "tests/error_text.h"

namespace moonseed::engine {
namespace {

using test::error_text;

namespace fs = std::filesystem;
using Tensors = std::map<std::string, torch::Tensor>;

// Small geometry: L = 4, period 2, so g = 2, 2 blocks per sequence, a new
// sequence every block; block ring = capacity * 1 + max_streams * (2 + 1).
SequenceReplayConfig small_config(int64_t capacity = 4, int64_t max_streams = 1) {
  SequenceReplayConfig c;
  c.capacity = capacity;
  c.sequence_length = 4;
  c.period = 2;
  c.priority_exponent = 1.0;
  c.importance_exponent = 0.5;
  c.seed = 7;
  c.max_streams = max_streams;
  return c;
}

// Step columns: "step" int64 {} (an id: stream * 1000 + step index) and "obs"
// float {2} (the id and its negation); start column "h" float {3} (the id of
// the block's first step, three times).
std::vector<ColumnSpec> step_columns() {
  return {{"step", torch::kInt64, {}}, {"obs", torch::kFloat32, {2}}};
}
std::vector<ColumnSpec> start_columns() { return {{"h", torch::kFloat32, {3}}}; }

SequenceReplay make_replay(const SequenceReplayConfig& c, const RateLimiterConfig& limiter = {}) {
  return SequenceReplay(c, step_columns(), start_columns(), limiter);
}

// The steps of block `index` of a stream with g = `g`.
Tensors block_steps(int64_t stream, int64_t index, int64_t g) {
  const torch::Tensor ids = torch::arange(index * g, (index + 1) * g, torch::kInt64) + stream * 1000;
  return {{"step", ids}, {"obs", torch::stack({ids, -ids}, 1).to(torch::kFloat32)}};
}
Tensors block_starts(int64_t stream, int64_t index, int64_t g) {
  return {{"h", torch::full({3}, static_cast<float>(stream * 1000 + index * g))}};
}

BlockRef add(SequenceReplay& replay, int64_t stream, int64_t index) {
  const int64_t g = replay.block_length();
  return replay.add_block(block_steps(stream, index, g), block_starts(stream, index, g));
}

// Adds blocks 0..n-1 of stream 0 and inserts every sequence they complete with
// the given priorities (one per sequence, in order).
std::vector<SequenceKey> insert_stream(SequenceReplay& replay, const std::vector<double>& priorities) {
  SequenceAssembler assembler(replay.config());
  std::vector<SequenceKey> keys;
  for (int64_t b = 0; keys.size() < priorities.size(); ++b) {
    if (auto seq = assembler.push(add(replay, 0, b))) {
      keys.push_back(replay.insert(*seq, priorities[keys.size()]).value());
    }
  }
  return keys;
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// ---------------------------------------------------------------------------
// Config, columns and geometry

TEST(SequenceReplayTest, RejectsABadConfigNamingTheField) {
  auto with = [](auto change) {
    SequenceReplayConfig c = small_config();
    change(c);
    return error_text([&] { validate(c); });
  };
  EXPECT_TRUE(contains(with([](auto& c) { c.capacity = 0; }), "capacity"));
  EXPECT_TRUE(contains(with([](auto& c) { c.sequence_length = 0; }), "sequence_length"));
  EXPECT_TRUE(contains(with([](auto& c) { c.period = 5; }), "period 5"));
  EXPECT_TRUE(contains(with([](auto& c) { c.max_streams = 0; }), "max_streams"));
  EXPECT_TRUE(contains(with([](auto& c) { c.priority_exponent = -1; }), "priority_exponent"));
  EXPECT_TRUE(contains(with([](auto& c) { c.importance_exponent = NAN; }), "importance_exponent"));
}

TEST(SequenceReplayTest, RejectsBadColumnSpecs) {
  const SequenceReplayConfig c = small_config();
  EXPECT_TRUE(contains(error_text([&] { SequenceReplay r(c, {}, start_columns()); }), "step column"));
  EXPECT_TRUE(contains(error_text([&] { SequenceReplay r(c, step_columns(), {{"obs", torch::kFloat32, {1}}}); }),
                       "obs is declared twice"));
  EXPECT_TRUE(contains(error_text([&] { SequenceReplay r(c, {{"x", torch::kFloat32, {0}}}, {}); }), "x Float [0]"));
}

TEST(SequenceReplayTest, BlocksAreTheGcdOfLengthAndPeriod) {
  SequenceReplayConfig r2d2;  // defaults: 120, period 40, capacity 10000, 256 streams
  SequenceReplay a(r2d2, {{"reward", torch::kFloat32, {}}}, {});
  EXPECT_EQ(a.block_length(), 40);
  EXPECT_EQ(a.blocks_per_sequence(), 3);
  EXPECT_EQ(a.block_capacity(), 10000 * 1 + 256 * (3 + 1));

  SequenceReplayConfig c = small_config(10, 2);
  c.sequence_length = 6;
  c.period = 4;
  SequenceReplay b(c, {{"reward", torch::kFloat32, {}}}, {});
  EXPECT_EQ(b.block_length(), 2);
  EXPECT_EQ(b.blocks_per_sequence(), 3);
  EXPECT_EQ(b.block_capacity(), 10 * 2 + 2 * (3 + 2));
}

TEST(SequenceReplayTest, AssemblerYieldsASequenceEveryPeriodOnceEnoughBlocksArrived) {
  SequenceReplayConfig c = small_config();
  c.sequence_length = 6;
  c.period = 4;  // g 2: 3 blocks per sequence, a new one every 2 blocks
  SequenceAssembler assembler(c);
  auto push = [&](int64_t slot) { return assembler.push({slot, 1}); };
  auto slots = [](const std::vector<BlockRef>& seq) {
    std::vector<int64_t> out;
    for (const BlockRef& b : seq) out.push_back(b.slot);
    return out;
  };
  EXPECT_FALSE(push(0));
  EXPECT_FALSE(push(1));
  EXPECT_EQ(slots(push(2).value()), (std::vector<int64_t>{0, 1, 2}));
  EXPECT_FALSE(push(3));
  EXPECT_EQ(slots(push(4).value()), (std::vector<int64_t>{2, 3, 4}));
  EXPECT_FALSE(push(5));
  EXPECT_EQ(slots(push(6).value()), (std::vector<int64_t>{4, 5, 6}));
  assembler.reset();
  EXPECT_FALSE(push(7));
  EXPECT_FALSE(push(8));
  EXPECT_EQ(slots(push(9).value()), (std::vector<int64_t>{7, 8, 9}));
}

// ---------------------------------------------------------------------------
// Blocks and gathering

TEST(SequenceReplayTest, AddBlockRejectsWrongColumnsNamingThem) {
  SequenceReplay replay = make_replay(small_config());
  const Tensors starts = block_starts(0, 0, 2);
  auto steps_with = [](const std::string& name, torch::Tensor t) {
    Tensors s = block_steps(0, 0, 2);
    s[name] = t;
    return s;
  };
  const std::string dtype = error_text([&] { replay.add_block(steps_with("obs", torch::zeros({2, 2}, torch::kFloat64)), starts); });
  EXPECT_TRUE(contains(dtype, "obs")) << dtype;
  EXPECT_TRUE(contains(dtype, "Double")) << dtype;
  const std::string shape = error_text([&] { replay.add_block(steps_with("obs", torch::zeros({2, 3})), starts); });
  EXPECT_TRUE(contains(shape, "obs needs Float [2, 2]")) << shape;
  EXPECT_TRUE(contains(error_text([&] { replay.add_block(steps_with("extra", torch::zeros({2})), starts); }),
                       "no step column extra"));
  Tensors missing = block_steps(0, 0, 2);
  missing.erase("step");
  EXPECT_TRUE(contains(error_text([&] { replay.add_block(missing, starts); }), "step column step is missing"));
  EXPECT_TRUE(contains(error_text([&] { replay.add_block(block_steps(0, 0, 2), {}); }), "start column h"));
  EXPECT_TRUE(contains(error_text([&] { replay.add_block(block_steps(0, 0, 2), {{"h", torch::zeros({4})}}); }),
                       "h needs Float [3]"));
  EXPECT_EQ(replay.stats().blocks_added, 0);
}

TEST(SequenceReplayTest, GatherIsTimeMajorAndStartsComeFromTheFirstBlock) {
  SequenceReplay replay = make_replay(small_config());
  const BlockRef a0 = add(replay, 1, 0);  // steps 1000, 1001
  const BlockRef a1 = add(replay, 1, 1);  // 1002, 1003
  const BlockRef b0 = add(replay, 2, 0);  // 2000, 2001
  const BlockRef b1 = add(replay, 2, 1);  // 2002, 2003
  const SequenceBatch batch = replay.gather({{a0, a1}, {b0, b1}});
  const torch::Tensor expected_steps =
      torch::tensor({1000, 2000, 1001, 2001, 1002, 2002, 1003, 2003}, torch::kInt64).view({4, 2});
  EXPECT_TRUE(torch::equal(batch.steps.at("step"), expected_steps)) << batch.steps.at("step");
  EXPECT_TRUE(torch::equal(batch.steps.at("obs").select(2, 1), -expected_steps.to(torch::kFloat32)));
  EXPECT_EQ(batch.steps.at("obs").sizes(), (std::vector<int64_t>{4, 2, 2}));
  EXPECT_TRUE(torch::equal(batch.starts.at("h"),
                           torch::tensor({1000.f, 1000.f, 1000.f, 2000.f, 2000.f, 2000.f}).view({2, 3})));
}

TEST(SequenceReplayTest, GatherCopiesUint8ObservationsExactly) {
  SequenceReplay replay(small_config(), {{"obs", torch::kUInt8, {2, 3}}}, {});
  const torch::Tensor first = torch::arange(0, 12, torch::kUInt8).view({2, 2, 3});
  const torch::Tensor second = torch::arange(200, 212, torch::kUInt8).view({2, 2, 3});
  const BlockRef a = replay.add_block({{"obs", first}}, {});
  const BlockRef b = replay.add_block({{"obs", second}}, {});
  const SequenceBatch batch = replay.gather({{a, b}});
  const torch::Tensor obs = batch.steps.at("obs");
  EXPECT_EQ(obs.scalar_type(), torch::kUInt8);
  EXPECT_TRUE(torch::equal(obs, torch::cat({first, second}).view({4, 1, 2, 3})));
}

TEST(SequenceReplayTest, AddBlockCopiesNonContiguousInputs) {
  SequenceReplay replay(small_config(), {{"obs", torch::kFloat32, {2}}}, {});
  const torch::Tensor transposed = torch::tensor({1.f, 2.f, 3.f, 4.f}).view({2, 2}).t();  // [[1, 3], [2, 4]]
  const BlockRef a = replay.add_block({{"obs", transposed}}, {});
  const BlockRef b = replay.add_block({{"obs", torch::zeros({2, 2})}}, {});
  const torch::Tensor obs = replay.gather({{a, b}}).steps.at("obs");
  EXPECT_TRUE(torch::equal(obs.select(1, 0).narrow(0, 0, 2), transposed));
}

TEST(SequenceReplayTest, OverlappingSequencesShareBlocksAndUseLessMemoryThanCopies) {
  SequenceReplay replay = make_replay(small_config());
  const BlockRef b0 = add(replay, 0, 0), b1 = add(replay, 0, 1), b2 = add(replay, 0, 2);
  const SequenceBatch batch = replay.gather({{b0, b1}, {b1, b2}});
  const torch::Tensor steps = batch.steps.at("step");
  // Steps 2..3 of the first sequence are steps 0..1 of the second: the same stored block.
  EXPECT_TRUE(torch::equal(steps.select(1, 0).narrow(0, 2, 2), steps.select(1, 1).narrow(0, 0, 2)));
  EXPECT_TRUE(torch::equal(steps.select(1, 1), torch::tensor({2, 3, 4, 5}, torch::kInt64)));

  // R2D2-like proportions: L = 6, period 2 (3 blocks per sequence, 1 new per
  // sequence); a step of 256 bytes.
  SequenceReplayConfig c = small_config(50, 2);
  c.sequence_length = 6;
  SequenceReplay big(c, {{"obs", torch::kUInt8, {256}}}, {{"h", torch::kFloat32, {4}}});
  const int64_t copying = c.capacity * (6 * 256 + 4 * 4);
  const int64_t blocks = 50 + 2 * (3 + 1);
  EXPECT_GE(big.bytes(), blocks * (2 * 256 + 4 * 4));
  EXPECT_LT(big.bytes(), copying * 6 / 10) << big.bytes() << " vs " << copying;
}

// ---------------------------------------------------------------------------
// Inserting, sampling, priorities

TEST(SequenceReplayTest, InsertRejectsWrongBlockCountsAndPriorities) {
  SequenceReplay replay = make_replay(small_config());
  const BlockRef b0 = add(replay, 0, 0), b1 = add(replay, 0, 1);
  EXPECT_TRUE(contains(error_text([&] { replay.insert({b0}, 1.0); }), "1 blocks"));
  EXPECT_TRUE(contains(error_text([&] { replay.insert({b0, {99, 1}}, 1.0); }), "block slot 99"));
  EXPECT_TRUE(contains(error_text([&] { replay.insert({b0, b1}, -2.0); }), "priority -2"));
  EXPECT_THROW(replay.insert({b0, b1}, NAN), std::invalid_argument);
  EXPECT_EQ(replay.size(), 0);
}

TEST(SequenceReplayTest, SampleOfAnEmptyReplayIsALogicError) {
  SequenceReplay replay = make_replay(small_config());
  EXPECT_THROW(replay.sample(4), std::logic_error);
  EXPECT_THROW(replay.sample(0), std::invalid_argument);
}

TEST(SequenceReplayTest, ImportanceWeightsFollowTheFormulaOnAHandExample) {
  // Priorities 1, 2, 4 with alpha 1: P = 1/7, 2/7, 4/7; N = 3, beta 0.5:
  // (N P)^-beta = (3/7)^-0.5, (6/7)^-0.5, (12/7)^-0.5; divided by the largest,
  // (3/7)^-0.5: 1, sqrt(1/2), 1/2.
  SequenceReplay replay = make_replay(small_config());
  const std::vector<SequenceKey> keys = insert_stream(replay, {1, 2, 4});
  const SampledBatch batch = replay.sample(35);
  const std::map<int64_t, std::pair<double, double>> expected = {
      {keys[0].slot, {1.0 / 7, 1.0}}, {keys[1].slot, {2.0 / 7, std::sqrt(0.5)}}, {keys[2].slot, {4.0 / 7, 0.5}}};
  std::map<int64_t, int> seen;
  for (size_t i = 0; i < batch.keys.size(); ++i) {
    const auto& [p, w] = expected.at(batch.keys[i].slot);
    EXPECT_DOUBLE_EQ(batch.probabilities[i], p);
    EXPECT_DOUBLE_EQ(batch.weights[i], w);
    ++seen[batch.keys[i].slot];
  }
  // 35 strata of width 1/5 over [0, 7): exactly 5, 10 and 20 land in each.
  EXPECT_EQ(seen[keys[0].slot], 5);
  EXPECT_EQ(seen[keys[1].slot], 10);
  EXPECT_EQ(seen[keys[2].slot], 20);
}

TEST(SequenceReplayTest, StratifiedSamplingFrequenciesMatchPriorityToTheAlpha) {
  SequenceReplayConfig c = small_config(4);
  c.priority_exponent = 0.5;
  SequenceReplay replay = make_replay(c);
  const std::vector<double> raw = {1, 3, 0.5, 7};
  const std::vector<SequenceKey> keys = insert_stream(replay, raw);
  double total = 0;
  for (double p : raw) total += std::sqrt(p);
  std::map<int64_t, int> counts;
  constexpr int kBatches = 2000, kBatch = 7;  // 7 does not divide the priorities evenly
  for (int i = 0; i < kBatches; ++i) {
    for (const SequenceKey& k : replay.sample(kBatch).keys) ++counts[k.slot];
  }
  const double n = kBatches * kBatch;
  for (size_t i = 0; i < raw.size(); ++i) {
    const double p = std::sqrt(raw[i]) / total;
    // Stratification only lowers the variance below the binomial one.
    EXPECT_NEAR(counts[keys[i].slot], n * p, 5 * std::sqrt(n * p * (1 - p))) << "sequence " << i;
  }
  EXPECT_EQ(replay.stats().sampled, kBatches * kBatch);
}

TEST(SequenceReplayTest, SampledSequencesCarryTheirStoredSteps) {
  SequenceReplay replay = make_replay(small_config());
  const std::vector<SequenceKey> keys = insert_stream(replay, {1, 1, 1});  // blocks 0-1, 1-2, 2-3
  const SampledBatch batch = replay.sample(6);
  const torch::Tensor steps = batch.batch.steps.at("step");
  for (int64_t j = 0; j < 6; ++j) {
    int64_t which = 0;
    while (!(keys[static_cast<size_t>(which)] == batch.keys[static_cast<size_t>(j)])) ++which;
    const int64_t first = which * 2;  // sequence i starts at block i, step 2i
    EXPECT_TRUE(torch::equal(steps.select(1, j), torch::arange(first, first + 4, torch::kInt64))) << j;
    EXPECT_EQ(batch.batch.starts.at("h")[j][0].item<float>(), static_cast<float>(first));
  }
}

TEST(SequenceReplayTest, UpdatePrioritiesChangesSamplingAndZeroStopsIt) {
  SequenceReplay replay = make_replay(small_config());
  const std::vector<SequenceKey> keys = insert_stream(replay, {1, 1});
  replay.update_priorities({keys[0], keys[1]}, {0.0, 5.0});
  for (int i = 0; i < 20; ++i) {
    const SampledBatch batch = replay.sample(3);
    for (size_t j = 0; j < 3; ++j) {
      EXPECT_EQ(batch.keys[j], keys[1]);
      EXPECT_DOUBLE_EQ(batch.probabilities[j], 1.0);
      EXPECT_DOUBLE_EQ(batch.weights[j], 1.0);
    }
  }
  EXPECT_THROW(replay.update_priorities({keys[0]}, {}), std::invalid_argument);
  EXPECT_TRUE(contains(error_text([&] { replay.update_priorities({keys[0]}, {-1.0}); }), "priority -1"));
}

TEST(SequenceReplayTest, InsertingIntoAFullReplayEvictsTheOldestSequence) {
  SequenceReplay replay = make_replay(small_config(3));
  const std::vector<SequenceKey> keys = insert_stream(replay, {1, 1, 1, 1});
  EXPECT_EQ(replay.size(), 3);
  EXPECT_EQ(replay.stats().evicted_fifo, 1);
  EXPECT_EQ(keys[3].slot, keys[0].slot);
  EXPECT_EQ(keys[3].generation, keys[0].generation + 1);
  for (int i = 0; i < 10; ++i) {
    for (const SequenceKey& k : replay.sample(3).keys) EXPECT_FALSE(k == keys[0]);
  }
}

TEST(SequenceReplayTest, StalePriorityUpdatesAfterTheSlotWasOverwrittenAreIgnored) {
  SequenceReplay replay = make_replay(small_config(2));
  const std::vector<SequenceKey> keys = insert_stream(replay, {1, 1, 3});  // the third replaces the first
  replay.update_priorities({keys[0], keys[1]}, {100.0, 1.0});
  EXPECT_EQ(replay.stats().stale_updates, 1);
  const SampledBatch batch = replay.sample(4);
  for (size_t j = 0; j < batch.keys.size(); ++j) {
    EXPECT_DOUBLE_EQ(batch.probabilities[j], batch.keys[j] == keys[2] ? 0.75 : 0.25);
  }
}

TEST(SequenceReplayTest, OverwritingABlockRemovesTheSequencesThatUseIt) {
  SequenceReplay replay = make_replay(small_config(4, 1));  // 4 + 1 * 3 = 7 blocks
  ASSERT_EQ(replay.block_capacity(), 7);
  const BlockRef b0 = add(replay, 0, 0), b1 = add(replay, 0, 1);
  const SequenceKey key = replay.insert({b0, b1}, 1.0).value();
  for (int64_t i = 2; i < 7; ++i) add(replay, 1, i);
  EXPECT_EQ(replay.size(), 1);  // every slot written once, nothing reused yet
  add(replay, 1, 7);            // reuses slot 0
  EXPECT_EQ(replay.size(), 0);
  EXPECT_EQ(replay.stats().evicted_by_block_reuse, 1);
  EXPECT_THROW(replay.sample(1), std::logic_error);
  EXPECT_EQ(replay.insert({b0, b1}, 1.0), std::nullopt);
  EXPECT_EQ(replay.stats().rejected_inserts, 1);
  EXPECT_TRUE(contains(error_text([&] { replay.gather({{b0, b1}}); }), "was overwritten"));
  replay.update_priorities({key}, {2.0});  // its key is stale, not revived
  EXPECT_EQ(replay.stats().stale_updates, 1);
  EXPECT_EQ(replay.size(), 0);
}

// Streams that add blocks round-robin, each inserting its sequences as soon as
// they are complete; returns the replay's stats after `rounds` rounds, and
// checks that every sampled sequence is L consecutive steps of one stream.
SequenceReplayStats round_robin(const SequenceReplayConfig& c, int64_t streams, int64_t rounds) {
  SequenceReplay replay = make_replay(c);
  std::vector<SequenceAssembler> assemblers(static_cast<size_t>(streams), SequenceAssembler(c));
  for (int64_t r = 0; r < rounds; ++r) {
    for (int64_t s = 0; s < streams; ++s) {
      if (auto seq = assemblers[static_cast<size_t>(s)].push(add(replay, s, r))) replay.insert(*seq, 1.0);
    }
  }
  const torch::Tensor steps = replay.sample(16).batch.steps.at("step");
  for (int64_t j = 0; j < 16; ++j) {
    const torch::Tensor seq = steps.select(1, j);
    EXPECT_TRUE(torch::equal(seq, torch::arange(c.sequence_length, torch::kInt64) + seq[0])) << seq;
  }
  return replay.stats();
}

TEST(SequenceReplayTest, UpToMaxStreamsRoundRobinStreamsNeverLoseASequenceToBlockReuse) {
  SequenceReplayConfig overlap = small_config(8, 3);
  overlap.sequence_length = 6;  // period 2: 3 blocks per sequence, a new one every block
  SequenceReplayStats s = round_robin(overlap, 3, 200);
  EXPECT_EQ(s.evicted_by_block_reuse, 0);
  EXPECT_EQ(s.rejected_inserts, 0);
  EXPECT_EQ(s.inserted, 3 * (200 - 2));

  SequenceReplayConfig sparse = small_config(8, 3);
  sparse.sequence_length = 6;
  sparse.period = 4;  // 3 blocks per sequence, a new one every 2 blocks
  s = round_robin(sparse, 3, 201);
  EXPECT_EQ(s.evicted_by_block_reuse, 0);
  EXPECT_EQ(s.rejected_inserts, 0);
  EXPECT_EQ(s.inserted, 3 * 100);

  // Fewer streams than the ring is sized for: still none.
  EXPECT_EQ(round_robin(overlap, 1, 100).evicted_by_block_reuse, 0);
}

TEST(SequenceReplayTest, MoreStreamsThanMaxStreamsEvictByBlockReuseAndStayConsistent) {
  // 8 + 1 * 4 = 12 blocks; 4 streams: a sequence's first block is 8 blocks
  // old when it is inserted and is overwritten 4 blocks later, long before the
  // 8 inserts of FIFO eviction.
  SequenceReplayConfig c = small_config(8, 1);
  c.sequence_length = 6;
  const SequenceReplayStats s = round_robin(c, 4, 100);
  EXPECT_EQ(s.rejected_inserts, 0);
  EXPECT_EQ(s.evicted_by_block_reuse, s.inserted - 4);
  EXPECT_EQ(s.evicted_fifo, 0);
}

// ---------------------------------------------------------------------------
// Rate limiter inside

TEST(SequenceReplayTest, InsertAndSampleAccountToTheRateLimiter) {
  RateLimiterConfig limiter;
  limiter.min_size_to_sample = 2;
  SequenceReplay replay = make_replay(small_config(), limiter);
  EXPECT_FALSE(replay.await_sample(1, std::chrono::milliseconds(0)));
  insert_stream(replay, {1});
  EXPECT_FALSE(replay.await_sample(1, std::chrono::milliseconds(0)));
  insert_stream(replay, {1});
  EXPECT_TRUE(replay.await_sample(1, std::chrono::milliseconds(0)));
  replay.sample(5);
  EXPECT_EQ(replay.rate_limiter().stats().inserts, 2);
  EXPECT_EQ(replay.rate_limiter().stats().samples, 5);
}

// ---------------------------------------------------------------------------
// Checkpoints

class SequenceReplayFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "moonseed-replay-XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  fs::path dir_;
};

void expect_same_batch(const SampledBatch& a, const SampledBatch& b) {
  ASSERT_EQ(a.keys.size(), b.keys.size());
  for (size_t i = 0; i < a.keys.size(); ++i) {
    EXPECT_EQ(a.keys[i], b.keys[i]);
    EXPECT_EQ(a.probabilities[i], b.probabilities[i]);
    EXPECT_EQ(a.weights[i], b.weights[i]);
  }
  for (const auto& [name, t] : a.batch.steps) EXPECT_TRUE(torch::equal(t, b.batch.steps.at(name))) << name;
  for (const auto& [name, t] : a.batch.starts) EXPECT_TRUE(torch::equal(t, b.batch.starts.at(name))) << name;
}

TEST_F(SequenceReplayFileTest, RoundTripSamplesTheSameBatchAndKeepsCounters) {
  SequenceReplay saved = make_replay(small_config(4));
  const std::vector<SequenceKey> keys = insert_stream(saved, {1, 2, 3, 4, 5});  // one FIFO eviction
  saved.update_priorities({keys[2]}, {0.5});
  saved.sample(3);  // moves the generator
  saved.save(path("replay.pt"));
  EXPECT_FALSE(fs::exists(path("replay.pt.partial")));
  const SampledBatch expected = saved.sample(8);

  SequenceReplayConfig other_seed = small_config(4);
  other_seed.seed = 12345;
  SequenceReplay loaded = make_replay(other_seed);
  loaded.load(path("replay.pt"));
  EXPECT_EQ(loaded.size(), 4);
  expect_same_batch(loaded.sample(8), expected);
  const SequenceReplayStats a = saved.stats(), b = loaded.stats();
  EXPECT_EQ(a.blocks_added, b.blocks_added);
  EXPECT_EQ(a.inserted, b.inserted);
  EXPECT_EQ(a.sampled, b.sampled);
  EXPECT_EQ(a.evicted_fifo, b.evicted_fifo);
  EXPECT_EQ(loaded.rate_limiter().counters().inserts, 5);
  EXPECT_EQ(loaded.rate_limiter().counters().samples, 3 + 8);

  // The loaded replay goes on where the saved one was: same next slots.
  const std::vector<SequenceKey> more_saved = insert_stream(saved, {1});
  const std::vector<SequenceKey> more_loaded = insert_stream(loaded, {1});
  EXPECT_EQ(more_saved[0], more_loaded[0]);
}

TEST_F(SequenceReplayFileTest, LoadRejectsAnotherConfigAndLeavesTheReplayUnchanged) {
  SequenceReplay saved = make_replay(small_config(4));
  insert_stream(saved, {1, 2});
  saved.save(path("replay.pt"));

  SequenceReplay bigger = make_replay(small_config(5));
  insert_stream(bigger, {1});
  const std::string error = error_text([&] { bigger.load(path("replay.pt")); });
  EXPECT_TRUE(contains(error, "capacity is 4 in the file but 5 in this replay")) << error;
  EXPECT_EQ(bigger.size(), 1);
  EXPECT_EQ(bigger.sample(2).keys.size(), 2u);

  SequenceReplay other_columns(small_config(4), {{"step", torch::kInt64, {}}}, start_columns());
  const std::string columns = error_text([&] { other_columns.load(path("replay.pt")); });
  EXPECT_TRUE(contains(columns, "step_columns")) << columns;
  EXPECT_EQ(other_columns.size(), 0);
}

TEST_F(SequenceReplayFileTest, LoadRejectsATruncatedFileAndLeavesTheReplayUnchanged) {
  SequenceReplay saved = make_replay(small_config(4));
  insert_stream(saved, {1, 2, 3});
  saved.save(path("replay.pt"));
  fs::resize_file(path("replay.pt"), fs::file_size(path("replay.pt")) / 2);

  SequenceReplay replay = make_replay(small_config(4));
  insert_stream(replay, {1});
  EXPECT_THROW(replay.load(path("replay.pt")), CheckpointError);
  EXPECT_THROW(replay.load(path("missing.pt")), CheckpointError);
  EXPECT_EQ(replay.size(), 1);
  EXPECT_EQ(replay.stats().inserted, 1);
}

}  // namespace
}  // namespace moonseed::engine
