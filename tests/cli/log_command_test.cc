// `moonseed log` on real files: each test writes experience logs with
// LogWriter (six known unrolls over four episodes of two actors, in two
// segments), runs the real binary on them and checks what it prints and its
// exit code. The text helpers behind it (cli/common/log_text.h) are tested directly.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/wait.h>

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "cli/common/log_text.h"
#include "explog/reader.h"
#include "explog/writer.h"

namespace moonseed::cli {
namespace {

namespace ex = explog;
namespace fs = std::filesystem;

// ---- a minimal JSON reader, enough for what `moonseed log` prints ----

struct Json {
  enum Kind { kNull, kBool, kNumber, kString, kArray, kObject } kind = kNull;
  bool boolean = false;
  std::string text;  // a number as written, or a string's value
  std::vector<Json> items;
  std::vector<std::pair<std::string, Json>> fields;

  const Json& operator[](const std::string& key) const {
    for (const auto& [k, v] : fields) {
      if (k == key) return v;
    }
    throw std::runtime_error("no key " + key);
  }
  const Json& operator[](size_t i) const { return items.at(i); }
  size_t size() const { return kind == kArray ? items.size() : fields.size(); }
  int64_t integer() const { return std::strtoll(text.c_str(), nullptr, 10); }
  double number() const { return std::strtod(text.c_str(), nullptr); }
};

class JsonParser {
 public:
  explicit JsonParser(const std::string& s) : s_(s) {}

  Json document() {
    Json v = value();
    skip_space();
    if (pos_ != s_.size()) fail("trailing text");
    return v;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw std::runtime_error("JSON: " + what + " at " + std::to_string(pos_) + " of: " + s_);
  }
  void skip_space() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  void expect(char c) {
    skip_space();
    if (pos_ >= s_.size() || s_[pos_] != c) fail(std::string("expected '") + c + "'");
    ++pos_;
  }
  bool next_is(char c) {
    skip_space();
    return pos_ < s_.size() && s_[pos_] == c;
  }
  bool literal(const char* word) {
    const size_t n = std::strlen(word);
    if (s_.compare(pos_, n, word) != 0) return false;
    pos_ += n;
    return true;
  }
  std::string string_value() {
    expect('"');
    std::string out;
    while (pos_ < s_.size() && s_[pos_] != '"') {
      char c = s_[pos_++];
      if (c == '\\') {
        if (pos_ >= s_.size()) fail("escape at the end");
        const char e = s_[pos_++];
        if (e == 'u') {
          c = static_cast<char>(
              std::strtol(s_.substr(pos_, 4).c_str(), nullptr, 16));  // ASCII is enough here
          pos_ += 4;
        } else {
          c = e == 'n' ? '\n' : e == 't' ? '\t' : e == 'r' ? '\r' : e;
        }
      }
      out += c;
    }
    expect('"');
    return out;
  }
  Json value() {
    skip_space();
    if (pos_ >= s_.size()) fail("no value");
    Json v;
    const char c = s_[pos_];
    if (c == '{') {
      v.kind = Json::kObject;
      ++pos_;
      if (next_is('}')) {
        ++pos_;
        return v;
      }
      while (true) {
        std::string key = string_value();
        expect(':');
        v.fields.emplace_back(std::move(key), value());
        if (!next_is(',')) break;
        ++pos_;
      }
      expect('}');
    } else if (c == '[') {
      v.kind = Json::kArray;
      ++pos_;
      if (next_is(']')) {
        ++pos_;
        return v;
      }
      while (true) {
        v.items.push_back(value());
        if (!next_is(',')) break;
        ++pos_;
      }
      expect(']');
    } else if (c == '"') {
      v.kind = Json::kString;
      v.text = string_value();
    } else if (literal("true")) {
      v.kind = Json::kBool;
      v.boolean = true;
    } else if (literal("false")) {
      v.kind = Json::kBool;
    } else if (literal("null")) {
      v.kind = Json::kNull;
    } else {
      v.kind = Json::kNumber;
      const size_t start = pos_;
      while (pos_ < s_.size() && std::strchr("+-.eE0123456789", s_[pos_]) != nullptr) ++pos_;
      if (pos_ == start) fail("unexpected character");
      v.text = s_.substr(start, pos_ - start);
    }
    return v;
  }

  const std::string& s_;
  size_t pos_ = 0;
};

Json parse_json(const std::string& text) { return JsonParser(text).document(); }

std::vector<Json> parse_json_lines(const std::string& text) {
  std::vector<Json> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) out.push_back(parse_json(line));
  return out;
}

// ---- running the binary ----

struct Output {
  int exit_code = -1;
  std::string out;
  std::string err;
};

std::string shell_quoted(const std::string& s) {
  std::string out = "'";
  for (const char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Every directory a test makes is under one per-process root, removed at exit.
const std::string& scratch_root() {
  struct Root {
    Root() {
      path = (fs::temp_directory_path() / "moonseed-log-test-XXXXXX").string();
      if (mkdtemp(path.data()) == nullptr) throw std::runtime_error("mkdtemp failed for " + path);
    }
    ~Root() {
      std::error_code ec;
      fs::remove_all(path, ec);
    }
    std::string path;
  };
  static const Root root;
  return root.path;
}

std::string fresh_dir() {
  static int next = 0;
  const std::string dir = scratch_root() + "/" + std::to_string(++next);
  fs::create_directories(dir);
  return dir;
}

// `moonseed ARGS...`, stdout and stderr apart.
Output moonseed(const std::vector<std::string>& args) {
  static const std::string err_path = scratch_root() + "/stderr";
  std::string command = shell_quoted(MOONSEED_BINARY);
  for (const std::string& a : args) command += " " + shell_quoted(a);
  command += " 2>" + shell_quoted(err_path);
  Output result;
  std::FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) throw std::runtime_error("popen failed: " + command);
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, pipe)) > 0) result.out.append(buf, n);
  const int status = pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  result.err = read_file(err_path);
  return result;
}

// ---- the known log ----

constexpr int64_t kBaseTime = 1700000000000000000;  // 2023-11-14T22:13:20Z

struct Unroll {
  int32_t actor_id, env_id;
  int64_t episode_id, first_step;
  int32_t steps;
  uint8_t flags;
};

// Record r is stamped kBaseTime + r us. Episodes: actor 0's 7 (steps 0-4,
// terminated) and 8 (open), actor 1's 9 (steps 0-4, truncated) and 10 (one step).
const Unroll kUnrolls[] = {
    {0, 0, 7, 0, 3, ex::kIsFirst},
    {1, 1, 9, 0, 2, ex::kIsFirst},
    {0, 0, 7, 3, 2, ex::kIsLast | ex::kTerminated},
    {1, 1, 9, 2, 3, ex::kIsLast | ex::kTruncated},
    {0, 0, 8, 0, 2, ex::kIsFirst},
    {1, 1, 10, 0, 1, ex::kIsFirst | ex::kIsLast | ex::kTerminated},
};
constexpr int kRecords = 6;
constexpr int kSteps = 3 + 2 + 2 + 3 + 2 + 1;

ex::LogSchema known_schema(const std::string& run_id = "run-known", ex::DType action = ex::DType::kI32) {
  ex::LogSchema s;
  s.run_id = run_id;
  s.spec = R"({"observation": {"shape": [2, 3]}, "action": {"n": 4}})";
  s.columns = {{"obs", ex::DType::kU8, {2, 3}},
               {"action", action, {}},
               {"reward", ex::DType::kF32, {}},
               {"logp", ex::DType::kF64, {}},
               {"big", ex::DType::kI64, {2}}};
  return s;
}
// Bytes per step: 6 obs + 4 action + 4 reward + 8 logp + 16 big.
constexpr int kStepBytes = 38;

// The values of record r at step t.
uint8_t obs_value(int r, int t, int e) { return static_cast<uint8_t>(r * 16 + t * 6 + e); }
int32_t action_value(int r, int t) { return r * 10 + t - 20; }
float reward_value(int r, int t) { return 0.5f * static_cast<float>(r) + 0.25f * static_cast<float>(t); }
double logp_value(int r, int t) { return -(r + 1) / 3.0 - t; }
// Beyond what a double holds exactly: printing through a double would lose them.
int64_t big_value(int r, int t, int e) {
  return e == 0 ? (int64_t{1} << 53) + 1 + 2 * r + 100 * t : -((int64_t{1} << 62) + 3 * r + t);
}

template <typename T>
void put(std::vector<uint8_t>& out, T value) {
  uint8_t bytes[sizeof(T)];
  std::memcpy(bytes, &value, sizeof(T));
  out.insert(out.end(), bytes, bytes + sizeof(T));
}

ex::Record known_record(int r) {
  const Unroll& u = kUnrolls[r];
  ex::Record rec;
  rec.meta.actor_id = u.actor_id;
  rec.meta.env_id = u.env_id;
  rec.meta.episode_id = u.episode_id;
  rec.meta.first_step = u.first_step;
  rec.meta.steps = u.steps;
  rec.meta.flags = u.flags;
  rec.meta.wall_time_ns = kBaseTime + r * 1000;
  rec.meta.learner_step = 100 + r;
  rec.meta.config_version = 2;
  rec.columns.resize(5);
  for (int t = 0; t < u.steps; ++t) {
    for (int e = 0; e < 6; ++e) rec.columns[0].push_back(obs_value(r, t, e));
    put<int32_t>(rec.columns[1], action_value(r, t));
    put<float>(rec.columns[2], reward_value(r, t));
    put<double>(rec.columns[3], logp_value(r, t));
    for (int e = 0; e < 2; ++e) put<int64_t>(rec.columns[4], big_value(r, t, e));
  }
  return rec;
}

// Appends the records `rs` with one writer (one segment, published on close).
ex::WriterStats write_segment(const std::string& dir, const std::vector<int>& rs,
                              const ex::LogSchema& schema = known_schema()) {
  ex::WriterOptions options;
  options.directory = dir;
  options.chunk_target_bytes = 1;  // small chunks: several per segment
  options.full_queue = ex::FullQueuePolicy::kBackpressure;
  ex::LogWriter writer(schema, options);
  for (const int r : rs) EXPECT_TRUE(writer.append(known_record(r)));
  writer.close();
  return writer.stats();
}

// A run directory whose experience/ holds records 0-3 in segment 1 and 4-5 in segment 2.
struct KnownRun {
  KnownRun() : run_dir(fresh_dir()), log_dir(run_dir + "/experience") {
    const ex::WriterStats a = write_segment(log_dir, {0, 1, 2, 3});
    const ex::WriterStats b = write_segment(log_dir, {4, 5});
    writer_bytes_raw = a.bytes_raw + b.bytes_raw;
  }
  std::string segment(int n) const { return log_dir + "/experience-00000" + std::to_string(n) + ".mslog"; }

  std::string run_dir;
  std::string log_dir;
  uint64_t writer_bytes_raw = 0;
};

void flip_byte(const std::string& path, uint64_t offset) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(static_cast<std::streamoff>(offset));
  char c = 0;
  f.read(&c, 1);
  c = static_cast<char>(c ^ 0x40);
  f.seekp(static_cast<std::streamoff>(offset));
  f.write(&c, 1);
}

// ---- info ----

TEST(LogInfo, JsonCountsTheKnownLogAndItsCompression) {
  const KnownRun run;
  const Output o = moonseed({"log", "info", run.run_dir, "--json"});
  ASSERT_EQ(o.exit_code, 0) << o.err;
  const Json j = parse_json(o.out);
  EXPECT_EQ(j["path"].text, run.log_dir);
  EXPECT_EQ(j["run_id"].text, "run-known");
  EXPECT_EQ(j["codec"].text, "lz4");
  EXPECT_EQ(j["spec"].text, known_schema().spec);
  ASSERT_EQ(j["columns"].size(), 5u);
  EXPECT_EQ(j["columns"][0]["name"].text, "obs");
  EXPECT_EQ(j["columns"][0]["dtype"].text, "u8");
  ASSERT_EQ(j["columns"][0]["shape"].size(), 2u);
  EXPECT_EQ(j["columns"][0]["shape"][1].integer(), 3);
  EXPECT_EQ(j["columns"][4]["dtype"].text, "i64");
  EXPECT_EQ(j["columns"][2]["shape"].size(), 0u);

  const uint64_t size1 = fs::file_size(run.segment(1));
  const uint64_t size2 = fs::file_size(run.segment(2));
  ASSERT_EQ(j["segments"].size(), 2u);
  EXPECT_EQ(j["segments"][0]["records"].integer(), 4);
  EXPECT_EQ(j["segments"][1]["records"].integer(), 2);
  EXPECT_EQ(j["segments"][0]["bytes"].integer(), static_cast<int64_t>(size1));
  EXPECT_TRUE(j["segments"][1]["published"].boolean);
  EXPECT_TRUE(j["segments"][1]["footer"].boolean);
  EXPECT_EQ(j["segments"][1]["torn_at"].kind, Json::kNull);

  const ex::LogReader reader(run.log_dir);
  EXPECT_EQ(j["chunks"].integer(), static_cast<int64_t>(reader.chunks().size()));
  EXPECT_EQ(j["records"].integer(), kRecords);
  EXPECT_EQ(j["steps"].integer(), kSteps);
  EXPECT_EQ(j["episodes"].integer(), 4);
  ASSERT_EQ(j["actors"].size(), 2u);
  EXPECT_EQ(j["actors"][0].integer(), 0);
  EXPECT_EQ(j["actors"][1].integer(), 1);
  EXPECT_EQ(j["wall_time_ns"]["min"].integer(), kBaseTime);
  EXPECT_EQ(j["wall_time_ns"]["max"].integer(), kBaseTime + 5000);
  // Raw: 56 bytes of meta per record plus 38 bytes per step = 336 + 494.
  const uint64_t raw = 56 * kRecords + kStepBytes * kSteps;
  ASSERT_EQ(raw, 830u);
  EXPECT_EQ(run.writer_bytes_raw, raw);
  EXPECT_EQ(j["bytes_raw"].integer(), static_cast<int64_t>(raw));
  EXPECT_EQ(j["bytes_disk"].integer(), static_cast<int64_t>(size1 + size2));
  EXPECT_EQ(j["compression_ratio"].number(), static_cast<double>(raw) / static_cast<double>(size1 + size2));
  EXPECT_EQ(j["problems"].size(), 0u);
}

TEST(LogInfo, TextNamesSegmentsCountsAndRatio) {
  const KnownRun run;
  const Output o = moonseed({"log", "info", run.log_dir});
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_NE(o.out.find("run id      run-known\n"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("obs                  u8[2,3]\n"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("experience-000002.mslog"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("records     6 (unrolls)\n"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("steps       13\n"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("actors      2: 0 1\n"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("wall time   2023-11-14T22:13:20.000000000Z .. 2023-11-14T22:13:20.000005000Z\n"),
            std::string::npos)
      << o.out;
  EXPECT_NE(o.out.find("830 raw, "), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("compression ratio "), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("problems    none\n"), std::string::npos) << o.out;
}

TEST(LogInfo, ReportsWhereAPartialSegmentIsTorn) {
  const KnownRun run;
  const ex::LogReader full(run.segment(1));
  ASSERT_GE(full.chunks().size(), 1u);
  const uint64_t last = full.chunks().back().summary.offset;
  const std::string dir = fresh_dir();
  const std::string partial = dir + "/experience-000001.mslog.partial";
  fs::copy_file(run.segment(1), partial);
  fs::resize_file(partial, last + 10);  // inside the last chunk's header

  const Output o = moonseed({"log", "info", partial, "--json"});
  ASSERT_EQ(o.exit_code, 0) << o.err;
  const Json j = parse_json(o.out);
  EXPECT_FALSE(j["segments"][0]["published"].boolean);
  EXPECT_FALSE(j["segments"][0]["footer"].boolean);
  EXPECT_EQ(j["segments"][0]["torn_at"].integer(), static_cast<int64_t>(last));
  EXPECT_EQ(j["chunks"].integer(), static_cast<int64_t>(full.chunks().size() - 1));
  ASSERT_EQ(j["problems"].size(), 1u);
  EXPECT_TRUE(j["problems"][0]["torn"].boolean);
  EXPECT_NE(j["problems"][0]["message"].text.find("torn at offset " + std::to_string(last)),
            std::string::npos);
}

// ---- ls ----

TEST(LogLs, ListsEpisodesWithStepsReturnsAndEnds) {
  const KnownRun run;
  const Output o = moonseed({"log", "ls", run.run_dir, "--json"});
  ASSERT_EQ(o.exit_code, 0) << o.err;
  const std::vector<Json> rows = parse_json_lines(o.out);
  ASSERT_EQ(rows.size(), 4u) << o.out;
  struct Expected {
    int64_t episode;
    int actor;
    int steps;
    double ret;
    const char* end;
    int64_t first_wall;
  };
  // Returns: episode 7 = (0 + .25 + .5) + (1 + 1.25) = 3; 9 = (.5 + .75) + (1.5 + 1.75 + 2) = 6.5;
  // 8 = 2 + 2.25 = 4.25; 10 = 2.5.
  const Expected expected[] = {{7, 0, 5, 3.0, "terminated", kBaseTime},
                               {9, 1, 5, 6.5, "truncated", kBaseTime + 1000},
                               {8, 0, 2, 4.25, "open", kBaseTime + 4000},
                               {10, 1, 1, 2.5, "terminated", kBaseTime + 5000}};
  for (size_t i = 0; i < rows.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(rows[i]["episode_id"].integer(), expected[i].episode);
    EXPECT_EQ(rows[i]["actor_id"].integer(), expected[i].actor);
    EXPECT_EQ(rows[i]["env_id"].integer(), expected[i].actor);
    EXPECT_EQ(rows[i]["first_step"].integer(), 0);
    EXPECT_EQ(rows[i]["steps"].integer(), expected[i].steps);
    EXPECT_EQ(rows[i]["return"].number(), expected[i].ret);
    EXPECT_EQ(rows[i]["end"].text, expected[i].end);
    EXPECT_EQ(rows[i]["first_wall_time_ns"].integer(), expected[i].first_wall);
  }
}

TEST(LogLs, TextHasOneLinePerEpisodeAndFiltersByActorAndEpisode) {
  const KnownRun run;
  const Output all = moonseed({"log", "ls", run.run_dir});
  ASSERT_EQ(all.exit_code, 0) << all.err;
  EXPECT_NE(
      all.out.find(
          "         9      1      1        5            6.5 truncated  2023-11-14T22:13:20.000001000Z\n"),
      std::string::npos)
      << all.out;

  const std::vector<Json> actor1 =
      parse_json_lines(moonseed({"log", "ls", run.run_dir, "--actor", "1", "--json"}).out);
  ASSERT_EQ(actor1.size(), 2u);
  EXPECT_EQ(actor1[0]["episode_id"].integer(), 9);
  EXPECT_EQ(actor1[1]["episode_id"].integer(), 10);

  const std::vector<Json> episode8 =
      parse_json_lines(moonseed({"log", "ls", run.run_dir, "--episode=8", "--json"}).out);
  ASSERT_EQ(episode8.size(), 1u);
  EXPECT_EQ(episode8[0]["return"].number(), 4.25);
}

TEST(LogLs, ReturnsPrintAsPeopleWriteThem) {
  // Episode 10 is one step: its reward is its return.
  const std::string dir = fresh_dir();
  ex::Record rec = known_record(5);
  rec.columns[2].clear();
  put<float>(rec.columns[2], -500.0f);  // printed "-5e+02" before the one number format
  ex::WriterOptions options;
  options.directory = dir + "/experience";
  ex::LogWriter writer(known_schema(), options);
  ASSERT_TRUE(writer.append(std::move(rec)));
  writer.close();

  const Output text = moonseed({"log", "ls", dir});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("        1           -500 terminated "), std::string::npos) << text.out;
  const Output json = moonseed({"log", "ls", dir, "--json"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  EXPECT_NE(json.out.find("\"return\":-500,"), std::string::npos) << json.out;
  const Output cat = moonseed({"log", "cat", dir});
  EXPECT_NE(cat.out.find("\"reward\":-500"), std::string::npos) << cat.out;
}

// ---- cat ----

// Checks one `cat` line against step t of record r.
void expect_step(const Json& line, int r, int t) {
  SCOPED_TRACE("record " + std::to_string(r) + " step " + std::to_string(t));
  const Unroll& u = kUnrolls[r];
  EXPECT_EQ(line["episode_id"].integer(), u.episode_id);
  EXPECT_EQ(line["actor_id"].integer(), u.actor_id);
  EXPECT_EQ(line["env_id"].integer(), u.env_id);
  EXPECT_EQ(line["first_step"].integer(), u.first_step);
  EXPECT_EQ(line["steps"].integer(), u.steps);
  EXPECT_EQ(line["step"].integer(), u.first_step + t);
  EXPECT_EQ(line["t"].integer(), t);
  EXPECT_EQ(line["wall_time_ns"].integer(), kBaseTime + r * 1000);
  EXPECT_EQ(line["learner_step"].integer(), 100 + r);
  EXPECT_EQ(line["config_version"].integer(), 2);
  EXPECT_EQ(line["is_first"].boolean, (u.flags & ex::kIsFirst) != 0);
  EXPECT_EQ(line["is_last"].boolean, (u.flags & ex::kIsLast) != 0);
  EXPECT_EQ(line["terminated"].boolean, (u.flags & ex::kTerminated) != 0);
  EXPECT_EQ(line["truncated"].boolean, (u.flags & ex::kTruncated) != 0);
  const Json& c = line["columns"];
  ASSERT_EQ(c["obs"].size(), 2u);
  for (int y = 0; y < 2; ++y) {
    ASSERT_EQ(c["obs"][y].size(), 3u);
    for (int x = 0; x < 3; ++x) EXPECT_EQ(c["obs"][y][x].integer(), obs_value(r, t, y * 3 + x));
  }
  EXPECT_EQ(c["action"].integer(), action_value(r, t));
  EXPECT_EQ(std::strtof(c["reward"].text.c_str(), nullptr), reward_value(r, t));
  EXPECT_EQ(c["logp"].number(), logp_value(r, t)) << c["logp"].text;  // exact, from 16-17 digits
  EXPECT_EQ(c["big"][0].integer(), big_value(r, t, 0));
  EXPECT_EQ(c["big"][1].integer(), big_value(r, t, 1));
}

TEST(LogCat, PrintsEveryStepWithItsMetaAndExactValues) {
  const KnownRun run;
  const Output o = moonseed({"log", "cat", run.run_dir});
  ASSERT_EQ(o.exit_code, 0) << o.err;
  const std::vector<Json> lines = parse_json_lines(o.out);
  ASSERT_EQ(lines.size(), static_cast<size_t>(kSteps));
  size_t i = 0;
  for (int r = 0; r < kRecords; ++r) {
    for (int t = 0; t < kUnrolls[r].steps; ++t) expect_step(lines[i++], r, t);
  }
}

TEST(LogCat, SelectsByEpisodeAndStopsAtTheLimit) {
  const KnownRun run;
  const Output o = moonseed({"log", "cat", run.run_dir, "--episode", "9", "--limit", "4"});
  ASSERT_EQ(o.exit_code, 0) << o.err;
  const std::vector<Json> lines = parse_json_lines(o.out);
  ASSERT_EQ(lines.size(), 4u);
  expect_step(lines[0], 1, 0);
  expect_step(lines[1], 1, 1);
  expect_step(lines[2], 3, 0);
  expect_step(lines[3], 3, 1);
}

TEST(LogCat, SelectsByWallTimeInNanosecondsOrUtcText) {
  const KnownRun run;
  const std::vector<Json> middle =
      parse_json_lines(moonseed({"log", "cat", run.run_dir, "--since", std::to_string(kBaseTime + 2000),
                                 "--until", std::to_string(kBaseTime + 3000)})
                           .out);
  ASSERT_EQ(middle.size(), 5u);  // records 2 (2 steps) and 3 (3 steps)
  expect_step(middle[0], 2, 0);
  expect_step(middle[4], 3, 2);

  const std::vector<Json> late =
      parse_json_lines(moonseed({"log", "cat", run.run_dir, "--since", "2023-11-14T22:13:20.000004Z"}).out);
  ASSERT_EQ(late.size(), 3u);  // records 4 and 5
  expect_step(late[0], 4, 0);
  expect_step(late[2], 5, 0);

  const std::vector<Json> actor0_early = parse_json_lines(
      moonseed({"log", "cat", run.run_dir, "--actor", "0", "--until", "2023-11-14T22:13:20Z"}).out);
  ASSERT_EQ(actor0_early.size(), 3u);  // record 0
  expect_step(actor0_early[2], 0, 2);
}

// ---- verify ----

TEST(LogVerify, ExitsZeroOnACleanLog) {
  const KnownRun run;
  const Output o = moonseed({"log", "verify", run.run_dir});
  EXPECT_EQ(o.exit_code, 0) << o.out << o.err;
  EXPECT_NE(o.out.find("2 segments"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("6 records: every checksum is good"), std::string::npos) << o.out;
}

TEST(LogVerify, NamesTheChunkWhoseDataHasAFlippedByte) {
  const KnownRun run;
  uint64_t offset = 0, end = 0;
  {
    const ex::LogReader reader(run.segment(2));
    ASSERT_GE(reader.chunks().size(), 1u);
    offset = reader.chunks()[0].summary.offset;
    end = reader.chunks().size() > 1 ? reader.chunks()[1].summary.offset : reader.segments()[0].data_end;
  }
  flip_byte(run.segment(2), end - 1);  // the chunk's last data byte
  const Output o = moonseed({"log", "verify", run.run_dir});
  EXPECT_EQ(o.exit_code, 1) << o.out << o.err;
  EXPECT_NE(o.out.find(run.segment(2) + ": chunk 0, offset " + std::to_string(offset) + ": "),
            std::string::npos)
      << o.out;
  EXPECT_NE(o.out.find("chunk data checksum mismatch"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("1 problems, 1 bad chunks"), std::string::npos) << o.out;

  // The other commands read around it and say so.
  const Output cat = moonseed({"log", "cat", run.run_dir});
  EXPECT_EQ(cat.exit_code, 1);
  EXPECT_NE(cat.err.find("chunk data checksum mismatch"), std::string::npos) << cat.err;
  EXPECT_GE(parse_json_lines(cat.out).size(), static_cast<size_t>(3 + 2 + 2 + 3));  // segment 1 is whole
}

TEST(LogVerify, ATornTailIsAProblemButTheChunksBeforeItAreFine) {
  const KnownRun run;
  const ex::LogReader full(run.segment(1));
  const size_t chunks = full.chunks().size();
  const uint64_t last = full.chunks().back().summary.offset;
  const std::string dir = fresh_dir();
  const std::string partial = dir + "/experience-000001.mslog.partial";
  fs::copy_file(run.segment(1), partial);
  fs::resize_file(partial, last + 70);

  const Output o = moonseed({"log", "verify", dir});
  EXPECT_EQ(o.exit_code, 1) << o.out << o.err;
  EXPECT_NE(o.out.find("torn at offset " + std::to_string(last)), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("the " + std::to_string(chunks - 1) + " complete chunks before it are fine"),
            std::string::npos)
      << o.out;
}

// ---- merge ----

TEST(LogMerge, WritesEveryRecordInWallTimeOrder) {
  const std::string a = fresh_dir(), b = fresh_dir(), out = fresh_dir() + "/merged";
  write_segment(a, {0, 2, 4}, known_schema("run-a"));
  write_segment(b, {1, 3, 5}, known_schema("run-b"));
  const Output o = moonseed({"log", "merge", out, a, b});
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_NE(o.out.find("merged 6 records from 2 logs"), std::string::npos) << o.out;

  const ex::LogReader reader(out);
  EXPECT_EQ(reader.schema().run_id, "run-a+run-b");
  EXPECT_TRUE(ex::same_layout(reader.schema(), known_schema()));
  EXPECT_TRUE(reader.problems().empty());
  ex::RecordCursor cursor = reader.scan();
  for (int r = 0; r < kRecords; ++r) {
    const std::optional<ex::Record> got = cursor.next();
    ASSERT_TRUE(got) << "record " << r;
    const ex::Record want = known_record(r);
    EXPECT_EQ(got->meta.wall_time_ns, kBaseTime + r * 1000);
    EXPECT_TRUE(got->meta == want.meta) << "record " << r;
    EXPECT_EQ(got->columns, want.columns) << "record " << r;
  }
  EXPECT_FALSE(cursor.next());

  const Output again = moonseed({"log", "merge", out, a});
  EXPECT_EQ(again.exit_code, 1);
  EXPECT_NE(again.err.find("already holds an experience log"), std::string::npos) << again.err;
}

TEST(LogMerge, RefusesLogsWhoseSchemasDifferNamingTheFirstDifference) {
  const std::string a = fresh_dir(), b = fresh_dir(), out = fresh_dir() + "/merged";
  write_segment(a, {0}, known_schema("run-a"));
  write_segment(b, {1}, known_schema("run-b", ex::DType::kF32));  // same bytes, other dtype
  const Output o = moonseed({"log", "merge", out, a, b});
  EXPECT_EQ(o.exit_code, 1);
  EXPECT_NE(o.err.find("column 1 action has dtype i32 vs f32"), std::string::npos) << o.err;
  EXPECT_FALSE(fs::exists(out));
}

// ---- usage ----

TEST(LogUsage, BadArgumentsExitTwoWithAMessage) {
  const std::string dir = KnownRun().run_dir;
  struct Case {
    std::vector<std::string> args;
    const char* message;
  };
  const Case cases[] = {
      {{"log"}, "usage: moonseed log COMMAND"},
      {{"log", "frobnicate", dir}, "unknown command 'frobnicate'"},
      {{"log", "ls"}, "moonseed log ls: expected a PATH"},
      {{"log", "info", dir, "--bogus"}, "unknown option '--bogus'"},
      {{"log", "cat", dir, "--limit", "many"}, "--limit expects an integer"},
      {{"log", "cat", dir, "--since", "yesterday"},
       "--since expects nanoseconds since the epoch or a UTC time"},
      {{"log", "merge", dir}, "expected OUT_DIR and at least one log"},
  };
  for (const Case& c : cases) {
    const Output o = moonseed(c.args);
    EXPECT_EQ(o.exit_code, 2) << c.args.back() << ": " << o.err;
    EXPECT_NE(o.err.find(c.message), std::string::npos) << o.err;
    EXPECT_EQ(o.out, "");
  }
}

TEST(LogUsage, HelpGoesToStdoutAndExitsZero) {
  for (const char* command : {"cat", "merge"}) {  // each run of the binary costs ~1 s
    const Output o = moonseed({"log", command, "--help"});
    EXPECT_EQ(o.exit_code, 0);
    EXPECT_EQ(o.out.rfind(std::string("usage: moonseed log ") + command, 0), 0u) << o.out;
  }
  const Output top = moonseed({"--help"});
  EXPECT_NE(top.out.find("log COMMAND PATH..."), std::string::npos) << top.out;
}

TEST(LogUsage, AMissingPathExitsOneNamingIt) {
  const Output o = moonseed({"log", "info", "/nonexistent/moonseed-run"});
  EXPECT_EQ(o.exit_code, 1);
  EXPECT_NE(o.err.find("/nonexistent/moonseed-run does not exist"), std::string::npos) << o.err;
}

// ---- cli/common/log_text.h ----

TEST(LogText, WallTimesPrintAsUtcWithNineFractionDigits) {
  EXPECT_EQ(format_wall_time(0), "1970-01-01T00:00:00.000000000Z");
  EXPECT_EQ(format_wall_time(-1), "1969-12-31T23:59:59.999999999Z");
  EXPECT_EQ(format_wall_time(kBaseTime + 1500), "2023-11-14T22:13:20.000001500Z");
}

TEST(LogText, WallTimesParseFromNanosecondsOrUtcText) {
  // 2026-11-23T14:47:49Z is 1795445269 s after the epoch (20780 days + 53269 s).
  EXPECT_EQ(parse_wall_time("2026-11-23T14:47:49.5Z"), int64_t{1795445269500000000});
  EXPECT_EQ(parse_wall_time("2026-11-23T14:47:49"), int64_t{1795445269000000000});
  EXPECT_EQ(parse_wall_time("1970-01-01T00:00:00.000000001Z"), int64_t{1});
  EXPECT_EQ(parse_wall_time("-42"), int64_t{-42});
  EXPECT_EQ(parse_wall_time(format_wall_time(kBaseTime + 123456789)), kBaseTime + 123456789);
  EXPECT_FALSE(parse_wall_time("2026-13-01T00:00:00Z"));
  EXPECT_FALSE(parse_wall_time("2026-11-23T14:47:49.1234567891Z"));  // 10 fraction digits
  EXPECT_FALSE(parse_wall_time("2026-11-23T14:47"));
  EXPECT_FALSE(parse_wall_time("12 "));
}

TEST(LogText, IntegersMustBeWholeAndInRange) {
  EXPECT_EQ(parse_integer("-5", -10, 10), int64_t{-5});
  EXPECT_FALSE(parse_integer("11", -10, 10));
  EXPECT_FALSE(parse_integer("3x", -10, 10));
  EXPECT_FALSE(parse_integer(" 3", -10, 10));
  EXPECT_FALSE(parse_integer("", -10, 10));
  EXPECT_FALSE(parse_integer("99999999999999999999", std::numeric_limits<int64_t>::min(),
                             std::numeric_limits<int64_t>::max()));
}

TEST(LogText, FloatsPrintWithTheFewestDigitsThatReadBack) {
  EXPECT_EQ(shortest_text(0.1f), "0.1");
  EXPECT_EQ(shortest_text(0.1), "0.1");
  EXPECT_EQ(shortest_text(1.0f / 3.0f), "0.33333334");
  EXPECT_EQ(shortest_text(1.0 / 3.0), "0.3333333333333333");
  EXPECT_EQ(shortest_text(-0.0), "-0");
  EXPECT_EQ(shortest_text(1e20), "1e+20");
  EXPECT_EQ(shortest_text(2.5f), "2.5");
  EXPECT_EQ(shortest_text(std::numeric_limits<double>::quiet_NaN()), "NaN");
  EXPECT_EQ(shortest_text(-std::numeric_limits<float>::infinity()), "-Infinity");
}

TEST(LogText, JsonStringsEscapeQuotesBackslashesAndControls) {
  EXPECT_EQ(json_string("a\"b\\c\nd\x01"), "\"a\\\"b\\\\c\\nd\\u0001\"");
  EXPECT_EQ(json_string("h\xC3\xA9"), "\"h\xC3\xA9\"");
}

TEST(LogText, ShapedColumnsPrintAsNestedArrays) {
  const ex::ColumnSpec column{"x", ex::DType::kI32, {2, 0}};
  std::string out;
  append_step_json(out, column, nullptr);
  EXPECT_EQ(out, "[[],[]]");
  const ex::ColumnSpec scalar{"y", ex::DType::kU8, {}};
  const uint8_t byte = 200;
  out.clear();
  append_step_json(out, scalar, &byte);
  EXPECT_EQ(out, "200");
}

}  // namespace
}  // namespace moonseed::cli
