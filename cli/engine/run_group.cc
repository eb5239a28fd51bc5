// `moonseed run` as one rank of a learner group (docs/distributed-design.md):
// joining the group, the learner's hooks into it (hot configs, rank parts of
// checkpoints), resuming the whole group, and placing the actors that let the
// group choose their rank. cli/engine/run_start.cc calls these while it starts a run.
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <stdexcept>

#include "base/log.h"
#include "cli/engine/checkpoint_choice.h"
#include "cli/common/commands.h"
#include "cli/engine/learner_group.h"
#include "cli/engine/progress.h"
#include "cli/engine/run.h"
#include "engine/group/c10d_group.h"
#include "engine/learner/learner.h"
#include "models/device.h"
#include "scripts/loader/experiment_loader.h"

namespace moonseed::cli {

void Run::join_group() {
  const engine::TopologyConfig& t = cfg_.topology;
  if (!cfg_.warm_start.log.empty()) {
    throw std::invalid_argument("warm_start.log: a warm start is not supported with a learner group "
                                "(topology.learners = " + std::to_string(t.learners) + ") yet");
  }
  engine::GroupOptions o;
  o.rank = t.rank;
  o.world_size = t.learners;
  o.timeout_s = t.group_timeout_s;
  o.check_every = t.weights_check_every;
  o.device = models::choose_device(cfg_.inference.device).is_cuda() ? "cuda" : "cpu";
  o.rendezvous = t.rendezvous;
  char name[256] = {};
  host_ = ::gethostname(name, sizeof name - 1) == 0 ? name : "localhost";
  if (o.rendezvous.empty()) {
    if (t.rank != 0) {
      throw std::invalid_argument("topology.rank = " + std::to_string(t.rank) +
                                  " needs the group's rendezvous: give --rendezvous tcp:HOST:PORT (rank 0's host)");
    }
    // A group on this host: a store file in the run directory, and ranks 1..N-1 started here.
    o.rendezvous = local_rendezvous(dir_->path());
    std::filesystem::remove(o.rendezvous.substr(5));
    std::vector<std::string> extra;
    if (options_.insecure) extra.push_back("--insecure");
    local_ranks_ = std::make_unique<LocalRanks>(engine_binary(), dir_->path(), dir_->config_path(), t.learners,
                                                o.rendezvous, extra);
  } else {
    const engine::Rendezvous r = engine::parse_rendezvous(o.rendezvous);
    // LibTorch's TCPStore listens on every interface of rank 0's host, whatever
    // HOST says: even a loopback rendezvous is reachable from other hosts.
    if (r.tcp && auth_token_.empty() && !options_.insecure) {
      throw std::invalid_argument(
          "topology.rendezvous = \"" + o.rendezvous + "\": rank 0 serves c10d's TCPStore on port " +
          std::to_string(r.port) + " of every interface of its host (LibTorch's store takes no bind address), and "
          "c10d's store has no authentication of its own: without a token anyone who reaches the port can feed the "
          "ranks a config or stop the group (docs/security.md). Give every rank the run's token "
          "(--auth-token-file FILE or MOONSEED_AUTH_TOKEN) and keep the port on a private network, or pass "
          "--insecure");
    }
    if (r.tcp && auth_token_.empty()) {
      base::log_warning("rendezvous " + o.rendezvous + " without an auth token (--insecure): the store's values "
                        "are not signed");
    }
  }
  std::cerr << "moonseed: learner rank " << t.rank << " of " << t.learners << " joining the group at "
            << o.rendezvous << " (waiting at most " << format_number(t.group_timeout_s) << " s for the others)\n";
  {
    // c10d's threads (Gloo's, the store's) and the watchdog start now, before the run's
    // SignalWaiter: they must not take SIGINT or SIGTERM, which would kill the process
    // instead of stopping the run. Threads inherit the mask they are created with.
    sigset_t run_signals, before;
    sigemptyset(&run_signals);
    sigaddset(&run_signals, SIGINT);
    sigaddset(&run_signals, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &run_signals, &before);
    try {
      group_ = std::make_unique<engine::C10dGroup>(o);
    } catch (...) {
      pthread_sigmask(SIG_SETMASK, &before, nullptr);
      throw;
    }
    pthread_sigmask(SIG_SETMASK, &before, nullptr);
  }
  values_ = std::make_unique<SealedValues>(*group_, auth_token_);
  if (t.rank == 0) {
    values_->put("run_dir", dir_->path());
  } else {
    dir_ = engine::RunDirectory::create_at(rank_directory(values_->get("run_dir"), cfg_.runs_dir, t.rank));
    dir_->write_file_atomic("config.lua", scripts::to_lua(cfg_));
    if (options_.log_in_run_dir) send_output_to(dir_->path() + "/run.log");
  }
  std::string members;
  for (const engine::GroupMember& m : group_->members()) members += (members.empty() ? "" : ", ") + m.text();
  std::cerr << "moonseed: learner group of " << t.learners << ": " << members << "\n";
}

// The learner's hooks into the group: every rank applies the config of a
// version from the same text (rank 0's to_lua), so that rank 0 and the others
// cannot differ by a rounding; each rank keeps its part of every checkpoint.
void Run::join_learner_to_group() {
  SealedValues* group = values_.get();
  const std::string scratch = dir_->path() + "/group-config.lua";
  auto config_of_version = [group, scratch](uint64_t version) {
    const std::string text = group->get("config/" + std::to_string(version));
    {
      std::FILE* f = std::fopen(scratch.c_str(), "w");
      if (f == nullptr) throw std::runtime_error("cannot write " + scratch + ": " + std::strerror(errno));
      std::fwrite(text.data(), 1, text.size(), f);
      std::fclose(f);
    }
    return scripts::load_experiment(scratch, {});
  };
  std::function<void(uint64_t, const engine::ExperimentConfig&)> publish;
  if (rank() == 0) {
    publish = [group](uint64_t version, const engine::ExperimentConfig& c) {
      group->put("config/" + std::to_string(version), scripts::to_lua(c));
    };
  }
  learner_->join_group(*group_, config_of_version, publish);
  const engine::RunDirectory dir = *dir_;  // a copy (a path): the training thread uses it
  // One part more than checkpoints: a rank that outlives rank 0 writes a part past rank 0's last checkpoint.
  const int keep = cfg_.checkpoint.keep + 1;
  learner_->keep_rank_parts([dir](int64_t step) { return dir.rank_part_path(step); },
                            [dir, keep] { dir.prune_rank_parts(keep); });
}

// A learner group: rank 0 resumes as a single learner would (resume()) and
// sends its checkpoint to the others over the group (no rank needs rank 0's
// files); each rank then takes its own counters and companions (R2D2's
// replay) from its newest part at or before the checkpoint's step, or starts
// them afresh without one (docs/distributed-design.md "Checkpoints").
engine::Counters Run::resume_group() {
  engine::Counters start;
  std::string ckpt;
  if (rank() == 0 && !options_.resume_dir.empty()) {
    start = resume(&ckpt);
  }
  if (rank() == 0) {
    if (!ckpt.empty()) values_->put("resume_step", std::to_string(start.optimizer_steps));
    values_->put("resume_checkpoint", ckpt);  // the others wait for this key: the step is there before it
  }
  ckpt = values_->get("resume_checkpoint");  // rank 0's, "" for a new run
  if (ckpt.empty()) return start;
  std::string model;
  if (rank() == 0) {
    std::ifstream in(ckpt, std::ios::binary);
    model.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    if (!in.good() && !in.eof()) throw std::runtime_error("cannot read " + ckpt + " to send it to the group");
  }
  group_->broadcast_from_rank0(model);
  if (rank() == 0) {
    const std::string part = choose_rank_part(start.optimizer_steps);
    if (part.empty()) {
      base::log_warning("rank 0 has no part of " + ckpt + " (a checkpoint of an older build, or of a single "
                        "learner): it resumes with the group's counters, the other ranks from 0");
    } else {
      learner_->restore_rank_counters(part, 0);
      report_rank_part(part, start.optimizer_steps);
    }
    return start;
  }
  const std::string copy = dir_->path() + "/group-checkpoint.pt";  // rank 0's, for as long as the restore takes
  dir_->write_file_atomic("group-checkpoint.pt", model);
  model.clear();
  // A part of a later step than the checkpoint's would be of a future the group never resumed.
  const int64_t group_step = std::stoll(values_->get("resume_step"));
  const std::string part = choose_rank_part(group_step);
  try {
    start = learner_->restore_group_rank(copy, part, rank());
  } catch (...) {
    std::filesystem::remove(copy);
    throw;
  }
  std::filesystem::remove(copy);
  std::cerr << "moonseed: rank " << rank() << " resumed the group's checkpoint " << ckpt << " ("
            << start.optimizer_steps << " steps) from rank 0";
  if (part.empty()) {
    std::cerr << ", with no part of its own (its counters start at 0)\n";
  } else {
    std::cerr << " and its own part " << part << " (" << start.frames << " frames)\n";
    report_rank_part(part, group_step);
  }
  append_resume_row(ckpt, start);  // rank 0's checkpoint, by its path on rank 0's host
  return start;
}

// This rank's newest good part at or before `at_most_step` ("" for none):
// newest first, a part that is incomplete (a save interrupted before its
// manifest) or damaged since it was written is skipped, with a line saying
// which and why, as resume() skips checkpoints.
std::string Run::choose_rank_part(int64_t at_most_step) {
  for (const std::string& part : dir_->rank_parts_until(at_most_step)) {
    const std::string missing = dir_->missing_files(part, {});
    const std::string why = missing.empty() ? checkpoint_damage(part, /*companions=*/true)
                                            : "incomplete (no " + missing + ": its save was interrupted)";
    if (why.empty()) return part;
    std::cerr << "moonseed: skipping rank part " << part << ": " << why << "\n";
  }
  return "";
}

void Run::report_rank_part(const std::string& part, int64_t group_step) {
  const std::string name = std::filesystem::path(part).filename().string();
  if (name != std::filesystem::path(dir_->rank_part_path(group_step)).filename().string()) {
    base::log_warning("rank " + std::to_string(rank()) + " has no part of step " + std::to_string(group_step) +
                      " (its save failed, or it had ended first): it resumes its counters and replay from " + name);
  }
}

// Each rank says where it takes actors (in its reports); any rank may send an
// actor that lets it (--any-rank) to the one with the fewest envs.
void Run::place_actors(const std::string& listening_at) {
  const engine::Rendezvous r = engine::parse_rendezvous(group_->options().rendezvous);
  actor_address_ = rank_actor_address(listening_at, r.tcp ? engine::local_address_towards(r.host, r.port) : "127.0.0.1");
  placement_ = std::make_shared<ActorPlacement>(rank());
  learner_->set_actor_placement([placement = placement_] { return placement->choose(); });
}

// The ranks' newest reports (this rank's own as just published) for the
// actors that let the group place them.
void Run::update_placement(const std::string& own_report, const std::vector<std::optional<std::string>>& raw) {
  if (!placement_) return;
  const int world = cfg_.topology.learners;
  std::vector<std::optional<RankReport>> reports(static_cast<size_t>(world));
  std::vector<int> slots(static_cast<size_t>(world));
  for (int r = 0; r < world; ++r) {
    const size_t i = static_cast<size_t>(r);
    slots[i] = rank_config(cfg_, r).topology.actors;
    if (r == rank()) {
      reports[i] = parse_rank_report(own_report);
    } else if (i < raw.size() && raw[i]) {
      reports[i] = parse_rank_report(*raw[i]);
    }
  }
  placement_->update(reports, slots);
}

}  // namespace moonseed::cli
