// ms.log (scripts/api/lua_log_api.cc): small logs written with LogWriter into a
// temp dir, read back by Lua snippets that assert what they see. Every
// expected value is derived by hand from the record recipe below.
#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "explog/reader.h"
#include "explog/writer.h"
#include "scripts/api/lua_api.h"
#include "scripts/state/lua_state.h"
#include "tests/scripts/temp_dir.h"

namespace moonseed::scripts {
namespace {

namespace ex = explog;
namespace fs = std::filesystem;
using testing::TempDir;

constexpr int64_t kTwoTo40 = 1099511627776;

// Every dtype, scalar and shaped.
ex::LogSchema all_dtypes_schema() {
  ex::LogSchema s;
  s.run_id = "run-lua";
  s.spec = "{\"action\": {\"n\": 4}}";
  s.codec = "lz4";
  s.columns = {{"obs", ex::DType::kU8, {2, 3}},  {"action", ex::DType::kI32, {}},
               {"count", ex::DType::kI64, {2}},  {"version", ex::DType::kI64, {}},
               {"logp", ex::DType::kF32, {}},    {"box", ex::DType::kF32, {2}},
               {"reward", ex::DType::kF64, {}}};
  return s;
}

template <typename T>
void put(std::vector<uint8_t>& column, T value) {
  const auto* p = reinterpret_cast<const uint8_t*>(&value);
  column.insert(column.end(), p, p + sizeof(T));
}

// Record k of all_dtypes_schema; step t holds
//   obs[j] = 10k + 6t + j, action = 100k + t - 50, count = {k 2^40 + t, -(2^53 + 1)},
//   version = 2^40 + 7k + t, logp = -0.5t - k, box = {t + 0.5, 0.1f}, reward = k + 0.25t;
// wall time 1000k, learner step 7k.
ex::Record recipe(int k, int32_t actor, int32_t env, int64_t episode, int64_t first_step, int32_t steps,
                  uint8_t flags) {
  ex::Record r;
  r.meta.actor_id = actor;
  r.meta.env_id = env;
  r.meta.episode_id = episode;
  r.meta.first_step = first_step;
  r.meta.steps = steps;
  r.meta.flags = flags;
  r.meta.wall_time_ns = 1000 * k;
  r.meta.learner_step = 7 * k;
  r.columns.resize(7);
  for (int t = 0; t < steps; ++t) {
    for (int j = 0; j < 6; ++j) put<uint8_t>(r.columns[0], static_cast<uint8_t>(10 * k + 6 * t + j));
    put<int32_t>(r.columns[1], 100 * k + t - 50);
    put<int64_t>(r.columns[2], k * kTwoTo40 + t);
    put<int64_t>(r.columns[2], -9007199254740993);
    put<int64_t>(r.columns[3], kTwoTo40 + 7 * k + t);
    put<float>(r.columns[4], -0.5f * static_cast<float>(t) - static_cast<float>(k));
    put<float>(r.columns[5], static_cast<float>(t) + 0.5f);
    put<float>(r.columns[5], 0.1f);
    put<double>(r.columns[6], k + 0.25 * t);
  }
  return r;
}

ex::WriterOptions options_for(const std::string& directory) {
  ex::WriterOptions o;
  o.directory = directory;
  o.full_queue = ex::FullQueuePolicy::kBackpressure;
  o.segment_max_bytes = 0;
  o.sync_interval_ms = 600000;  // chunks are cut by flush() and close() only
  return o;
}

// RUN_DIR/experience holds two episodes whose records interleave:
//   E1 = actor 0, env 0, episode 1: r1 (first, steps 0-1), r3 (steps 2-3), r4 (last, terminated, step 4)
//   E2 = actor 1, env 1, episode 2: r2 (first, steps 0-2), r5 (last, truncated, steps 3-4)
// segment 1 = chunk {r1, r2}, chunk {r3}; segment 2 = chunk {r4, r5}.
// Returns: E1 = (1 + 1.25) + (3 + 3.25) + 4 = 12.5, E2 = (2 + 2.25 + 2.5) + (5 + 5.25) = 17.
void write_two_episodes(const std::string& log_dir) {
  using ex::kIsFirst, ex::kIsLast, ex::kTerminated, ex::kTruncated;
  {
    ex::LogWriter w(all_dtypes_schema(), options_for(log_dir));
    ASSERT_TRUE(w.append(recipe(1, 0, 0, 1, 0, 2, kIsFirst)));
    ASSERT_TRUE(w.append(recipe(2, 1, 1, 2, 0, 3, kIsFirst)));
    ASSERT_TRUE(w.flush());
    ASSERT_TRUE(w.append(recipe(3, 0, 0, 1, 2, 2, 0)));
    w.close();
    ASSERT_EQ(w.stats().error, "");
  }
  ex::LogWriter w(all_dtypes_schema(), options_for(log_dir));
  ASSERT_TRUE(w.append(recipe(4, 0, 0, 1, 4, 1, kIsLast | kTerminated)));
  ASSERT_TRUE(w.append(recipe(5, 1, 1, 2, 3, 2, kIsLast | kTruncated)));
  w.close();
  ASSERT_EQ(w.stats().error, "");
}

void flip_byte(const std::string& file, uint64_t offset) {
  std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(static_cast<std::streamoff>(offset));
  char b = 0;
  f.get(b);
  f.seekp(static_cast<std::streamoff>(offset));
  f.put(static_cast<char>(b ^ 0x20));
  ASSERT_TRUE(f.good()) << file;
}

// Helpers every snippet gets; `...` is the snippet's arguments.
const char* kPrelude = R"lua(
local ms = require "moonseed"
local function collect(iterator)
  local out = {}
  for x in iterator do out[#out + 1] = x end
  return out
end
local function show(v) return type(v) == "number" and ("%.17g"):format(v) or tostring(v) end
local function same(got, want, what)
  assert(type(got) == "table", what .. ": got " .. tostring(got))
  assert(#got == #want, ("%s: %d values, want %d"):format(what, #got, #want))
  for i = 1, #want do
    if got[i] ~= want[i] then
      error(("%s[%d] = %s, want %s"):format(what, i, show(got[i]), show(want[i])), 2)
    end
  end
end
local function fails_with(text, f, ...)
  local ok, err = pcall(f, ...)
  assert(not ok, "expected an error containing: " .. text)
  assert(tostring(err):find(text, 1, true), "error '" .. tostring(err) .. "' lacks: " .. text)
end
)lua";

class LuaLogApi : public ::testing::Test {
 protected:
  std::string run_dir() const { return dir_.path() + "/run"; }
  std::string log_dir() const { return run_dir() + "/experience"; }

  // Runs kPrelude + `body` with `args` as `...`; "" on success, else the error.
  std::string run(const std::string& body, const std::vector<std::string>& args) {
    const std::string path = dir_.write("snippet" + std::to_string(++snippets_) + ".lua",
                                        std::string(kPrelude) + "local A, B = ...\n" + body);
    LuaState lua(Sandbox::kOff);
    lua.set_search_path({});
    open_moonseed_api(lua.get());
    try {
      lua.run_file(path, args);
    } catch (const ScriptError& e) {
      return e.what();
    }
    return "";
  }

  TempDir dir_;
  int snippets_ = 0;
};

TEST_F(LuaLogApi, InfoDescribesTheSchemaSegmentsChunksAndRecords) {
  write_two_episodes(log_dir());
  EXPECT_EQ(run(R"lua(
local log = ms.log.open(A)
local info = log:info()
assert(info.path == A .. "/experience", info.path)
assert(info.run_id == "run-lua" and info.codec == "lz4", info.run_id)
assert(info.spec == '{"action": {"n": 4}}', info.spec)
assert(info.records == 5 and info.segments == 2 and info.chunks == 3,
       ("%d records, %d segments, %d chunks"):format(info.records, info.segments, info.chunks))
assert(#info.problems == 0)
local want = { {"obs", "u8", {2, 3}}, {"action", "i32", {}}, {"count", "i64", {2}},
               {"version", "i64", {}}, {"logp", "f32", {}}, {"box", "f32", {2}}, {"reward", "f64", {}} }
assert(#info.columns == #want)
for i, w in ipairs(want) do
  local c = info.columns[i]
  assert(c.name == w[1] and c.dtype == w[2], c.name .. " " .. c.dtype)
  same(c.shape, w[3], c.name .. ".shape")
end
same(log:problems(), {}, "problems")
log:close()
)lua",
                {run_dir()}),
            "");
}

TEST_F(LuaLogApi, OpensALogDirectoryAndASingleSegmentFileToo) {
  write_two_episodes(log_dir());
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(log_dir())) files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  ASSERT_EQ(files.size(), 2u);
  EXPECT_EQ(run(R"lua(
local info = ms.log.open(A):info()
assert(info.path == A and info.segments == 2 and info.records == 5, info.path)
info = ms.log.open(B):info()
assert(info.path == B and info.segments == 1 and info.records == 2 and info.chunks == 1, info.path)
)lua",
                {log_dir(), files[1]}),
            "");
}

TEST_F(LuaLogApi, EpisodesAreListedInOrderOfFirstAppearanceWithReturnsAndEnds) {
  write_two_episodes(log_dir());
  EXPECT_EQ(run(R"lua(
local eps = collect(ms.log.open(A):episodes())
assert(#eps == 2, #eps)
local e1, e2 = eps[1], eps[2]
assert(e1.id == 1 and e1.actor == 0 and e1.env == 0 and e1.steps == 5 and e1.first_step == 0)
assert(e1["return"] == 12.5, e1["return"])
assert(e1.first and e1.last and e1.terminated and not e1.truncated)
assert(e1.start_ns == 1000 and e1.end_ns == 4000, e1.start_ns .. " " .. e1.end_ns)
assert(e2.id == 2 and e2.actor == 1 and e2.env == 1 and e2.steps == 5 and e2.first_step == 0)
assert(e2["return"] == 17, e2["return"])
assert(e2.first and e2.last and not e2.terminated and e2.truncated)
assert(e2.start_ns == 2000 and e2.end_ns == 5000)
)lua",
                {run_dir()}),
            "");
}

TEST_F(LuaLogApi, EpisodesFollowTheActorEpisodeAndWallTimeFilters) {
  write_two_episodes(log_dir());
  EXPECT_EQ(run(R"lua(
local log = ms.log.open(A)
local eps = collect(log:episodes { actor = 1 })
assert(#eps == 1 and eps[1].id == 2 and eps[1]["return"] == 17)
eps = collect(log:episodes { episode = 1 })
assert(#eps == 1 and eps[1].actor == 0 and eps[1].steps == 5)
-- Records r3, r4, r5 (walls 3000..5000): only what is inside the window counts.
eps = collect(log:episodes { since = 2500, ["until"] = 5000 })
assert(#eps == 2)
assert(eps[1].id == 1 and eps[1].steps == 3 and eps[1].first_step == 2 and eps[1]["return"] == 10.25)
assert(not eps[1].first and eps[1].last and eps[1].start_ns == 3000)
assert(eps[2].id == 2 and eps[2].steps == 2 and eps[2].first_step == 3 and eps[2]["return"] == 10.25)
assert(not eps[2].first and eps[2].last and eps[2].truncated)
assert(#collect(log:episodes { actor = 7 }) == 0)
assert(#collect(log:episodes {}) == 2)
)lua",
                {run_dir()}),
            "");
}

// A log of one i32 column "x" (no reward): one step per record, with these
// actor, episode id and flags.
void write_plain(const std::string& log_dir,
                 const std::vector<std::tuple<int32_t, int64_t, uint8_t>>& records) {
  ex::LogSchema schema;
  schema.run_id = "plain";
  schema.columns = {{"x", ex::DType::kI32, {}}};
  ex::LogWriter w(schema, options_for(log_dir));
  for (const auto& [actor, episode, flags] : records) {
    ex::Record r;
    r.meta.actor_id = actor;
    r.meta.episode_id = episode;
    r.meta.steps = 1;
    r.meta.flags = flags;
    r.columns = {std::vector<uint8_t>(4, 0)};
    ASSERT_TRUE(w.append(std::move(r)));
  }
  w.close();
  ASSERT_EQ(w.stats().error, "");
}

TEST_F(LuaLogApi, AnEpisodeIsOneActorEnvAndIdAndHasNoReturnWithoutARewardColumn) {
  write_plain(log_dir(), {{0, 5, ex::kIsFirst}, {1, 5, ex::kIsFirst}});
  EXPECT_EQ(run(R"lua(
local eps = collect(ms.log.open(A):episodes())
assert(#eps == 2 and eps[1].actor == 0 and eps[2].actor == 1 and eps[1].id == 5 and eps[2].id == 5)
assert(eps[1]["return"] == nil and eps[2]["return"] == nil)
assert(eps[1].first and not eps[1].last)
)lua",
                {run_dir()}),
            "");
}

// As `moonseed log ls` says how an episode ended: from its is_last record.
TEST_F(LuaLogApi, AnEpisodesEndFlagsComeFromItsLastRecord) {
  using ex::kIsFirst, ex::kIsLast, ex::kTerminated, ex::kTruncated;
  write_plain(log_dir(), {{0, 1, kIsFirst | kTerminated}, {0, 2, kIsFirst}, {0, 2, kIsLast | kTruncated}});
  EXPECT_EQ(run(R"lua(
local eps = collect(ms.log.open(A):episodes())
assert(#eps == 2)
assert(eps[1].first and not eps[1].last and not eps[1].terminated and not eps[1].truncated)
assert(eps[2].first and eps[2].last and not eps[2].terminated and eps[2].truncated)
)lua",
                {run_dir()}),
            "");
}

TEST_F(LuaLogApi, StepsCarryEveryDtypeWithItsHandDerivedValue) {
  write_two_episodes(log_dir());
  EXPECT_EQ(run(R"lua(
local steps = collect(ms.log.open(A):steps())
assert(#steps == 10, #steps)
-- Log order: r1 (2 steps), r2 (3), r3 (2), r4 (1), r5 (2). steps[4] is r2's t = 1, k = 2.
local s = steps[4]
assert(s.episode == 2 and s.actor == 1 and s.env == 1 and s.t == 1, s.t)
assert(s.first == false and s.last == false)
assert(s.learner_step == 14 and s.wall_ns == 2000)
same(s.obs, {26, 27, 28, 29, 30, 31}, "obs")
assert(s.action == 151, s.action)
-- 2 * 2^40 + 1 is exact; -(2^53 + 1) is beyond 2^53 and rounds to -2^53.
same(s.count, {2199023255553, -9007199254740992}, "count")
assert(s.version == 1099511627791, s.version)
assert(s.logp == -2.5, s.logp)
-- f32 0.1 is 0.100000001490116119384765625 exactly, not the double 0.1.
same(s.box, {1.5, 0.100000001490116119384765625}, "box")
assert(s.box[2] ~= 0.1)
assert(s.reward == 2.25, s.reward)
-- The first step of an is_first record, the last step of an is_last one.
assert(steps[1].first and steps[1].t == 0 and not steps[2].first)
assert(steps[5].last == false and steps[5].t == 2)
assert(steps[8].last and steps[8].t == 4 and steps[8].episode == 1)
assert(steps[10].last and steps[10].t == 4 and not steps[9].last)
)lua",
                {run_dir()}),
            "");
}

TEST_F(LuaLogApi, StepsOfAnEpisodeSpanChunksAndSegmentsInOrder) {
  write_two_episodes(log_dir());
  EXPECT_EQ(run(R"lua(
local log = ms.log.open(A)
local ts, rewards, walls = {}, {}, {}
for s in log:steps { episode = 1 } do
  ts[#ts + 1], rewards[#rewards + 1], walls[#walls + 1] = s.t, s.reward, s.wall_ns
end
same(ts, {0, 1, 2, 3, 4}, "t")
same(rewards, {1, 1.25, 3, 3.25, 4}, "reward")
same(walls, {1000, 1000, 3000, 3000, 4000}, "wall_ns")
local actions = {}
for s in log:steps { actor = 1 } do actions[#actions + 1] = s.action end
same(actions, {150, 151, 152, 450, 451}, "actions of actor 1")
)lua",
                {run_dir()}),
            "");
}

TEST_F(LuaLogApi, StepsFollowWallTimeLimitAndColumnSelection) {
  write_two_episodes(log_dir());
  EXPECT_EQ(run(R"lua(
local log = ms.log.open(A)
local function field(filter, name)
  local out = {}
  for s in log:steps(filter) do out[#out + 1] = s[name] end
  return out
end
same(field({ since = 2000, ["until"] = 3000 }, "reward"), {2, 2.25, 2.5, 3, 3.25}, "window")
-- The limit counts steps and may stop inside a record.
same(field({ limit = 4 }, "action"), {50, 51, 150, 151}, "limit 4")
same(field({ limit = 0 }, "action"), {}, "limit 0")
same(field({ episode = 2, limit = 1 }, "t"), {0}, "episode 2, limit 1")
-- Only the columns asked for; the meta fields always.
local s = log:steps { columns = { "reward", "action" } }()
assert(s.reward == 1 and s.action == 50 and s.obs == nil and s.box == nil and s.count == nil)
assert(s.episode == 1 and s.t == 0 and s.wall_ns == 1000)
s = log:steps { columns = {} }()
assert(s.reward == nil and s.action == nil and s.episode == 1)
-- An exhausted iterator keeps returning nil.
local it = log:steps { limit = 1 }
assert(it() and it() == nil and it() == nil)
)lua",
                {run_dir()}),
            "");
}

// Wall times as large as real ones (~1.7e18 ns) are not exact doubles: the
// bounds compare them as Lua sees them. W + 1000 is read as W + 1024 (rounded
// up), W + 2100 as W + 2048 (rounded down), with W = 1.7e18 (a multiple of 256).
TEST_F(LuaLogApi, WallTimesHandedBackAsBoundsIncludeTheirRecords) {
  ex::LogSchema schema;
  schema.run_id = "walls";
  schema.columns = {{"k", ex::DType::kI32, {}}};
  ex::LogWriter w(schema, options_for(log_dir()));
  const int64_t base = 1700000000000000000;
  const int64_t offsets[] = {0, 1000, 2100, 3000};
  for (int32_t k = 0; k < 4; ++k) {
    ex::Record r;
    r.meta.steps = 1;
    r.meta.episode_id = k;
    r.meta.wall_time_ns = base + offsets[k];
    r.columns = {std::vector<uint8_t>(4, 0)};
    std::memcpy(r.columns[0].data(), &k, 4);
    ASSERT_TRUE(w.append(std::move(r)));
  }
  w.close();
  EXPECT_EQ(run(R"lua(
local log = ms.log.open(A)
local eps = collect(log:episodes())
assert(eps[1].start_ns == 1.7e18 and eps[2].start_ns == 1.7e18 + 1024 and eps[3].end_ns == 1.7e18 + 2048)
local function ks(filter)
  local out = {}
  for s in log:steps(filter) do out[#out + 1] = s.k end
  return out
end
same(ks { since = eps[2].start_ns }, {1, 2, 3}, "since record 1")
same(ks { ["until"] = eps[3].end_ns }, {0, 1, 2}, "until record 2")
same(ks { since = eps[2].start_ns, ["until"] = eps[3].end_ns }, {1, 2}, "both")
same(ks { since = eps[3].end_ns + 256 }, {3}, "the next double after record 2's")
)lua",
                {run_dir()}),
            "");
}

TEST_F(LuaLogApi, ACorruptChunkIsSkippedAndListedOnce) {
  write_two_episodes(log_dir());
  std::string file;
  uint64_t data_end = 0;
  {
    const ex::LogReader reader(log_dir());
    file = reader.segments()[1].path;
    data_end = reader.segments()[1].data_end;
  }
  flip_byte(file, data_end - 1);  // the last data byte of chunk {r4, r5}
  EXPECT_EQ(run(R"lua(
local log = ms.log.open(A)
assert(#log:info().problems == 0)  -- nothing is decoded at open
local eps = collect(log:episodes())
assert(#eps == 2)
assert(eps[1].steps == 4 and eps[1]["return"] == 8.5 and not eps[1].last)
assert(eps[2].steps == 3 and eps[2]["return"] == 6.75 and not eps[2].last)
assert(#collect(log:steps()) == 7)
local problems = log:problems()
assert(#problems == 1, #problems)
assert(problems[1]:find("chunk data checksum mismatch", 1, true), problems[1])
assert(problems[1]:find(B, 1, true), problems[1])
same(log:info().problems, problems, "info().problems")
)lua",
                {run_dir(), file}),
            "");
}

TEST_F(LuaLogApi, ATornSegmentIsListedAtOpenAndItsCompleteChunksAreRead) {
  write_two_episodes(log_dir());
  std::string file;
  uint64_t chunk_offset = 0;
  {
    const ex::LogReader reader(log_dir());
    file = reader.segments()[1].path;
    chunk_offset = reader.chunks()[2].summary.offset;
  }
  // What a writer killed inside its only chunk leaves: no footer, a cut chunk.
  fs::resize_file(file, chunk_offset + 30);
  fs::rename(file, file + ".partial");
  EXPECT_EQ(run(R"lua(
local log = ms.log.open(A)
local info = log:info()
assert(info.segments == 2 and info.chunks == 2 and info.records == 3)
assert(#info.problems == 1 and info.problems[1]:find("torn at offset", 1, true), info.problems[1])
local eps = collect(log:episodes())
assert(eps[1].steps == 4 and eps[2].steps == 3 and eps[2]["return"] == 6.75)
assert(#collect(log:steps()) == 7)
assert(#log:problems() == 1)
)lua",
                {run_dir()}),
            "");
}

TEST_F(LuaLogApi, BadPathsAndArgumentsAreErrorsThatSayWhat) {
  write_two_episodes(log_dir());
  fs::create_directories(dir_.path() + "/empty");
  EXPECT_EQ(run(R"lua(
fails_with("log.open: " .. A .. "/absent does not exist", ms.log.open, A .. "/absent")
fails_with("no readable segment in " .. B, ms.log.open, B)
fails_with("string expected, got no value", ms.log.open)
local log = ms.log.open(A)
fails_with("log:steps: expected a filter table such as {actor = 0}, got string",
           function() return log:steps("episode 1") end)
fails_with("log:episodes: 'actor' must be a number, got string",
           function() return log:episodes { actor = "1" } end)
fails_with("log:steps: 'actor' must be a whole number in [-2147483648, 2147483647], got 1.5",
           function() return log:steps { actor = 1.5 } end)
fails_with("log:steps: 'limit' must be a whole number in [0, ",
           function() return log:steps { limit = -1 } end)
fails_with("log:steps: 'since' must be a number, got nan", function() return log:steps { since = 0 / 0 } end)
fails_with("log:episodes: unknown field 'actr'; did you mean 'actor'?",
           function() return log:episodes { actr = 1 } end)
fails_with("log:episodes: unknown field 'limit'", function() return log:episodes { limit = 1 } end)
fails_with("log:steps: unknown column 'rewad'; did you mean 'reward'? (the log has obs, action, count, "
           .. "version, logp, box, reward)", function() return log:steps { columns = { "rewad" } } end)
fails_with("log:steps: 'columns' must be an array of column names, got string",
           function() return log:steps { columns = "reward" } end)
fails_with("log:steps: columns[2] must be a column name, got number",
           function() return log:steps { columns = { "reward", 3 } } end)
)lua",
                {run_dir(), dir_.path() + "/empty"}),
            "");
}

TEST_F(LuaLogApi, AClosedLogAndItsIteratorsRaiseErrors) {
  write_two_episodes(log_dir());
  EXPECT_EQ(run(R"lua(
local log = ms.log.open(A)
local steps = log:steps()
assert(steps().t == 0)
log:close()
log:close()  -- closing twice is fine
assert(tostring(log):find("closed", 1, true))
fails_with("log:info(): the log " .. A .. "/experience is closed", log.info, log)
fails_with("log:episodes(): the log", log.episodes, log)
fails_with("log:steps(): the log " .. A .. "/experience is closed", steps)
)lua",
                {run_dir()}),
            "");
}

size_t open_files() {
  size_t n = 0;
  for (auto it = fs::directory_iterator("/proc/self/fd"); it != fs::directory_iterator(); ++it) ++n;
  return n;
}

TEST_F(LuaLogApi, CloseAndGarbageCollectionCloseTheSegmentFiles) {
  write_two_episodes(log_dir());
  const std::string path = dir_.write("fds.lua", std::string(kPrelude) + R"lua(
local dir, count = ...
local before = count()
local log = ms.log.open(dir)
local iterator = log:steps()
iterator()
assert(count() == before + 2, "two segments open")
log:close()
assert(count() == before, "closed by close()")
log = ms.log.open(dir)
iterator = log:steps()
iterator()
assert(count() == before + 2)
log, iterator = nil, nil
collectgarbage()
collectgarbage()
assert(count() == before, "closed by the garbage collector")
)lua");
  LuaState lua(Sandbox::kOff);
  lua.set_search_path({});
  open_moonseed_api(lua.get());
  ASSERT_EQ(luaL_loadfile(lua.get(), path.c_str()), 0) << lua_tostring(lua.get(), -1);
  lua_pushstring(lua.get(), run_dir().c_str());
  lua_pushcfunction(lua.get(), [](lua_State* L) {
    lua_pushnumber(L, static_cast<lua_Number>(open_files()));
    return 1;
  });
  EXPECT_EQ(pcall_with_traceback(lua.get(), 2, 0), 0) << lua_tostring(lua.get(), -1);
}

}  // namespace
}  // namespace moonseed::scripts
