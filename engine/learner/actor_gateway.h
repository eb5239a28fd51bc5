// ActorGateway: the learner's face to its actors, and the engine's one edge to
// rpc/. It implements rpc::ActorService, which the rpc server's io threads
// call:
//   - admission: the auth token (compared in constant time; a wrong one is
//     counted and flagged so the rpc server can slow its sender down), the actor id
//     asked for or the first free slot, and the Welcome that tells the actor
//     everything it runs: env, its env slots, seed, unroll length, boundary
//     config;
//   - validation: a StepBatch must fit the actor's envs and the env's spec
//     (observation bytes, one reward and one flag byte per env), carry finite
//     observations (float spaces) and rewards (or have them replaced by 0:
//     inference.nonfinite), and come for envs whose last step was answered
//     (at most one request in flight per env slot and connection). A bad one
//     gets that actor a Bye with the reason and touches nothing else: nothing
//     of it reaches the batcher (docs/security.md);
//   - connections: each request carries its connection's generation; one
//     whose connection has since been replaced is stale (stale()): the
//     inference thread drops it unanswered, so a restarted actor's first
//     steps never meet its dead predecessor's in the agent;
//   - hand-over: a valid StepBatch becomes a StepRequest for the inference
//     batcher, tagged with the env slots it fills;
//   - replies: the inference thread's actions, encoded for the wire (int32
//     for discrete spaces, float32[A] for boxes), one ActionBatch per request;
//   - boundary config: ConfigUpdates to every connected actor, and to an actor
//     that connects while one is being published;
//   - events: each actor that joins or leaves (with its host, pid and the
//     reason), is found hung, or sends an ActorNotice is logged at once and
//     kept (the newest 1024) for the control loop's metrics.jsonl;
//   - per actor slot: env steps received (a relaxed atomic added to by
//     on_steps, no lock), connections, host, pid and when the current
//     connection started, for actor_list() (`ctl status`, the dashboard);
//   - hung actors (ActorWatch): release_hung() closes the connection of an
//     actor that owes a StepBatch and has been silent past its timeout, with a
//     Bye that tells it to reconnect, and frees its slot at once. Its envs'
//     partial unrolls go when the slot's next connection starts them afresh
//     (every env's first observation is a reset, kFirst).
//
// Env slots: actor i owns slots [i * envs_per_actor, (i + 1) * envs_per_actor).
// A restarted actor gets a new seed (from the run seed, its id and how often
// it connected), so it plays new episodes.
//
// Thread-safety: the ActorService methods from io threads; reply() from the
// inference thread; the rest from any thread. Per actor, the current link and
// its generation are atomics written under actors_mu_ and read without it
// (on_steps, stale()); per env slot, the generation of the connection whose
// request is in flight is an atomic: set by on_steps, cleared by reply()
// before the actions go out. Lock order: actors_mu_ before
// boundary_mu_ and events_mu_.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/mutex.h"
#include "base/thread_annotations.h"
#include "engine/config/experiment_config.h"
#include "engine/learner/actor_event.h"
#include "engine/learner/actor_status.h"
#include "engine/runtime/actor_watch.h"
#include "engine/runtime/clock.h"
#include "engine/runtime/inference_batcher.h"
#include "envs/spec.h"
#include "rpc/service.h"

namespace moonseed::engine {

// One StepBatch waiting for inference, with where to reply and which env slots it fills.
struct StepRequest {
  std::shared_ptr<rpc::ActorLink> link;
  uint64_t generation = 0;  // of the actor's connection (ActorWatch)
  int64_t slot_begin = 0;
  rpc::StepBatch batch;
};

class ActorGateway final : public rpc::ActorService {
 public:
  // `batcher` and `clock` are borrowed and must outlive the gateway's use by
  // the server. `unroll_length` is the actors' unroll boundary (Agent::unroll_length).
  ActorGateway(const ExperimentConfig& config, std::string run_id, const envs::EnvSpec& spec,
               int64_t unroll_length, InferenceBatcher<StepRequest>& batcher, const Clock& clock);

  // Actors must present this token in their Hello (empty: no check). Before
  // the server starts.
  void set_auth_token(std::string token);
  // A rank of a learner group: where an actor whose Hello has any_rank goes,
  // once its token is checked: another rank's address, or nullopt to stay
  // here. Called on an io thread; must be thread-safe and quick. Before the
  // server starts.
  using Placement = std::function<std::optional<std::string>()>;
  void set_placement(Placement placement);

  // Makes (version, payload) the boundary config: sent as a ConfigUpdate to
  // every connected actor now, and in the Welcome of every actor from now on.
  // `version` grows with each call (the caller's rule).
  void publish_boundary(uint64_t version, std::string payload) EXCLUDES(actors_mu_, boundary_mu_);

  // Sends each request its slice of `actions`: int64 [n] for a discrete
  // space (sent as int32), float [n, A] for a box, rows in request order.
  void reply(const std::vector<StepRequest>& requests, const void* actions);

  // True when the connection that sent `request` has been replaced by a newer
  // one of the same actor slot (its actor died or was released as hung and
  // came back): the request must not be acted on.
  bool stale(const StepRequest& request) const;

  // Closes the connection of `link` with a Bye that gives `reason` (logged),
  // because something it sent cannot be used; its batches still on the way are
  // dropped. Other connections never notice.
  void refuse(const std::shared_ptr<rpc::ActorLink>& link, const std::string& reason);

  // Non-finite observation elements and rewards replaced by 0 so far
  // (inference.nonfinite = "replace").
  int64_t nonfinite_replaced() const { return nonfinite_replaced_.load(std::memory_order_relaxed); }

  int actors_connected() const EXCLUDES(actors_mu_);
  // Hellos refused for a wrong auth token since start.
  int64_t auth_failures() const { return auth_failures_.load(std::memory_order_relaxed); }

  // Events since the last call, oldest first (at most the newest 1024).
  std::vector<ActorEvent> take_events() EXCLUDES(events_mu_);

  // Closes the connection of every actor that owes a StepBatch and has been
  // silent longer than max(timeout_s, ActorWatch::kStepMultiple x its usual
  // step time), with a Bye that asks it to reconnect, and frees its slot now
  // (a replacement may connect at once). Logs and records a kHung event for
  // each. Returns them, by slot. timeout_s <= 0: nothing is hung.
  std::vector<HungActor> release_hung(double timeout_s) EXCLUDES(actors_mu_, events_mu_);

  // The run is ending: leaves from now on are recorded but not logged.
  void expect_leaves() { expect_leaves_.store(true, std::memory_order_relaxed); }

  // The slots ever connected, by id, the first `limit` of them with their
  // host, pid, env steps and connections (strings are copied here, never on a step).
  ActorList actor_list(size_t limit) const EXCLUDES(actors_mu_);

  // StepBatches actor slot `id` has sent over all its connections: a local
  // actor's supervisor tells one that worked from one that died at start.
  uint64_t step_batches(int id) const { return watch_.batches(id); }
  // Env steps slot `id` has sent over all its connections, resets excluded:
  // progress beyond the reset batch every connection starts with.
  uint64_t env_steps(int id) const;

  // rpc::ActorService
  rpc::Admission on_hello(const rpc::Hello& hello) EXCLUDES(actors_mu_, boundary_mu_) override;
  void on_connect(std::shared_ptr<rpc::ActorLink> link) EXCLUDES(actors_mu_, boundary_mu_) override;
  void on_steps(const std::shared_ptr<rpc::ActorLink>& link, rpc::StepBatch&& batch) override;
  void on_disconnect(const std::shared_ptr<rpc::ActorLink>& link, const std::string& reason)
      EXCLUDES(actors_mu_, events_mu_) override;
  void on_notice(const std::shared_ptr<rpc::ActorLink>& link, const rpc::ActorNotice& notice)
      EXCLUDES(actors_mu_, events_mu_) override;

 private:
  // "" when `batch` fits the actor's envs and the spec, else what is wrong.
  std::string step_batch_problem(const rpc::StepBatch& batch) const;
  // "" when every observation element (float spaces) and reward of `batch` is
  // finite, or non-finite ones were replaced by 0 (inference.nonfinite =
  // "replace"); else which env and field holds one.
  std::string nonfinite_problem(rpc::StepBatch& batch);
  // Makes `link` the current connection of slot `id` (under actors_mu_).
  void set_current(int id, const rpc::ActorLink* link, uint64_t generation) REQUIRES(actors_mu_);
  // Clears `link` as the current connection of slot `id`, if it still is. True when it was.
  bool clear_current(int id, const rpc::ActorLink* link);
  // Logs `event` and keeps it for take_events().
  void record(ActorEvent event) EXCLUDES(events_mu_);
  // An event about slot `id` with its host and pid.
  ActorEvent event_of(ActorEvent::Kind kind, int id, std::string text) const REQUIRES(actors_mu_);

  const ExperimentConfig config_;
  const std::string run_id_;
  const envs::EnvSpec spec_;
  const int64_t unroll_length_;
  InferenceBatcher<StepRequest>& batcher_;
  const Clock& clock_;
  ActorWatch watch_;
  std::atomic<bool> expect_leaves_{false};
  std::atomic<int64_t> auth_failures_{0};
  std::atomic<int64_t> nonfinite_replaced_{0};
  // Per actor slot: its current connection (nullptr: none, or it was let go)
  // and that connection's generation. Written under actors_mu_ (link cleared
  // first, generation, then the new link), read without a lock.
  std::unique_ptr<std::atomic<const rpc::ActorLink*>[]> current_link_;
  std::unique_ptr<std::atomic<uint64_t>[]> current_generation_;
  // Per env slot (actor * envs_per_actor + env): the generation of the
  // connection whose request for it waits for actions, 0 when none.
  std::unique_ptr<std::atomic<uint64_t>[]> in_flight_;
  // Per actor slot: env steps received over all its connections (resets
  // excluded). Added to by on_steps, read by actor_list(); relaxed: a count.
  std::unique_ptr<std::atomic<uint64_t>[]> frames_;
  std::string auth_token_;  // set before the server starts, then read-only
  Placement placement_;     // likewise

  mutable base::Mutex actors_mu_ ACQUIRED_BEFORE(boundary_mu_);
  std::vector<bool> connected_ GUARDED_BY(actors_mu_);
  std::vector<uint64_t> connections_ GUARDED_BY(actors_mu_);
  std::vector<std::weak_ptr<rpc::ActorLink>> links_ GUARDED_BY(actors_mu_);
  std::vector<uint64_t> welcomed_version_ GUARDED_BY(actors_mu_);  // config version of the last Welcome
  std::vector<std::string> hosts_ GUARDED_BY(actors_mu_);           // from each slot's last Hello
  std::vector<int32_t> pids_ GUARDED_BY(actors_mu_);
  std::vector<Clock::time_point> admitted_at_ GUARDED_BY(actors_mu_);  // of each slot's last admission

  base::Mutex boundary_mu_;
  uint64_t boundary_version_ GUARDED_BY(boundary_mu_) = 0;
  std::string boundary_payload_ GUARDED_BY(boundary_mu_);

  base::Mutex events_mu_ ACQUIRED_AFTER(actors_mu_);
  std::deque<ActorEvent> events_ GUARDED_BY(events_mu_);
};

}  // namespace moonseed::engine
