// A scripted learner for tests that run a real actor process (moonseed-actor or a Python actor)
// over a real socket: welcomes every actor with the given Welcome, records every env's steps (a
// CartPole-sized observation, the reward and flags) and the actor's notices, and answers each
// batch with the action `policy` picks for the env and its step number.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "rpc/server.h"

namespace moonseed::testing {

// One env's CartPole observation and what the actor sent with it.
struct Sent {
  float obs[4];
  float reward;
  uint8_t flags;
};

class RecordingLearner : public rpc::ActorService {
 public:
  // policy(env, steps recorded for it so far, this one included) -> action.
  using Policy = std::function<int32_t(uint32_t env, size_t steps)>;
  RecordingLearner(rpc::Welcome welcome, Policy policy) : welcome_(std::move(welcome)), policy_(std::move(policy)) {}

  rpc::Admission on_hello(const rpc::Hello&) override {
    rpc::Admission a;
    a.accepted = true;
    a.welcome = welcome_;
    return a;
  }
  void on_connect(std::shared_ptr<rpc::ActorLink> link) override {
    std::lock_guard<std::mutex> lock(mu_);
    link_ = std::move(link);
  }
  void on_steps(const std::shared_ptr<rpc::ActorLink>& link, rpc::StepBatch&& batch) override {
    rpc::ActionBatch reply;
    reply.seq = batch.seq;
    reply.actions.resize(batch.count * sizeof(int32_t));
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (uint32_t i = 0; i < batch.count; ++i) {
        const uint32_t e = batch.env_begin + i;
        Sent s;
        std::memcpy(s.obs, &batch.observations[i * sizeof s.obs], sizeof s.obs);
        s.reward = batch.rewards[i];
        s.flags = batch.flags[i];
        steps_[e].push_back(s);
        const int32_t action = policy_(e, steps_[e].size());
        std::memcpy(&reply.actions[i * sizeof(int32_t)], &action, sizeof action);
      }
    }
    changed_.notify_all();
    link->send_actions(std::move(reply));
  }
  void on_disconnect(const std::shared_ptr<rpc::ActorLink>&, const std::string&) override {}
  void on_notice(const std::shared_ptr<rpc::ActorLink>&, const rpc::ActorNotice& notice) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      notices_.push_back(notice.text);
    }
    changed_.notify_all();
  }

  // Waits (at most 60 s: a loaded machine, Python's start-up) until each of the Welcome's envs
  // has sent `n` steps.
  bool wait_for_steps(size_t n) {
    std::unique_lock<std::mutex> lock(mu_);
    return changed_.wait_for(lock, std::chrono::seconds(60), [&] {
      if (steps_.size() < welcome_.num_envs) return false;
      for (const auto& [env, sent] : steps_) {
        if (sent.size() < n) return false;
      }
      return true;
    });
  }
  void bye() {
    std::lock_guard<std::mutex> lock(mu_);
    if (link_) link_->send_bye("test done");
  }
  std::map<uint32_t, std::vector<Sent>> steps() {
    std::lock_guard<std::mutex> lock(mu_);
    return steps_;
  }
  std::vector<std::string> notices() {
    std::lock_guard<std::mutex> lock(mu_);
    return notices_;
  }

 private:
  const rpc::Welcome welcome_;
  const Policy policy_;
  std::mutex mu_;
  std::condition_variable changed_;
  std::shared_ptr<rpc::ActorLink> link_;         // guarded by mu_
  std::map<uint32_t, std::vector<Sent>> steps_;  // guarded by mu_, by env index in the actor
  std::vector<std::string> notices_;             // guarded by mu_
};

}  // namespace moonseed::testing
