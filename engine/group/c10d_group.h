// C10dGroup: one rank of a learner group over LibTorch's c10d
// (docs/distributed-design.md): a Store for the rendezvous (TCPStore served by
// rank 0, or a FileStore for ranks on one host), ProcessGroupGloo for the
// collectives (ProcessGroupNCCL for CUDA weights where LibTorch has it), and a
// watchdog thread that beats this rank's heartbeat and watches the others'.
//
// Ownership: the group owns its store clients (one per thread that uses the
// store: the training thread's collectives, the control thread's keys, the
// watchdog's beats), the process group and the watchdog thread.
//
// Threads: agree/average_gradients/after_step from the training thread only;
// put/get from the control or training thread (they share one store client
// under a mutex); the watchdog runs on its own thread with a client of its
// own and carries the reports (publish_report/reports only touch its state),
// so that a store that stops answering (its host cut off: c10d's client calls
// then block with no time limit) never blocks the run's control loop:
// failure() says so once the watchdog has had no answer for timeout_s, and
// leave() leaves a watchdog stuck in such a call behind.
//
// Failures: joining throws GroupError when the others do not all arrive within
// timeout_s (naming the ranks missing) or the store cannot be served or
// reached. A failed collective throws GroupError naming the rank(s) whose
// heartbeat stopped (or whose process is gone, on this host). failure() says
// what the watchdog found: a rank silent for timeout_s, or the store lost.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <torch/torch.h>

#include "base/mutex.h"
#include "engine/group/group_options.h"
#include "engine/learner/step_sync.h"

namespace c10d {
class Store;
class ProcessGroup;
}  // namespace c10d

namespace moonseed::engine {

struct GroupMember {
  int rank = 0;
  std::string host;
  int64_t pid = 0;
  std::string text() const;  // "rank 1 (host node002, pid 4242)"
};

class C10dGroup : public StepSync {
 public:
  // Joins the group: blocks until every rank has joined, at most timeout_s.
  explicit C10dGroup(GroupOptions options);
  ~C10dGroup() override;
  C10dGroup(const C10dGroup&) = delete;
  C10dGroup& operator=(const C10dGroup&) = delete;

  int rank() const override { return options_.rank; }
  int world_size() const override { return options_.world_size; }
  int64_t check_every() const override { return options_.check_every; }
  StepAgreement agree(const StepProposal& proposal) override;
  void average_gradients(const std::vector<at::Tensor>& params) override;
  void after_step(int64_t step, uint64_t weights_hash) override;

  // Rank 0's `bytes` to every rank (the others' are replaced): the group's
  // checkpoint on --resume, so that no rank needs rank 0's files. A
  // collective like agree(): every rank calls it, in the same order, from the
  // thread that runs the group's collectives (before the learner starts).
  // Throws GroupError as a failed round.
  void broadcast_from_rank0(std::string& bytes);

  const std::vector<GroupMember>& members() const { return members_; }
  const GroupOptions& options() const { return options_; }

  // Shared values: rank 0 puts (its run directory, hot configs), the others
  // get, waiting for the key at most timeout_s (GroupError after). Thread-safe.
  void put(const std::string& key, const std::string& value);
  std::string get(const std::string& key);
  // This rank's report (a small JSON object), for rank 0's metrics; and every
  // rank's newest one (nullopt for a rank that has not reported yet), as the
  // watchdog read them at its last beat. Never blocks on the store. Thread-safe.
  void publish_report(const std::string& json);
  std::vector<std::optional<std::string>> reports();

  // What the watchdog found ("" while every rank answers). Thread-safe.
  std::string failure() const;
  // This rank is ending: it says so (so the others do not blame it when its
  // heartbeat stops) and stops its watchdog. With `wait_for_others`, rank 0,
  // which serves a TCP store, then waits (at most timeout_s) for the others to
  // say so too before the store goes; a group that failed does not wait for
  // ranks that are gone. Idempotent.
  void leave(bool wait_for_others = true);

 private:
  struct Watch;  // the watchdog's state, shared with its thread (which may outlive the group)
  static void watch(std::shared_ptr<Watch> w);
  // The member(s) to blame for a failed collective: those whose heartbeat
  // stopped in the last beats, or whose process on this host is gone.
  std::string blame(const std::string& what);
  c10::intrusive_ptr<c10d::Store> connect_store(bool serve) const;
  torch::Device collective_device() const;  // where the collectives' tensors live

  const GroupOptions options_;
  const Rendezvous rendezvous_;
  const std::chrono::milliseconds timeout_;
  const std::chrono::milliseconds beat_;
  std::vector<GroupMember> members_;

  // The training thread's: the process group and its buffers.
  c10::intrusive_ptr<c10d::ProcessGroup> process_group_;
  torch::Tensor flat_;  // the gradients of one step, flattened
  int batches_ = 0;     // ranks with a batch in the round agreed last

  // The control thread's store client.
  base::Mutex store_mu_;
  c10::intrusive_ptr<c10d::Store> store_ GUARDED_BY(store_mu_);
  c10::intrusive_ptr<c10d::Store> gloo_store_;  // the process group's (kept alive with it)

  std::shared_ptr<Watch> watch_;
  std::thread watchdog_;
  bool left_ = false;
};

}  // namespace moonseed::engine
