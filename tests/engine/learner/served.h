// A real learner behind a real rpc::Server on a Unix socket in a fresh
// directory, for tests that talk to it as actors do (rpc::Client).
#pragma once

#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "engine/learner/agent.h"
#include "engine/learner/learner.h"
#include "envs/env.h"
#include "rpc/server.h"

namespace moonseed::engine {

// One actor of two CartPole envs in one group, a tiny net, batches of one unroll of 2.
// `steps` observations of random CartPole-sized observations (4 floats) in each env slot
// k < lengths.size(), each acted on: slot k plays episodes of lengths[k] steps (ending
// terminated), so episodes start and end inside unrolls.
inline void play_episodes(Agent& agent, int steps, const std::vector<int64_t>& lengths) {
  std::vector<int64_t> t_in_episode(lengths.size(), 0);
  for (int step = 0; step < steps; ++step) {
    for (size_t slot = 0; slot < lengths.size(); ++slot) {
      int64_t& t = t_in_episode[slot];
      const uint8_t flags = t == 0 ? envs::kFirst : t == lengths[slot] ? envs::kTerminated : 0;
      const torch::Tensor obs = torch::randn({1, 4}) * 2;
      agent.observe(static_cast<int>(slot), static_cast<const uint8_t*>(obs.data_ptr()), t == 0 ? 0.f : 1.f, flags,
                    0, 1.f);
      agent.act({static_cast<int64_t>(slot)}, obs, 0);
      t = (flags & envs::kTerminated) ? 0 : t + 1;
    }
  }
}

inline ExperimentConfig small_config() {
  ExperimentConfig c;
  c.topology.actors = 1;
  c.topology.envs_per_actor = 2;
  c.topology.groups_per_actor = 1;
  c.learner.batch = 1;
  c.learner.unroll = 2;
  c.learner.queue_capacity = 4;
  c.inference.max_batch = 2;
  c.inference.deadline_us = 100;
  c.inference.io_threads = 1;
  c.model.hidden = {8};
  c.optimizer.lr = 1e-3;
  return c;
}

// A learner serving one Unix socket in a fresh directory.
struct Served {
  // `checkpoint`: restored before the learner starts, when not empty.
  // `auth_token`: actors must present it, when not empty.
  explicit Served(const ExperimentConfig& config, const std::string& checkpoint = "",
                  const std::string& auth_token = "")
      : dir(std::filesystem::temp_directory_path() / ("moonseed-learner-" + std::to_string(::getpid()))),
        learner(config, "test-run"),
        server(learner.actor_service(), options()) {
    learner.set_auth_token(auth_token);
    std::filesystem::create_directories(dir);
    address = server.listen("unix:" + (dir / "l.sock").string()).to_string();
    server.start();
    if (!checkpoint.empty()) learner.restore(checkpoint);
    learner.start();
  }
  ~Served() {
    server.stop();
    learner.stop();
    std::filesystem::remove_all(dir);
  }
  static rpc::ServerOptions options() {
    rpc::ServerOptions o;
    o.io_threads = 1;
    return o;
  }
  std::filesystem::path dir;
  Learner learner;
  rpc::Server server;
  std::string address;
};

}  // namespace moonseed::engine
