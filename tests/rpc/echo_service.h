// A test ActorService: admits every actor (unless told to refuse), answers
// each StepBatch at once with an ActionBatch derived from it, and records what
// happened so a test thread can wait for it.
#pragma once

#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "rpc/service.h"

namespace moonseed::rpc::testing {

// The reply the echo service sends for `batch`: one int32 per env, seq*1000 + env.
ActionBatch echo_reply(const StepBatch& batch);

class EchoService : public ActorService {
 public:
  Admission on_hello(const Hello& hello) override;
  void on_connect(std::shared_ptr<ActorLink> link) override;
  void on_steps(const std::shared_ptr<ActorLink>& link, StepBatch&& batch) override;
  void on_disconnect(const std::shared_ptr<ActorLink>& link, const std::string& reason) override;
  void on_notice(const std::shared_ptr<ActorLink>& link, const ActorNotice& notice) override;

  // Every later Hello is refused with `reason`.
  void refuse_with(std::string reason);
  // Later Hellos with another auth token are refused as bad credentials.
  void require_token(std::string token);

  // Block until the event happens; after 10 s they fail the test and return
  // an empty value.
  std::shared_ptr<ActorLink> wait_for_link(int32_t actor_id);
  std::string wait_for_disconnect(int32_t actor_id);
  // The first ActorNotice of that actor.
  ActorNotice wait_for_notice(int32_t actor_id);

  std::vector<Hello> hellos() const;
  int connects() const;

 private:
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::string refuse_reason_;                               // guarded by mutex_
  std::string required_token_;                              // guarded by mutex_
  int32_t next_actor_id_ = 100;                             // guarded by mutex_
  int connects_ = 0;                                        // guarded by mutex_
  std::vector<Hello> hellos_;                               // guarded by mutex_
  std::map<int32_t, std::shared_ptr<ActorLink>> links_;     // guarded by mutex_
  std::map<int32_t, std::string> disconnects_;              // guarded by mutex_
  std::map<int32_t, ActorNotice> notices_;                  // guarded by mutex_
};

}  // namespace moonseed::rpc::testing
