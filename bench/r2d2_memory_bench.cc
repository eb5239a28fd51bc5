// R2D2 on a memory task, recurrent against feed-forward, in-process (no
// sockets: tests/engine/r2d2/r2d2_local_run.h): CartPoleNoVelocity-v1 shows only
// [x, theta], so the velocities must be inferred from past observations.
//
//   r2d2_memory_bench [FRAMES] [ENV_ID]     defaults: 100000 CartPoleNoVelocity-v1
//
// Both agents use the same settings but for the LSTM (64 units, or none), the
// same seeds, and 16 envs with Ape-X epsilons; one learning step of batch 32
// per 16 env steps. Prints each agent's mean return over its last 20 episodes,
// and the recurrent one's as a ratio of the feed-forward one's (measured in the
// same run, as every bench here).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "tests/engine/r2d2/r2d2_local_run.h"

int main(int argc, char** argv) {
  using namespace moonseed::engine;
  const int64_t frames = argc > 1 ? std::atoll(argv[1]) : 100000;
  const std::string env_id = argc > 2 ? argv[2] : "CartPoleNoVelocity-v1";
  if (frames < 1000) {
    std::fprintf(stderr, "usage: r2d2_memory_bench [FRAMES >= 1000] [ENV_ID]\n");
    return 2;
  }
  double returns[2] = {0, 0};
  const int64_t sizes[2] = {64, 0};
  for (int k = 0; k < 2; ++k) {
    R2d2CoreConfig config = testing::cartpole_config(sizes[k]);
    config.trainer.burn_in = 8;
    config.trainer.trace = 16;
    config.replay.period = 8;
    const auto start = std::chrono::steady_clock::now();
    const testing::RunResult r = testing::run_env(env_id, config, 16, frames, 1);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    returns[k] = r.return_mean;
    std::printf("%-13s %s: return_mean %7.1f after %lld frames, %lld learning steps, %.1f s\n",
                sizes[k] ? "LSTM 64" : "feed-forward", env_id.c_str(), r.return_mean,
                static_cast<long long>(r.frames), static_cast<long long>(r.learning_steps), seconds);
  }
  std::printf("recurrent / feed-forward return: %.2f\n", returns[1] > 0 ? returns[0] / returns[1] : 0.0);
  return 0;
}
