// CartPoleNoVelocity-v1: CartPole-v1 with the velocities hidden, a memory task for recurrent
// agents (the POMDP of the R2D2 paper's partially observed control tasks). Dynamics, reward,
// termination, the time limit (500 by default), seeding and get_state()/set_state() are those
// of CartPole, bit for bit (a state of one loads into the other); only the observation
// differs: float32 [x, theta] (CartPole's elements 0 and 2), bounds [4.8, 24 deg]. A
// feed-forward agent sees position and angle but not where they are going; a recurrent one
// can infer it.
//
// Errors: as CartPole's, naming this env's id. Not thread-safe: one thread at a time, as Env
// says.
#pragma once

#include "envs/classic/cartpole.h"

namespace moonseed::envs {

class CartPoleNoVelocity final : public CartPole {
 public:
  static constexpr const char* kId = "CartPoleNoVelocity-v1";

  explicit CartPoleNoVelocity(int max_episode_steps = kDefaultMaxEpisodeSteps, bool sutton_barto_reward = false);
};

}  // namespace moonseed::envs
