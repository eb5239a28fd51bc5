#include "cli/engine/learner_group.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <poll.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <stdexcept>
#include <thread>

#include "curves/metrics_row.h"
#include "rpc/address.h"
#include "engine/group/c10d_group.h"
#include "scripts/loader/sha256.h"

extern char** environ;

namespace moonseed::cli {
namespace {

int share(int total, int n, int rank) { return total / n + (rank < total % n ? 1 : 0); }

// A pidfd names the process itself, not its pid: a rank, which is not this
// process's child, can be watched and killed without racing pid reuse.
int pidfd_of(pid_t pid) { return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)); }
void kill_by_pidfd(int pidfd) { ::syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, nullptr, 0); }
bool exited(int pidfd) {
  pollfd p{pidfd, POLLIN, 0};
  return ::poll(&p, 1, 0) > 0;
}

// The mean of `means` weighted by `counts`, over those with a count; NaN when none has.
double weighted_mean(const std::vector<std::pair<double, double>>& mean_count) {
  double sum = 0, n = 0;
  for (const auto& [mean, count] : mean_count) {
    if (count > 0 && std::isfinite(mean)) {
      sum += mean * count;
      n += count;
    }
  }
  return n > 0 ? sum / n : std::numeric_limits<double>::quiet_NaN();
}

constexpr int kReturnWindow = 100;  // the episodes behind a return mean (EpisodeMeans)

}  // namespace

engine::ExperimentConfig rank_config(const engine::ExperimentConfig& group, int rank) {
  engine::ExperimentConfig c = group;
  const int n = std::max(1, group.topology.learners);
  c.topology.actors = share(group.topology.actors, n, rank);
  if (group.topology.local_actors >= 0) c.topology.local_actors = share(group.topology.local_actors, n, rank);
  // The learner is one learner of its share; the group is the run's business (Learner::join_group).
  c.topology.learners = 1;
  c.topology.rank = 0;
  c.topology.rendezvous.clear();
  return c;
}

std::string rank_listen_address(const std::string& listen, int rank) {
  const size_t colon = listen.rfind(':');
  if (listen.rfind("tcp:", 0) != 0 || colon == std::string::npos || rank == 0) return listen;
  int port = 0;
  try {
    port = std::stoi(listen.substr(colon + 1));
  } catch (const std::exception&) {
    return listen;
  }
  if (port <= 0) return listen;
  return listen.substr(0, colon + 1) + std::to_string(port + rank);
}

std::string local_rendezvous(const std::string& run_dir) { return "file:" + run_dir + "/group.store"; }

std::string rank_directory(const std::string& group_run_dir, const std::string& runs_dir, int rank) {
  namespace fs = std::filesystem;
  const std::string suffix = "rank" + std::to_string(rank);
  std::string dir;
  std::error_code ec;
  if (fs::is_directory(group_run_dir, ec)) {
    dir = group_run_dir + "/ranks/" + std::to_string(rank);
  } else {
    dir = runs_dir + "/" + fs::path(group_run_dir).filename().string() + "-" + suffix;
  }
  fs::create_directories(dir, ec);
  if (ec) throw std::runtime_error("cannot create the directory of rank " + std::to_string(rank) + ", " + dir + ": " + ec.message());
  return dir;
}

LocalRanks::LocalRanks(const std::string& engine, const std::string& run_dir, const std::string& config_lua,
                       int world_size, const std::string& rendezvous, const std::vector<std::string>& extra) {
  for (int rank = 1; rank < world_size; ++rank) {
    const std::string dir = run_dir + "/ranks/" + std::to_string(rank);
    std::filesystem::create_directories(dir);
    const std::string log = dir + "/run.log";
    std::vector<std::string> args = {engine,         "run",          config_lua, "--rank", std::to_string(rank),
                                     "--world-size", std::to_string(world_size), "--rendezvous", rendezvous,
                                     "--quiet",      "--no-watch"};
    args.insert(args.end(), extra.begin(), extra.end());
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
    // The children take SIGINT and SIGTERM as their parent would (the run blocks them for its signalfd).
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    sigset_t none;
    sigemptyset(&none);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK);
    // The rank is started by a short-lived intermediate child, so that it is not
    // a child of this process: LocalActors' reaper waits for any child, and would
    // otherwise wait for the ranks (which wait for this process) at shutdown.
    int pipe_fds[2];
    if (::pipe2(pipe_fds, O_CLOEXEC) != 0) throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
    const pid_t middle = ::fork();
    if (middle == 0) {
      pid_t pid = -1;
      const int err = posix_spawn(&pid, engine.c_str(), &actions, &attr, argv.data(), environ);
      const int64_t message[2] = {err, pid};
      (void)!::write(pipe_fds[1], message, sizeof message);
      ::_exit(0);
    }
    ::close(pipe_fds[1]);
    int64_t message[2] = {errno, -1};
    const bool heard = middle > 0 && ::read(pipe_fds[0], message, sizeof message) == sizeof message;
    ::close(pipe_fds[0]);
    if (middle > 0) ::waitpid(middle, nullptr, 0);
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attr);
    const pid_t pid = static_cast<pid_t>(message[1]);
    if (!heard || message[0] != 0 || pid <= 0) {
      throw std::runtime_error("cannot start learner rank " + std::to_string(rank) + " (" + engine +
                               "): " + std::strerror(heard ? static_cast<int>(message[0]) : errno));
    }
    pids_.push_back(pid);
    pidfds_.push_back(pidfd_of(pid));
    codes_.push_back(-1);
    logs_.push_back(dir + "/exit_code");
  }
}

LocalRanks::~LocalRanks() {
  for (size_t i = 0; i < pids_.size(); ++i) {
    if (pids_[i] > 0 && pidfds_[i] >= 0 && !exited(pidfds_[i])) kill_by_pidfd(pidfds_[i]);
    reap(i, /*block=*/true);
    if (pidfds_[i] >= 0) ::close(pidfds_[i]);
  }
}

void LocalRanks::reap(size_t i, bool block) {
  if (pids_[i] <= 0) return;
  if (pidfds_[i] >= 0) {
    pollfd p{pidfds_[i], POLLIN, 0};
    if (::poll(&p, 1, block ? -1 : 0) <= 0) return;
  }
  // Not this process's child: the rank writes its exit code when it ends on its own.
  std::ifstream in(logs_[i]);
  int code = -1;
  codes_[i] = (in >> code) ? code : -1;
  pids_[i] = -1;
}

std::vector<int> LocalRanks::wait(double timeout_s) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  for (;;) {
    bool running = false;
    for (size_t i = 0; i < pids_.size(); ++i) {
      if (pids_[i] <= 0) continue;
      if (pidfds_[i] < 0 || exited(pidfds_[i])) {
        reap(i, /*block=*/false);
      } else {
        running = true;
      }
    }
    if (!running) break;
    if (std::chrono::steady_clock::now() >= deadline) {
      for (size_t i = 0; i < pids_.size(); ++i) {
        if (pids_[i] <= 0) continue;
        kill_by_pidfd(pidfds_[i]);
        reap(i, /*block=*/true);
        codes_[i] = 128 + SIGKILL;
      }
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return codes_;
}

std::string hmac_sha256_hex(const std::string& key, const std::string& message) {
  constexpr size_t kBlock = 64;
  std::string k = key;
  if (k.size() > kBlock) {
    scripts::Sha256 h;
    h.update(k);
    const scripts::Sha256::Digest d = h.finish();
    k.assign(d.begin(), d.end());
  }
  k.resize(kBlock, '\0');
  std::string inner_pad(kBlock, '\0'), outer_pad(kBlock, '\0');
  for (size_t i = 0; i < kBlock; ++i) {
    inner_pad[i] = static_cast<char>(k[i] ^ 0x36);
    outer_pad[i] = static_cast<char>(k[i] ^ 0x5c);
  }
  scripts::Sha256 inner;
  inner.update(inner_pad);
  inner.update(message);
  const scripts::Sha256::Digest inner_digest = inner.finish();
  scripts::Sha256 outer;
  outer.update(outer_pad);
  outer.update(inner_digest.data(), inner_digest.size());
  return scripts::to_hex(outer.finish());
}

namespace {

constexpr const char kSealed[] = "hmac-sha256:";

// Equal strings, in a time that does not depend on where they differ.
bool same(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

}  // namespace

std::string SealedValues::seal(const std::string& key, const std::string& value) const {
  if (token_.empty()) return value;
  // The key is signed too: a value cannot be moved to another key.
  return kSealed + hmac_sha256_hex(token_, key + '\n' + value) + "\n" + value;
}

std::optional<std::string> SealedValues::open(const std::string& key, const std::string& stored) const {
  if (token_.empty()) return stored;
  const size_t prefix = sizeof kSealed - 1;
  const size_t nl = stored.find('\n');
  if (stored.compare(0, prefix, kSealed) != 0 || nl == std::string::npos) return std::nullopt;
  const std::string value = stored.substr(nl + 1);
  if (!same(stored.substr(prefix, nl - prefix), hmac_sha256_hex(token_, key + '\n' + value))) return std::nullopt;
  return value;
}

void SealedValues::put(const std::string& key, const std::string& value) { group_.put(key, seal(key, value)); }

std::string SealedValues::get(const std::string& key) {
  std::optional<std::string> value = open(key, group_.get(key));
  if (!value) {
    throw engine::GroupError("learner group: \"" + key + "\" in the rendezvous store is not signed with this "
                             "rank's token: the ranks were given different tokens, or something other than "
                             "a rank of this group wrote to the store (docs/security.md)");
  }
  return *value;
}

void SealedValues::publish_report(const std::string& json) {
  group_.publish_report(seal("report/" + std::to_string(group_.rank()), json));
}

std::vector<std::optional<std::string>> SealedValues::reports() {
  std::vector<std::optional<std::string>> out = group_.reports();
  for (size_t r = 0; r < out.size(); ++r) {
    if (out[r]) out[r] = open("report/" + std::to_string(r), *out[r]);
  }
  return out;
}

std::string rank_report(int rank, const std::string& host, const engine::LearnerStats& s, double fps,
                        int64_t seq, const std::string& address) {
  engine::MetricsRow row;
  row.add("rank", rank).add("host", host).add("frames", s.frames).add("fps", fps).add("episodes", s.episodes)
      .add("return_mean", s.return_mean).add("return_count", std::min<int64_t>(s.episodes, kReturnWindow))
      .add("eval_episodes", s.eval_episodes).add("eval_return_mean", s.eval_return_mean)
      .add("eval_return_count", std::min<int64_t>(s.eval_episodes, kReturnWindow))
      .add("optimizer_steps", s.optimizer_steps).add("actors", s.actors_connected).add("seq", seq);
  if (!address.empty()) row.add("address", address);
  return row.to_json();
}

std::optional<RankReport> parse_rank_report(const std::string& json) {
  if (json.size() > kMaxRankReportBytes) return std::nullopt;
  const std::optional<curves::MetricsRow> row = curves::parse_metrics_row(json);
  if (!row) return std::nullopt;
  const auto get = [&](const char* k) {
    const auto it = row->numbers.find(k);
    return it == row->numbers.end() ? std::numeric_limits<double>::quiet_NaN() : it->second;
  };
  RankReport r;
  r.rank = static_cast<int>(get("rank"));
  r.frames = get("frames");
  r.fps = get("fps");
  r.episodes = get("episodes");
  r.return_mean = get("return_mean");
  r.return_count = get("return_count");
  r.eval_episodes = get("eval_episodes");
  r.eval_return_mean = get("eval_return_mean");
  r.eval_return_count = get("eval_return_count");
  r.optimizer_steps = get("optimizer_steps");
  r.actors = get("actors");
  r.seq = get("seq");
  // The text fields (curves' reader keeps numbers only): "host": "NAME", as MetricsRow writes it.
  const auto text = [&](const std::string& key) {
    const std::string tag = "\"" + key + "\": \"";
    const size_t at = json.find(tag);
    if (at == std::string::npos) return std::string();
    const size_t from = at + tag.size();
    return json.substr(from, std::min(json.find('"', from) - from, kMaxRankHostBytes));
  };
  r.host = text("host");
  // An address is taken only whole and well formed: actors are sent there.
  r.address = text("address");
  if (!rpc::parse_address(r.address)) r.address.clear();
  return r;
}

GroupView group_view(const engine::LearnerStats& own, double own_fps, const std::string& own_host,
                     const std::vector<std::optional<std::string>>& reports, int world_size) {
  GroupView v;
  v.world_size = world_size;
  std::optional<RankReport> mine = parse_rank_report(rank_report(0, own_host, own, own_fps));
  v.ranks.push_back(*mine);
  for (size_t r = 1; r < reports.size(); ++r) {
    if (!reports[r]) continue;
    if (std::optional<RankReport> rep = parse_rank_report(*reports[r])) {
      rep->rank = static_cast<int>(r);
      v.ranks.push_back(*rep);
    }
  }
  v.stats = own;
  double episodes = 0, eval_episodes = 0, actors = 0, frames = 0;
  std::vector<std::pair<double, double>> returns, eval_returns;
  v.fps = 0;
  for (const RankReport& r : v.ranks) {
    frames += r.frames;
    v.fps += std::isfinite(r.fps) ? r.fps : 0;
    episodes += r.episodes;
    eval_episodes += r.eval_episodes;
    actors += r.actors;
    returns.emplace_back(r.return_mean, r.return_count);
    eval_returns.emplace_back(r.eval_return_mean, r.eval_return_count);
  }
  // The agreed frames are exact at each round; the reports' sum is newer but
  // late by a tick for the others: the larger is the better estimate.
  v.stats.frames = std::max<int64_t>(own.group_frames, static_cast<int64_t>(frames));
  v.stats.episodes = static_cast<int64_t>(episodes);
  v.stats.eval_episodes = static_cast<int64_t>(eval_episodes);
  v.stats.actors_connected = static_cast<int>(actors);
  v.stats.return_mean = weighted_mean(returns);
  v.stats.eval_return_mean = weighted_mean(eval_returns);
  return v;
}

void GroupView::add_columns(engine::MetricsRow& row) const {
  row.add("learners", world_size).add("learners_reporting", static_cast<double>(ranks.size()));
  for (const RankReport& r : ranks) {
    const std::string p = "rank" + std::to_string(r.rank) + "_";
    row.add(p + "frames", r.frames).add(p + "fps", r.fps).add(p + "episodes", r.episodes)
        .add(p + "return_mean", r.return_mean).add(p + "actors", r.actors);
  }
}

void GroupStatus::update(const GroupView& view, double now_s) {
  view_ = view;
  if (seen_.size() < static_cast<size_t>(std::max(0, view.world_size))) seen_.resize(static_cast<size_t>(view.world_size));
  for (const RankReport& r : view.ranks) {
    if (r.rank < 0 || static_cast<size_t>(r.rank) >= seen_.size()) continue;
    std::optional<Seen>& s = seen_[static_cast<size_t>(r.rank)];
    // Rank 0's own numbers are this process's, always fresh; another rank's are
    // new when its report count moved.
    const bool fresh = r.rank == 0 || !s || s->report.seq != r.seq;
    s = Seen{r, fresh ? now_s : s->seen_s};
  }
}

engine::LearnerStats GroupStatus::with_group_counters(engine::LearnerStats own) const {
  const engine::LearnerStats& g = view_.stats;
  own.frames = g.frames;
  own.episodes = g.episodes;
  own.eval_episodes = g.eval_episodes;
  own.actors_connected = g.actors_connected;
  own.return_mean = g.return_mean;
  own.eval_return_mean = g.eval_return_mean;
  return own;
}

std::string GroupStatus::ranks_json(double now_s, double stale_after_s) const {
  const double none = std::numeric_limits<double>::quiet_NaN();
  std::string out = "[";
  for (size_t rank = 0; rank < seen_.size(); ++rank) {
    const std::optional<Seen>& s = seen_[rank];
    const RankReport r = s ? s->report : RankReport{};
    const double age = s ? std::max(0.0, now_s - s->seen_s) : none;
    engine::MetricsRow row;
    row.add("rank", static_cast<double>(rank)).add("host", r.host);
    row.add("frames", s ? r.frames : none).add("fps", s ? r.fps : none).add("episodes", s ? r.episodes : none)
        .add("return_mean", s ? r.return_mean : none).add("optimizer_steps", s ? r.optimizer_steps : none)
        .add("actors", s ? r.actors : none).add("report_age_s", age)
        .add_json("stale", !s || age > stale_after_s ? "true" : "false");
    out += (rank ? ", " : "") + row.to_json();
  }
  return out + "]";
}

std::string rank_actor_address(const std::string& listen, const std::string& reachable_host) {
  std::optional<rpc::Address> a = rpc::parse_address(listen);
  if (!a) return "";
  if (a->kind == rpc::Address::Kind::kTcp && (a->host == "0.0.0.0" || a->host == "::" || a->host.empty())) {
    a->host = reachable_host;
  }
  return a->to_string();
}

void ActorPlacement::update(const std::vector<std::optional<RankReport>>& reports, const std::vector<int>& slots) {
  base::MutexLock lock(mu_);
  ranks_.assign(slots.size(), std::nullopt);
  for (size_t r = 0; r < slots.size() && r < reports.size(); ++r) {
    if (!reports[r] || reports[r]->address.empty() || !(reports[r]->actors >= 0)) continue;
    ranks_[r] = Rank{reports[r]->address, reports[r]->actors, slots[r]};
  }
}

std::optional<std::string> ActorPlacement::choose() {
  base::MutexLock lock(mu_);
  const size_t own = static_cast<size_t>(own_rank_);
  if (own >= ranks_.size() || !ranks_[own]) return std::nullopt;  // this rank not reported yet: it takes the actor
  // Actors per rank stand for envs: every rank's actors run topology.envs_per_actor envs.
  size_t best = own;
  for (size_t r = 0; r < ranks_.size(); ++r) {
    if (!ranks_[r] || ranks_[r]->actors >= ranks_[r]->slots) continue;
    const bool best_full = ranks_[best]->actors >= ranks_[best]->slots;
    if (best_full || ranks_[r]->actors < ranks_[best]->actors) best = r;
  }
  ranks_[best]->actors += 1;  // until the next reports say where it went
  if (best == own) return std::nullopt;
  return ranks_[best]->address;
}

}  // namespace moonseed::cli
