#include "engine/learner/actor_gateway.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <utility>

#include "base/log.h"
#include "base/text.h"
#include "base/secret.h"
#include "envs/env.h"
#include "envs/wrappers/wrapper_spec.h"

namespace moonseed::engine {
namespace {

constexpr size_t kMaxEvents = 1024;       // kept between two take_events()
constexpr size_t kMaxNoticeBytes = 2000;  // an actor's text beyond this is cut

// Deterministic per (run seed, actor, connection): a restarted actor plays new episodes.
uint64_t actor_seed(uint64_t run_seed, int actor_id, uint64_t connection) {
  uint64_t x = run_seed * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(actor_id) * 0xBF58476D1CE4E5B9ull +
               connection * 0x94D049BB133111EBull;
  x ^= x >> 31;
  return x & 0xFFFFFFFFull;  // numpy-style seeds are small non-negative integers
}

// A float32's bits: all exponent bits set is NaN or an infinity.
bool nonfinite_bits(uint32_t bits) { return (bits & 0x7f800000u) == 0x7f800000u; }

// "31.2": seconds to a tenth, as a person reads them.
std::string seconds_text(double s) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f", s);
  return text;
}

}  // namespace

ActorGateway::ActorGateway(const ExperimentConfig& config, std::string run_id, const envs::EnvSpec& spec,
                           int64_t unroll_length, InferenceBatcher<StepRequest>& batcher, const Clock& clock)
    : config_(config),
      run_id_(std::move(run_id)),
      spec_(spec),
      unroll_length_(unroll_length),
      batcher_(batcher),
      clock_(clock),
      watch_(config.topology.actors, std::min(config.topology.groups_per_actor, config.topology.envs_per_actor)),
      connected_(static_cast<size_t>(config.topology.actors), false),
      connections_(static_cast<size_t>(config.topology.actors), 0),
      links_(static_cast<size_t>(config.topology.actors)),
      welcomed_version_(static_cast<size_t>(config.topology.actors), 0),
      hosts_(static_cast<size_t>(config.topology.actors)),
      pids_(static_cast<size_t>(config.topology.actors), 0),
      admitted_at_(static_cast<size_t>(config.topology.actors)) {
  const size_t actors = static_cast<size_t>(std::max(0, config.topology.actors));
  current_link_.reset(new std::atomic<const rpc::ActorLink*>[actors]);
  current_generation_.reset(new std::atomic<uint64_t>[actors]);
  frames_.reset(new std::atomic<uint64_t>[actors]);
  for (size_t i = 0; i < actors; ++i) {
    current_link_[i].store(nullptr);
    current_generation_[i].store(0);
    frames_[i].store(0);
  }
  const size_t slots = actors * static_cast<size_t>(std::max(0, config.topology.envs_per_actor));
  in_flight_.reset(new std::atomic<uint64_t>[slots]);
  for (size_t i = 0; i < slots; ++i) in_flight_[i].store(0);
}

void ActorGateway::set_auth_token(std::string token) { auth_token_ = std::move(token); }

void ActorGateway::set_placement(Placement placement) { placement_ = std::move(placement); }

void ActorGateway::publish_boundary(uint64_t version, std::string payload) {
  {
    base::MutexLock lock(boundary_mu_);
    boundary_version_ = version;
    boundary_payload_ = payload;
  }
  std::vector<std::shared_ptr<rpc::ActorLink>> links;
  {
    base::MutexLock lock(actors_mu_);
    for (const auto& weak : links_) {
      if (auto link = weak.lock()) links.push_back(std::move(link));
    }
  }
  for (const auto& link : links) link->send_config(rpc::ConfigUpdate{version, payload});
}

void ActorGateway::reply(const std::vector<StepRequest>& requests, const void* actions) {
  const bool discrete = spec_.action.kind == envs::SpaceKind::kDiscrete;
  const int64_t wire_bytes = spec_.action.byte_size();
  int64_t row = 0;
  for (const auto& r : requests) {
    rpc::ActionBatch out;
    out.seq = r.batch.seq;
    out.actions.resize(static_cast<size_t>(r.batch.count * wire_bytes));
    if (discrete) {
      const int64_t* a = static_cast<const int64_t*>(actions) + row;
      for (uint32_t i = 0; i < r.batch.count; ++i) {
        const int32_t v = static_cast<int32_t>(a[i]);
        std::memcpy(&out.actions[i * sizeof v], &v, sizeof v);
      }
    } else {
      std::memcpy(out.actions.data(), static_cast<const float*>(actions) + row * spec_.action.numel(),
                  out.actions.size());
    }
    row += r.batch.count;
    // Before the actions go out: the actor's next batch for these envs may
    // arrive as soon as they are sent.
    for (uint32_t i = 0; i < r.batch.count; ++i) {
      uint64_t expected = r.generation;
      in_flight_[static_cast<size_t>(r.slot_begin) + i].compare_exchange_strong(expected, 0);
    }
    r.link->send_actions(std::move(out));
    watch_.replied(r.link->actor_id(), r.generation, clock_.now());
  }
}

bool ActorGateway::stale(const StepRequest& request) const {
  return current_generation_[static_cast<size_t>(request.link->actor_id())].load() != request.generation;
}

void ActorGateway::set_current(int id, const rpc::ActorLink* link, uint64_t generation) {
  // The link goes first and last: on_steps reads it before and after the
  // generation, so it never tags a batch with another connection's generation.
  current_link_[static_cast<size_t>(id)].store(nullptr);
  current_generation_[static_cast<size_t>(id)].store(generation);
  current_link_[static_cast<size_t>(id)].store(link);
}

bool ActorGateway::clear_current(int id, const rpc::ActorLink* link) {
  if (id < 0 || id >= config_.topology.actors) return false;
  const rpc::ActorLink* expected = link;
  return current_link_[static_cast<size_t>(id)].compare_exchange_strong(expected, nullptr);
}

void ActorGateway::refuse(const std::shared_ptr<rpc::ActorLink>& link, const std::string& reason) {
  // Only the first refusal of a connection is said: its later batches are dropped.
  if (!clear_current(link->actor_id(), link.get())) return;
  base::log_warning("actor " + std::to_string(link->actor_id()) + ": " + reason + "; closing its connection");
  link->send_bye(reason);
}

int ActorGateway::actors_connected() const {
  base::MutexLock lock(actors_mu_);
  int n = 0;
  for (bool c : connected_) n += c ? 1 : 0;
  return n;
}

ActorList ActorGateway::actor_list(size_t limit) const {
  ActorList list;
  const Clock::time_point now = clock_.now();
  base::MutexLock lock(actors_mu_);
  for (size_t slot = 0; slot < connections_.size(); ++slot) {
    if (connections_[slot] == 0) continue;
    if (list.actors.size() >= limit) {
      ++list.not_listed;
      continue;
    }
    ActorStatus& a = list.actors.emplace_back();
    a.id = static_cast<int32_t>(slot);
    a.connected = connected_[slot];
    a.host = hosts_[slot];
    a.pid = pids_[slot];
    a.frames = frames_[slot].load(std::memory_order_relaxed);
    a.connections = connections_[slot];
    if (a.connected) a.connected_s = std::chrono::duration<double>(now - admitted_at_[slot]).count();
  }
  return list;
}

std::vector<ActorEvent> ActorGateway::take_events() {
  base::MutexLock lock(events_mu_);
  std::vector<ActorEvent> out(std::make_move_iterator(events_.begin()), std::make_move_iterator(events_.end()));
  events_.clear();
  return out;
}

void ActorGateway::record(ActorEvent event) {
  const std::string line = describe(event);
  if (event.kind == ActorEvent::Kind::kJoined) {
    base::log_info(line);
  } else if (event.kind != ActorEvent::Kind::kLeft || !expect_leaves_.load(std::memory_order_relaxed)) {
    base::log_warning(line);
  }
  base::MutexLock lock(events_mu_);
  events_.push_back(std::move(event));
  if (events_.size() > kMaxEvents) events_.pop_front();
}

ActorEvent ActorGateway::event_of(ActorEvent::Kind kind, int id, std::string text) const {
  ActorEvent event;
  event.kind = kind;
  event.actor_id = id;
  event.host = hosts_[static_cast<size_t>(id)];
  event.pid = pids_[static_cast<size_t>(id)];
  event.text = std::move(text);
  event.at_s = std::chrono::duration<double>(clock_.now().time_since_epoch()).count();
  return event;
}

std::vector<HungActor> ActorGateway::release_hung(double timeout_s) {
  std::vector<HungActor> released;
  std::vector<std::pair<std::shared_ptr<rpc::ActorLink>, std::string>> byes;
  std::vector<ActorEvent> events;
  {
    base::MutexLock lock(actors_mu_);
    for (const ActorWatch::Silence& silence : watch_.silent(clock_.now(), timeout_s)) {
      const size_t slot = static_cast<size_t>(silence.actor_id);
      std::shared_ptr<rpc::ActorLink> link = links_[slot].lock();
      if (!connected_[slot] || !link) continue;  // between its Hello and its connect: not yet watched
      const std::string reason = "no step batch for " + seconds_text(silence.silent_s) + " s (timeout " +
                                 seconds_text(silence.timeout_s) + " s)";
      // The slot is free from now on; this connection's own disconnect, when
      // its Bye is out, no longer touches it.
      connected_[slot] = false;
      links_[slot].reset();
      clear_current(silence.actor_id, link.get());
      watch_.disconnected(silence.actor_id);
      events.push_back(event_of(ActorEvent::Kind::kHung, silence.actor_id, reason + "; its slot is free"));
      byes.emplace_back(std::move(link), reason);
      released.push_back(HungActor{silence.actor_id, silence.silent_s, silence.timeout_s});
    }
  }
  for (auto& [link, reason] : byes) link->send_reconnect(reason);
  for (ActorEvent& event : events) record(std::move(event));
  return released;
}

uint64_t ActorGateway::env_steps(int id) const {
  if (id < 0 || id >= config_.topology.actors) return 0;
  return frames_[static_cast<size_t>(id)].load(std::memory_order_relaxed);
}

rpc::Admission ActorGateway::on_hello(const rpc::Hello& hello) {
  rpc::Admission admission;
  if (!base::secret_matches(auth_token_, hello.auth_token)) {
    admission.reason = "wrong auth token (give the learner's with --auth-token-file or MOONSEED_AUTH_TOKEN)";
    admission.bad_credentials = true;  // the server slows down the address that sent it
    auth_failures_.fetch_add(1, std::memory_order_relaxed);
    return admission;
  }
  // A stated actor id is the actor's own choice of slot, here: no placement.
  if (hello.any_rank && hello.actor_id < 0 && placement_) {
    if (std::optional<std::string> elsewhere = placement_()) {
      admission.redirect = *elsewhere;
      admission.reason = "the learner group places this actor on the rank at " + *elsewhere +
                         " (it serves the fewest envs)";
      return admission;
    }
  }
  base::MutexLock lock(actors_mu_);
  const int actors = config_.topology.actors;
  int id = -1;
  if (hello.actor_id >= 0) {
    if (hello.actor_id >= actors) {
      admission.reason = "actor id " + std::to_string(hello.actor_id) + " is out of range: this run has " +
                         std::to_string(actors) + " actor slots (0.." + std::to_string(actors - 1) + ")";
      return admission;
    }
    if (connected_[static_cast<size_t>(hello.actor_id)]) {
      admission.reason = "actor id " + std::to_string(hello.actor_id) + " is already connected";
      return admission;
    }
    id = hello.actor_id;
  } else {
    for (int i = 0; i < actors && id < 0; ++i) {
      if (!connected_[static_cast<size_t>(i)]) id = i;
    }
    if (id < 0) {
      admission.reason = "all " + std::to_string(actors) + " actor slots are taken";
      return admission;
    }
  }
  const size_t slot = static_cast<size_t>(id);
  connected_[slot] = true;
  hosts_[slot] = base::printable(hello.host.substr(0, 255));  // it reaches logs and terminals
  pids_[slot] = hello.pid;
  admitted_at_[slot] = clock_.now();
  const uint64_t connection = connections_[slot]++;
  admission.accepted = true;
  rpc::Welcome& w = admission.welcome;
  w.run_id = run_id_;
  w.actor_id = id;
  w.env_id = config_.env.id;
  w.env_options = config_.env.options;
  w.env_files.model = config_.env.model;
  w.env_files.plugin = config_.env.plugin;
  w.env_files.python = config_.env.python;  // python_path is the learner host's: not sent
  w.env_wrappers = envs::wrapper_list_text(config_.env.wrappers);
  w.env_spec = spec_;
  w.num_envs = static_cast<uint32_t>(config_.topology.envs_per_actor);
  w.num_groups = static_cast<uint32_t>(config_.topology.groups_per_actor);
  w.seed = actor_seed(config_.seed, id, connection);
  w.unroll_length = static_cast<uint32_t>(unroll_length_);
  {
    base::MutexLock boundary(boundary_mu_);
    w.config_version = boundary_version_;
    w.payload = boundary_payload_;
  }
  welcomed_version_[slot] = w.config_version;
  return admission;
}

void ActorGateway::on_connect(std::shared_ptr<rpc::ActorLink> link) {
  const int32_t id = link->actor_id();
  if (id < 0 || id >= config_.topology.actors) return;
  // A publish_boundary between this actor's Welcome and now did not see its
  // link: send what it missed (a duplicate is ignored by the actor).
  rpc::ConfigUpdate missed;
  bool missed_one = false;
  ActorEvent joined;
  {
    base::MutexLock lock(actors_mu_);
    links_[static_cast<size_t>(id)] = link;
    set_current(id, link.get(), watch_.connected(id, clock_.now()));
    joined = event_of(ActorEvent::Kind::kJoined, id, "");
    base::MutexLock boundary(boundary_mu_);
    missed.config_version = boundary_version_;
    missed_one = missed.config_version != welcomed_version_[static_cast<size_t>(id)];
    if (missed_one) missed.payload = boundary_payload_;
  }
  record(std::move(joined));
  if (missed_one) link->send_config(std::move(missed));
}

void ActorGateway::on_notice(const std::shared_ptr<rpc::ActorLink>& link, const rpc::ActorNotice& notice) {
  const int id = link->actor_id();
  if (id < 0 || id >= config_.topology.actors) return;
  std::string text =
      base::printable(notice.text.substr(0, kMaxNoticeBytes)) + (notice.text.size() > kMaxNoticeBytes ? "..." : "");
  ActorEvent event;
  {
    base::MutexLock lock(actors_mu_);
    event = event_of(ActorEvent::Kind::kNotice, id, std::move(text));
  }
  record(std::move(event));
}

std::string ActorGateway::step_batch_problem(const rpc::StepBatch& batch) const {
  const uint64_t envs = static_cast<uint64_t>(config_.topology.envs_per_actor);
  const uint64_t obs_bytes = static_cast<uint64_t>(spec_.observation.byte_size());
  if (batch.count == 0 || static_cast<uint64_t>(batch.env_begin) + batch.count > envs) {
    return "envs [" + std::to_string(batch.env_begin) + ", " + std::to_string(batch.env_begin + batch.count) +
           ") outside this actor's " + std::to_string(envs) + " envs";
  }
  if (batch.observations.size() != batch.count * obs_bytes) {
    return std::to_string(batch.observations.size()) + " observation bytes for " + std::to_string(batch.count) +
           " envs, expected " + std::to_string(batch.count * obs_bytes);
  }
  if (batch.rewards.size() != batch.count || batch.flags.size() != batch.count) {
    return "rewards/flags do not have one entry per env";
  }
  if (!batch.env_rewards.empty() && batch.env_rewards.size() != batch.count) {
    return "env rewards are neither absent nor one per env";
  }
  return "";
}

std::string ActorGateway::nonfinite_problem(rpc::StepBatch& batch) {
  const bool replace = config_.inference.nonfinite == "replace";
  int64_t replaced = 0;
  std::string problem;
  if (spec_.observation.dtype == envs::DType::kFloat32) {
    const size_t per_env = static_cast<size_t>(spec_.observation.numel());
    uint8_t* bytes = batch.observations.data();
    for (uint32_t env = 0; env < batch.count && problem.empty(); ++env) {
      for (size_t k = 0; k < per_env; ++k) {
        uint32_t bits;
        uint8_t* at = bytes + (env * per_env + k) * sizeof bits;
        std::memcpy(&bits, at, sizeof bits);
        if (!nonfinite_bits(bits)) continue;
        if (!replace) {
          float value;
          std::memcpy(&value, &bits, sizeof value);
          problem = "env " + std::to_string(batch.env_begin + env) + " sent a non-finite observation (" +
                    (std::isnan(value) ? std::string("nan") : value > 0 ? "inf" : "-inf") + " at element " +
                    std::to_string(k) + ")";
          break;
        }
        std::memset(at, 0, sizeof bits);
        ++replaced;
      }
    }
  }
  // The shaped rewards, then the env's own when the actor sent them.
  auto check_rewards = [&](std::vector<float>& rewards, const char* what) {
    for (uint32_t env = 0; env < rewards.size() && problem.empty(); ++env) {
      const float reward = rewards[env];
      if (std::isfinite(reward)) continue;
      if (!replace) {
        problem = "env " + std::to_string(batch.env_begin + env) + " sent a non-finite " + what + " (" +
                  (std::isnan(reward) ? std::string("nan") : reward > 0 ? "inf" : "-inf") + ")";
        break;
      }
      rewards[env] = 0.f;
      ++replaced;
    }
  };
  check_rewards(batch.rewards, "reward");
  check_rewards(batch.env_rewards, "env reward");
  if (replaced > 0) nonfinite_replaced_.fetch_add(replaced, std::memory_order_relaxed);
  return problem;
}

void ActorGateway::on_steps(const std::shared_ptr<rpc::ActorLink>& link, rpc::StepBatch&& batch) {
  const int id = link->actor_id();
  if (id < 0 || id >= config_.topology.actors) return;
  // The connection's generation, read between two reads of the slot's
  // current link (set_current writes them the other way round): a batch of a
  // connection the gateway let go (hung, refused) is dropped, its Bye is on the way.
  const std::atomic<const rpc::ActorLink*>& current = current_link_[static_cast<size_t>(id)];
  if (current.load() != link.get()) return;
  const uint64_t generation = current_generation_[static_cast<size_t>(id)].load();
  if (current.load() != link.get()) return;

  std::string problem = step_batch_problem(batch);
  if (problem.empty()) problem = nonfinite_problem(batch);
  const int64_t slot_begin = static_cast<int64_t>(id) * config_.topology.envs_per_actor + batch.env_begin;
  // One request per env and connection at a time: a step for an env whose
  // actions have not been sent yet is a repeat (or a step that cannot have
  // been taken). A dead predecessor's request (an older generation) does not count.
  for (uint32_t i = 0; i < batch.count && problem.empty(); ++i) {
    if (in_flight_[static_cast<size_t>(slot_begin) + i].load() == generation) {
      problem = "env " + std::to_string(batch.env_begin + i) + " sent a step before its last one was answered";
    }
  }
  if (!problem.empty()) {
    refuse(link, "bad StepBatch: " + problem);
    return;
  }
  uint64_t frames = 0;
  for (uint32_t i = 0; i < batch.count; ++i) {
    in_flight_[static_cast<size_t>(slot_begin) + i].store(generation);
    frames += (batch.flags[i] & envs::kFirst) ? 0 : 1;
  }
  frames_[static_cast<size_t>(id)].fetch_add(frames, std::memory_order_relaxed);
  watch_.batch_received(id, clock_.now());
  StepRequest request;
  request.generation = generation;
  request.slot_begin = slot_begin;
  request.link = link;
  const int count = static_cast<int>(batch.count);
  request.batch = std::move(batch);
  batcher_.submit(std::move(request), count);
}

void ActorGateway::on_disconnect(const std::shared_ptr<rpc::ActorLink>& link, const std::string& reason) {
  const int id = link->actor_id();
  if (id < 0 || id >= config_.topology.actors) return;
  ActorEvent left;
  {
    base::MutexLock lock(actors_mu_);
    const size_t slot = static_cast<size_t>(id);
    // A connection released as hung left already; its slot may have a new one.
    if (links_[slot].lock() != link) return;
    connected_[slot] = false;
    links_[slot].reset();
    clear_current(id, link.get());
    watch_.disconnected(id);
    left = event_of(ActorEvent::Kind::kLeft, id, reason);
  }
  record(std::move(left));
}

}  // namespace moonseed::engine
