// Learner groups end to end (docs/distributed.md): real `moonseed run`
// processes as ranks, real actors, c10d's stores and Gloo over loopback, and
// the faults caused for real (kill -9, SIGSTOP).
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <regex>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/free_port.h"

#include "tests/e2e/process.h"

namespace moonseed::testing {
namespace {

const std::string kBinary = MOONSEED_BINARY;
const std::string kExample = std::string(MOONSEED_SOURCE_DIR) + "/examples/cartpole_vtrace.lua";

// Two ranks of one actor each (the example's two actors spread over them).
struct GroupRun : TrainingRun {
  GroupRun() : TrainingRun(kExample, {"log.interval_s=0.25", "stop.return_mean=0", "topology.learners=2"}) {}
};

// The newest value of the string field `key` in a metrics.jsonl ("" when no row has it).
std::string last_string(const std::string& metrics_path, const std::string& key) {
  std::ifstream in(metrics_path);
  const std::string tag = "\"" + key + "\": \"";
  std::string found;
  for (std::string line; std::getline(in, line);) {
    const size_t at = line.find(tag);
    if (at == std::string::npos) continue;
    const size_t from = at + tag.size();
    found = line.substr(from, line.find('"', from) - from);
  }
  return found;
}

// The pid of rank `rank`, from the group line rank 0 prints once the group has met.
pid_t rank_pid(const std::string& log, int rank) {
  const std::regex re("rank " + std::to_string(rank) + " \\(host [^,]*, pid ([0-9]+)\\)");
  std::smatch m;
  const std::string text = read_file(log);
  if (!std::regex_search(text, m, re)) return -1;
  return static_cast<pid_t>(std::stol(m[1]));
}

bool rank_alive(pid_t pid) { return pid > 0 && ::kill(pid, 0) == 0; }

std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

// The names of the files in `dir` that start with `prefix` and end with `suffix`, sorted by
// the number between them (ckpt-9.pt before ckpt-10.pt).
std::vector<std::string> files_named(const std::string& dir, const std::string& prefix, const std::string& suffix) {
  std::vector<std::pair<long long, std::string>> found;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(prefix, 0) != 0 || name.size() < prefix.size() + suffix.size()) continue;
    if (name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0) continue;
    found.emplace_back(std::atoll(name.c_str() + prefix.size()), name);
  }
  std::sort(found.begin(), found.end());
  std::vector<std::string> names;
  for (auto& f : found) names.push_back(std::move(f.second));
  return names;
}

// `key` of `row`, -1 when the row has no such field.
double field(const MetricsRow& row, const std::string& key) {
  const auto it = row.find(key);
  return it == row.end() ? -1 : it->second;
}

// The row of a metrics.jsonl whose "event" is `event`, the newest (empty when none).
MetricsRow last_event(const std::string& metrics_path, const std::string& event) {
  const std::vector<MetricsRow> rows = read_events(metrics_path, event);
  return rows.empty() ? MetricsRow{} : rows.back();
}

// One entry of the "ranks" list of `ctl status` on rank 0 of a group.
struct ListedRank {
  int rank = -1;
  std::string host;
  double frames = -1, fps = -1, episodes = -1, optimizer_steps = -1, actors = -1, report_age_s = -1;
  bool stale = true;
};

// Every entry of `status`'s "ranks", in its order (numbers that are null read as -1).
std::vector<ListedRank> listed_ranks(const std::string& status) {
  const std::string num = "([0-9.e+-]+|null)";
  static const std::regex entry("\\{\"rank\": ([0-9]+), \"host\": \"([^\"]*)\", \"frames\": " + num +
                                ", \"fps\": " + num + ", \"episodes\": " + num + ", \"return_mean\": " + num +
                                ", \"optimizer_steps\": " + num + ", \"actors\": " + num +
                                ", \"report_age_s\": " + num + ", \"stale\": (true|false)\\}");
  const auto number = [](const std::string& text) { return text == "null" ? -1.0 : std::stod(text); };
  std::vector<ListedRank> out;
  const size_t list = status.find("\"ranks\": [");
  if (list == std::string::npos) return out;
  const std::string rest = status.substr(list, status.find(']', list) - list);
  for (auto it = std::sregex_iterator(rest.begin(), rest.end(), entry); it != std::sregex_iterator(); ++it) {
    const std::smatch& m = *it;
    ListedRank r;
    r.rank = std::stoi(m[1].str());
    r.host = m[2].str();
    r.frames = number(m[3].str());
    r.fps = number(m[4].str());
    r.episodes = number(m[5].str());
    r.optimizer_steps = number(m[7].str());
    r.actors = number(m[8].str());
    r.report_age_s = number(m[9].str());
    r.stale = m[10].str() == "true";
    out.push_back(r);
  }
  return out;
}

// The first (top-level) number `key` of a status reply; -1 when it has none.
double status_number(const std::string& status, const std::string& key) {
  std::smatch m;
  if (!std::regex_search(status, m, std::regex("\"" + key + "\": ([0-9.e+-]+)"))) return -1;
  return std::stod(m[1].str());
}

// `moonseed ctl RUN_DIR status`'s reply ("" when it failed).
std::string ctl_status(const TrainingRun& run) {
  static int calls = 0;
  const std::string out = run.log + ".status-" + std::to_string(++calls);  // run_to_end's output is the whole file
  const Finished f = run_to_end({kBinary, "ctl", run.run_dir(), "status"}, out, 60);
  return f.exit_code == std::optional<int>(0) ? f.output : "";
}

// Both ranks listed by rank 0's status, each having reported frames; those of `stale_rank` stale, the others not.
bool ranks_listed(const std::string& status, int stale_rank = -1) {
  const std::vector<ListedRank> ranks = listed_ranks(status);
  if (ranks.size() != 2) return false;
  for (int r = 0; r < 2; ++r) {
    if (ranks[r].rank != r || !(ranks[r].frames > 0) || ranks[r].stale != (r == stale_rank)) return false;
  }
  return true;
}


// Both ranks have trained: rank 0's rows show each rank's frames.
bool both_ranks_trained(const TrainingRun& run) {
  const std::vector<MetricsRow> rows = run.metrics();
  return last(rows, "optimizer_steps") > 5 && last(rows, "rank0_frames") > 0 && last(rows, "rank1_frames") > 0;
}

TEST(LearnerGroup, TwoRanksSolveCartPoleInOneCommandAndEndWithEqualWeights) {
  GroupRun run;
  // A loose bound (the example stops at 475): two ranks of 32 envs, batches of 16 each.
  ChildProcess learner(run.args({"stop.return_mean=300", kUntilStopped}), run.log);
  const std::optional<int> code = learner.wait(280);
  ASSERT_EQ(code, std::optional<int>(0)) << read_file(run.log);
  const std::string dir = run.run_dir();
  const std::vector<MetricsRow> rows = run.metrics();
  // Stopped by the rule, on the group's return (the stop row's mean is recomputed from the ranks'
  // last reports, which may be a beat older or newer).
  EXPECT_NE(read_file(run.log).find("stopped: return_mean"), std::string::npos) << read_file(run.log);
  EXPECT_GE(last(rows, "return_mean"), 200) << read_file(run.log);
  EXPECT_EQ(last(rows, "learners"), 2);
  EXPECT_GT(last(rows, "rank0_frames"), 0);
  EXPECT_GT(last(rows, "rank1_frames"), 0);
  // The group's frames are at least the ranks' last reports together.
  EXPECT_GE(last(rows, "frames"), last(rows, "rank0_frames") + last(rows, "rank1_frames"));
  EXPECT_GT(last(rows, "weights_checked_step"), 0) << "no weights comparison was made";
  // Bit for bit: the hash of every weight, as each rank wrote it in its stop row.
  const std::string rank0 = last_string(dir + "/metrics.jsonl", "weights_hash");
  const std::string rank1 = last_string(dir + "/ranks/1/metrics.jsonl", "weights_hash");
  ASSERT_FALSE(rank0.empty()) << read_file(run.log);
  EXPECT_EQ(rank0, rank1) << read_file(dir + "/ranks/1/run.log");
  // Rank 1 kept its own files under the group's run directory: no model, but
  // its part of the group's last checkpoint, of the same step as rank 0's.
  EXPECT_TRUE(std::filesystem::exists(dir + "/ranks/1/actors"));
  const std::vector<std::string> models = files_named(dir + "/checkpoints", "ckpt-", ".pt");
  ASSERT_FALSE(models.empty());
  EXPECT_TRUE(files_named(dir + "/ranks/1/checkpoints", "ckpt-", "").empty());
  const std::string step = models.back().substr(5, models.back().size() - 8);
  EXPECT_TRUE(std::filesystem::exists(dir + "/ranks/1/checkpoints/rank-" + step + ".part"))
      << read_file(dir + "/ranks/1/run.log");
  EXPECT_TRUE(std::filesystem::exists(dir + "/checkpoints/rank-" + step + ".part"));
}

TEST(LearnerGroup, TwoR2d2RanksEachWithItsOwnReplayTrainOneModel) {
  TrainingRun run(std::string(MOONSEED_SOURCE_DIR) + "/examples/cartpole_r2d2.lua",
                  {"log.interval_s=0.25", "stop.return_mean=0", "stop.eval_return_mean=0", "topology.learners=2"});
  ChildProcess learner(run.args({"stop.frames=30000"}), run.log);
  ASSERT_EQ(learner.wait(280), std::optional<int>(0)) << read_file(run.log);
  const std::string dir = run.run_dir();
  EXPECT_GT(last(run.metrics(), "optimizer_steps"), 10) << read_file(run.log);
  // Each rank filled its own replay from its own actors.
  EXPECT_GT(last(read_metrics(dir + "/ranks/1/metrics.jsonl"), "replay_size"), 0) << read_file(dir + "/ranks/1/run.log");
  EXPECT_FALSE(last_string(dir + "/metrics.jsonl", "weights_hash").empty());
  EXPECT_EQ(last_string(dir + "/metrics.jsonl", "weights_hash"),
            last_string(dir + "/ranks/1/metrics.jsonl", "weights_hash"));
  // Rank 1's part of the last checkpoint holds its own replay and counters.
  const std::vector<std::string> parts = files_named(dir + "/ranks/1/checkpoints", "rank-", ".part");
  ASSERT_FALSE(parts.empty()) << read_file(dir + "/ranks/1/run.log");
  EXPECT_TRUE(std::filesystem::exists(dir + "/ranks/1/checkpoints/" + parts.back() + ".replay"));
  const double rank1_frames = last(read_metrics(dir + "/ranks/1/metrics.jsonl"), "frames");

  // --resume restores the whole group: rank 1 gets the model from rank 0 and
  // its own replay and frames from its part, not rank 0's.
  ChildProcess resumed({kBinary, "run", "--resume", dir, frames_past_last_row(run, 6000), "log.interval_s=0.25"},
                       run.log);
  ASSERT_EQ(resumed.wait(280), std::optional<int>(0)) << read_file(run.log);
  const MetricsRow rank1 = last_event(dir + "/ranks/1/metrics.jsonl", "resume");
  ASSERT_FALSE(rank1.empty()) << read_file(dir + "/ranks/1/run.log");
  EXPECT_GT(field(rank1, "replay_size"), 0) << read_file(dir + "/ranks/1/run.log");
  EXPECT_GT(field(rank1, "frames"), 0);
  EXPECT_LE(field(rank1, "frames"), rank1_frames);
  const MetricsRow rank0 = last_event(dir + "/metrics.jsonl", "resume");
  EXPECT_EQ(field(rank1, "optimizer_steps"), field(rank0, "optimizer_steps"));
  EXPECT_NE(read_file(dir + "/ranks/1/run.log").find("and its own part"), std::string::npos);
  EXPECT_EQ(last_string(dir + "/metrics.jsonl", "weights_hash"),
            last_string(dir + "/ranks/1/metrics.jsonl", "weights_hash"));
}

// APPO takes appo.epochs x appo.minibatches all-reduced updates per batch on every rank: the ranks
// end bit for bit equal. (A rank without a batch in a round takes as many zero-gradient updates:
// AppoAgent.ABatchTakesEpochsTimesMinibatchesStepsAndCountsItsFramesOnce counts them.)
TEST(LearnerGroup, TwoAppoRanksTakeTheSameUpdatesAndEndWithEqualWeights) {
  TrainingRun run(std::string(MOONSEED_SOURCE_DIR) + "/examples/cartpole_appo.lua",
                  {"log.interval_s=0.25", "stop.return_mean=0", "topology.learners=2"});
  ChildProcess learner(run.args({"stop.frames=60000"}), run.log);
  ASSERT_EQ(learner.wait(280), std::optional<int>(0)) << read_file(run.log);
  const std::string dir = run.run_dir();
  const std::vector<MetricsRow> rows = run.metrics();
  EXPECT_GT(last(rows, "optimizer_steps"), 5) << read_file(run.log);
  EXPECT_GT(last(rows, "rank1_frames"), 0);
  EXPECT_GE(last(rows, "clip_fraction"), 0);
  const std::string rank0 = last_string(dir + "/metrics.jsonl", "weights_hash");
  ASSERT_FALSE(rank0.empty()) << read_file(run.log);
  EXPECT_EQ(rank0, last_string(dir + "/ranks/1/metrics.jsonl", "weights_hash")) << read_file(dir + "/ranks/1/run.log");
}

TEST(LearnerGroup, AKilledRankStopsTheGroupNamingItAndResumeRestartsTheGroup) {
  GroupRun run;
  ChildProcess learner(run.args({kUntilStopped, "checkpoint.interval_s=1"}), run.log);
  // Killed once the group has checkpointed: rank 1 has a part to resume from.
  ASSERT_TRUE(eventually(120, [&] {
    return both_ranks_trained(run) && !files_named(run.run_dir() + "/ranks/1/checkpoints", "rank-", ".part").empty();
  })) << read_file(run.log);
  const pid_t rank1 = rank_pid(run.log, 1);
  ASSERT_TRUE(rank_alive(rank1)) << read_file(run.log);
  ::kill(rank1, SIGKILL);
  const std::optional<int> code = learner.wait(120);
  ASSERT_EQ(code, std::optional<int>(3)) << read_file(run.log);
  const std::string out = read_file(run.log);
  EXPECT_NE(out.find("rank 1 (host"), std::string::npos) << out;
  const double steps = last(run.metrics(), "optimizer_steps");

  // The group comes back from rank 0's newest checkpoint, both ranks again.
  ChildProcess resumed({kBinary, "run", "--resume", run.run_dir(), frames_past_last_row(run, 20000),
                        "log.interval_s=0.25"},
                       run.log);
  ASSERT_EQ(resumed.wait(180), std::optional<int>(0)) << read_file(run.log);
  const std::vector<MetricsRow> rows = run.metrics();
  EXPECT_GT(last(rows, "optimizer_steps"), steps);
  // Rank 1 was killed before the group's last checkpoint: it takes its newest part, of a checkpoint before.
  const std::string rank1_log = read_file(run.run_dir() + "/ranks/1/run.log");
  EXPECT_NE(rank1_log.find("resumed the group's checkpoint"), std::string::npos) << rank1_log;
  EXPECT_NE(rank1_log.find("and its own part"), std::string::npos) << rank1_log;
  EXPECT_EQ(last_string(run.run_dir() + "/metrics.jsonl", "weights_hash"),
            last_string(run.run_dir() + "/ranks/1/metrics.jsonl", "weights_hash"));
}

// Rank 1's newest part cut short after it was written (its manifest says how
// long it was): the resumed rank skips it, saying why, and takes its newest
// good part before it. The part used to refuse the whole group's resume.
TEST(LearnerGroup, ARankSkipsADamagedPartForItsNewestGoodOne) {
  GroupRun run;
  ChildProcess learner(run.args({kUntilStopped, "checkpoint.interval_s=1", "checkpoint.keep=100"}), run.log);
  const auto parts_dir = [&] { return run.run_dir() + "/ranks/1/checkpoints"; };
  ASSERT_TRUE(eventually(120, [&] {
    return both_ranks_trained(run) && files_named(parts_dir(), "rank-", ".part").size() >= 2;
  })) << read_file(run.log);
  learner.signal(SIGINT);
  ASSERT_EQ(learner.wait(120), std::optional<int>(0)) << read_file(run.log);
  const std::vector<std::string> parts = files_named(parts_dir(), "rank-", ".part");
  ASSERT_GE(parts.size(), 2u);
  const std::string damaged = parts_dir() + "/" + parts.back();
  const uintmax_t size = std::filesystem::file_size(damaged);
  std::filesystem::resize_file(damaged, size - 1);

  ChildProcess resumed({kBinary, "run", "--resume", run.run_dir(), frames_past_last_row(run, 2000),
                        "log.interval_s=0.25"},
                       run.log);
  ASSERT_EQ(resumed.wait(180), std::optional<int>(0)) << read_file(run.log);
  const std::string rank1_log = read_file(run.run_dir() + "/ranks/1/run.log");
  EXPECT_NE(rank1_log.find("moonseed: skipping rank part " + damaged + ": " + damaged + " is " +
                           std::to_string(size - 1) + " bytes, its manifest records " + std::to_string(size)),
            std::string::npos)
      << rank1_log;
  EXPECT_NE(rank1_log.find("and its own part " + parts_dir() + "/" + parts[parts.size() - 2]), std::string::npos)
      << rank1_log;
}

TEST(LearnerGroup, AStoppedRankStopsTheGroupWithinItsTimeoutNamingIt) {
  GroupRun run;
  ChildProcess learner(run.args({kUntilStopped, "topology.group_timeout_s=4"}), run.log);
  ASSERT_TRUE(eventually(120, [&] { return both_ranks_trained(run); })) << read_file(run.log);
  const pid_t rank1 = rank_pid(run.log, 1);
  ASSERT_TRUE(rank_alive(rank1));
  ::kill(rank1, SIGSTOP);
  const std::optional<int> code = learner.wait(120);
  ::kill(rank1, SIGKILL);  // it was stopped: nothing else would end it
  ASSERT_EQ(code, std::optional<int>(3)) << read_file(run.log);
  const std::string out = read_file(run.log);
  EXPECT_NE(out.find("rank 1 (host"), std::string::npos) << out;
  // The last good weights were kept: rank 0 wrote its final checkpoint.
  EXPECT_FALSE(std::filesystem::is_empty(run.run_dir() + "/checkpoints"));
}

TEST(LearnerGroup, RanksStartedOneByOneMeetOverATcpRendezvousAndStopTogether) {
  // topology.actors counts the group's actors: one for each rank.
  TrainingRun run(kExample, {"log.interval_s=0.25", "stop.return_mean=0", "topology.actors=2"});
  const std::string rendezvous = "tcp:127.0.0.1:" + std::to_string(free_port());
  const std::vector<std::string> group = {"--world-size", "2", "--rendezvous", rendezvous};
  std::vector<std::string> rank0_args = run.args({"stop.frames=30000"});
  rank0_args.insert(rank0_args.end(), {"--rank", "0"});
  rank0_args.insert(rank0_args.end(), group.begin(), group.end());
  std::vector<std::string> rank1_args = run.args({kUntilStopped});
  rank1_args.insert(rank1_args.end(), {"--rank", "1"});
  rank1_args.insert(rank1_args.end(), group.begin(), group.end());
  const std::string log1 = run.log + ".rank1";
  // Both ranks (and their actors) get the run's token: a TCP rendezvous refuses to start without one.
  ::setenv("MOONSEED_AUTH_TOKEN", "a token for this test only", 1);
  ChildProcess rank0(rank0_args, run.log);
  ChildProcess rank1(rank1_args, log1);
  ::unsetenv("MOONSEED_AUTH_TOKEN");
  ASSERT_EQ(rank0.wait(180), std::optional<int>(0)) << read_file(run.log) << read_file(log1);
  // Rank 0's stop ended rank 1 too, at the same round.
  ASSERT_EQ(rank1.wait(60), std::optional<int>(0)) << read_file(log1);
  EXPECT_NE(read_file(log1).find("rank 0's decision"), std::string::npos) << read_file(log1);
  const std::string dir = run.run_dir();
  EXPECT_EQ(last_string(dir + "/metrics.jsonl", "weights_hash"),
            last_string(dir + "/ranks/1/metrics.jsonl", "weights_hash"));
}

TEST(LearnerGroup, ATcpRendezvousIsRefusedWithoutAToken) {
  char host[256] = {};
  ASSERT_EQ(::gethostname(host, sizeof host - 1), 0);
  TrainingRun run(kExample, {"stop.return_mean=0"});
  std::vector<std::string> args = run.args({kUntilStopped});
  // This host's own name: refused before anything listens or connects.
  args.insert(args.end(), {"--rank", "0", "--world-size", "2", "--rendezvous", std::string("tcp:") + host + ":29999"});
  ::unsetenv("MOONSEED_AUTH_TOKEN");
  const Finished f = run_to_end(args, run.log, 60);
  ASSERT_TRUE(f.exit_code.has_value());
  EXPECT_NE(*f.exit_code, 0);
  EXPECT_NE(f.output.find("c10d's store has no authentication"), std::string::npos) << f.output;
  EXPECT_NE(f.output.find("--auth-token-file"), std::string::npos) << f.output;
}

// `moonseed actor --any-rank` given rank 0's address: the group sends each actor to the
// rank with the fewest (rank 0 keeps it on a tie); one given rank 1's address joins rank 1.
TEST(LearnerGroup, ActorsThatLetTheGroupPlaceThemAreSpreadOverTheRanks) {
  GroupRun run;
  ChildProcess learner(run.args({kUntilStopped, "topology.local_actors=0", "topology.actors=6",
                                 "topology.listen=\"tcp:127.0.0.1:0\""}),
                       run.log);
  std::string rank0, rank1;
  ASSERT_TRUE(eventually(120, [&] {
    if (run.run_dir().empty()) return false;
    rank0 = first_line(read_file(run.run_dir() + "/learner.address"));
    rank1 = first_line(read_file(run.run_dir() + "/ranks/1/learner.address"));
    return !rank0.empty() && !rank1.empty() && last(run.metrics(), "learners_reporting") == 2;
  })) << read_file(run.log);
  ASSERT_NE(rank0, rank1);
  std::vector<std::unique_ptr<ChildProcess>> actors;
  const auto actor_log = [&](size_t k) { return run.runs_dir + "/actor-" + std::to_string(k) + ".log"; };
  const auto actors_on = [&](int rank) { return last(run.metrics(), "rank" + std::to_string(rank) + "_actors"); };
  // One at a time, each once rank 0's rows (and so its placement, which reads the same
  // reports) count the one before.
  for (int k = 0; k < 4; ++k) {
    actors.push_back(std::make_unique<ChildProcess>(
        std::vector<std::string>{kBinary, "actor", "--connect", rank0, "--any-rank"}, actor_log(actors.size())));
    ASSERT_TRUE(eventually(60, [&] { return actors_on(0) + actors_on(1) == k + 1; }))
        << read_file(run.log) << read_file(actor_log(actors.size() - 1));
  }
  EXPECT_EQ(actors_on(0), 2);
  EXPECT_EQ(actors_on(1), 2);
  int sent = 0;
  for (size_t k = 0; k < actors.size(); ++k) {
    const std::string out = read_file(actor_log(k));
    if (out.find("sent to " + rank1) != std::string::npos) ++sent;
    EXPECT_EQ(out.find("sent to " + rank0), std::string::npos) << out;
  }
  EXPECT_EQ(sent, 2);
  // Given a rank's own address (no --any-rank), an actor joins that rank, the fuller one or not.
  actors.push_back(std::make_unique<ChildProcess>(std::vector<std::string>{kBinary, "actor", "--connect", rank1},
                                                  actor_log(actors.size())));
  EXPECT_TRUE(eventually(60, [&] { return actors_on(1) == 3; })) << read_file(run.log);
  EXPECT_EQ(actors_on(0), 2);
  learner.signal(SIGTERM);
  EXPECT_EQ(learner.wait(120), std::optional<int>(0)) << read_file(run.log);
  for (size_t k = 0; k < actors.size(); ++k) {
    EXPECT_EQ(actors[k]->wait(60), std::optional<int>(0)) << read_file(actor_log(k));
  }
}

TEST(LearnerGroup, ASetOnRankZeroTakesEffectOnEveryRankAtTheSameStep) {
  GroupRun run;
  ChildProcess learner(run.args({kUntilStopped}), run.log);
  ASSERT_TRUE(eventually(120, [&] { return both_ranks_trained(run); })) << read_file(run.log);
  const std::string ctl_log = run.log + ".ctl";
  const Finished set = run_to_end({kBinary, "ctl", run.run_dir(), "set", "optimizer.lr", "2.5e-4"}, ctl_log, 60);
  ASSERT_EQ(set.exit_code, std::optional<int>(0)) << set.output;
  // Rank 1 trains with it (its own rows show its learning rate) ...
  const std::string rank1_metrics = run.run_dir() + "/ranks/1/metrics.jsonl";
  ASSERT_TRUE(eventually(60, [&] { return last(read_metrics(rank1_metrics), "learning_rate") == 2.5e-4; }))
      << read_file(run.run_dir() + "/ranks/1/run.log");
  // ... and took it at the step rank 0 did: the weights stayed equal through the change.
  const double steps = last(run.metrics(), "optimizer_steps");
  ASSERT_TRUE(eventually(60, [&] { return last(run.metrics(), "optimizer_steps") > steps + 100; }));
  learner.signal(SIGINT);
  ASSERT_EQ(learner.wait(120), std::optional<int>(0)) << read_file(run.log);
  EXPECT_EQ(last_string(run.run_dir() + "/metrics.jsonl", "weights_hash"), last_string(rank1_metrics, "weights_hash"));
}

TEST(LearnerGroup, CtlStatusOnRankZeroShowsTheGroupsCountersAndEachRank) {
  GroupRun run;
  // A long group timeout: rank 1 is stopped below for longer than a log tick, not long enough to fail the group.
  ChildProcess learner(run.args({kUntilStopped, "topology.group_timeout_s=600"}), run.log);
  ASSERT_TRUE(eventually(120, [&] { return both_ranks_trained(run); })) << read_file(run.log);
  std::string status;
  ASSERT_TRUE(eventually(60, [&] { return ranks_listed(status = ctl_status(run)); })) << status << read_file(run.log);
  const std::vector<ListedRank> ranks = listed_ranks(status);
  char host[256] = {};
  ASSERT_EQ(::gethostname(host, sizeof host - 1), 0);
  for (const ListedRank& r : ranks) {
    EXPECT_EQ(r.host, host) << status;
    EXPECT_EQ(r.actors, 1) << status;  // the example's two actors, one for each rank
    EXPECT_GT(r.optimizer_steps, 0) << status;
    EXPECT_GE(r.report_age_s, 0) << status;
  }
  // The status's counters are the group's, from the same reports as the ranks' entries.
  EXPECT_GE(status_number(status, "frames"), ranks[0].frames + ranks[1].frames) << status;
  EXPECT_EQ(status_number(status, "episodes"), ranks[0].episodes + ranks[1].episodes) << status;
  EXPECT_EQ(status_number(status, "actors"), 2) << status;
  EXPECT_EQ(status_number(status, "learners"), 2) << status;
  EXPECT_NEAR(status_number(status, "fps"), ranks[0].fps + ranks[1].fps, 1e-6 * (1 + ranks[0].fps + ranks[1].fps))
      << status;

  // A stopped rank reports nothing: rank 0 lists it as stale, and fresh again once it goes on.
  const pid_t rank1 = rank_pid(run.log, 1);
  ASSERT_TRUE(rank_alive(rank1)) << read_file(run.log);
  ::kill(rank1, SIGSTOP);
  const bool went_stale = eventually(120, [&] { return ranks_listed(status = ctl_status(run), 1); });
  ::kill(rank1, SIGCONT);
  EXPECT_TRUE(went_stale) << status;
  EXPECT_TRUE(eventually(120, [&] { return ranks_listed(status = ctl_status(run)); })) << status;

  // Rank 1's own status is its own: no group section.
  const Finished own = run_to_end({kBinary, "ctl", run.run_dir() + "/ranks/1", "status"}, run.log + ".rank1", 60);
  ASSERT_EQ(own.exit_code, std::optional<int>(0)) << own.output;
  EXPECT_EQ(own.output.find("\"ranks\""), std::string::npos) << own.output;
  learner.signal(SIGINT);
  EXPECT_EQ(learner.wait(120), std::optional<int>(0)) << read_file(run.log);
}

}  // namespace
}  // namespace moonseed::testing
