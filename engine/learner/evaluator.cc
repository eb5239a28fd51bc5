#include "engine/learner/evaluator.h"

#include <cmath>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "envs/env.h"
#include "envs/env_set.h"
#include "envs/wrappers/wrappers.h"

namespace moonseed::engine {

Evaluation play_episodes(const EnvConfig& env_config, const envs::EnvSpec& spec, Agent& agent, int episodes,
                         uint64_t seed, bool greedy, int64_t max_steps, const EpisodeWatcher& watch) {
  if (episodes < 1 || episodes > 10000) {
    throw std::invalid_argument("evaluate: episodes must be in [1, 10000], got " + std::to_string(episodes));
  }
  if (!env_config.plugin.empty()) {
    throw std::invalid_argument("evaluate: runs envs in the learner's process, which never loads a plugin (env.plugin = \"" +
                                env_config.plugin + "\"): evaluation needs a built-in env; watch the training "
                                "returns instead (docs/env-plugins.md)");
  }
  if (!env_config.python.empty()) {
    throw std::invalid_argument("evaluate: runs envs in the learner's process, which never runs Python env code "
                                "(env.python = \"" + env_config.python + "\"): evaluation needs a built-in env; "
                                "watch the training returns instead (docs/python-actors.md)");
  }
  const size_t n = static_cast<size_t>(episodes);
  const bool uint8_obs = spec.observation.dtype == envs::DType::kUInt8;
  std::vector<int64_t> shape = {episodes};
  shape.insert(shape.end(), spec.observation.shape.begin(), spec.observation.shape.end());
  torch::Tensor obs = torch::zeros(shape, uint8_obs ? torch::kUInt8 : torch::kFloat32);
  auto* obs_data = static_cast<uint8_t*>(obs.data_ptr());
  // The envs the actors run: built-in envs under the experiment's wrappers, stepped as one set.
  std::vector<std::unique_ptr<envs::Env>> made;
  for (size_t i = 0; i < n; ++i) made.push_back(envs::make_env(env_config.id, env_config.options, {env_config.model}));
  std::vector<const envs::Env*> watched;  // the built-in envs, which the wrappers step
  for (const std::unique_ptr<envs::Env>& e : made) watched.push_back(e.get());
  const std::unique_ptr<envs::EnvSet> set =
      envs::wrap(std::make_unique<envs::EnvArray>(std::move(made)), env_config.wrappers, seed);
  std::vector<envs::EnvOp> ops(n, envs::EnvOp::kReset);
  std::vector<uint64_t> seeds(n);
  for (size_t i = 0; i < n; ++i) seeds[i] = seed + i;
  std::vector<float> step_rewards(n, 0.f);
  std::vector<float> env_rewards(n, 0.f);  // the env's own, which returns count (clip_reward changes the others)
  std::vector<uint8_t> flags(n, 0);
  std::vector<envs::EnvError> errors;  // a failed step ends its episode as truncated, as on an actor
  envs::EnvSetCall call;
  call.count = static_cast<uint32_t>(n);
  call.ops = ops.data();
  call.seeds = seeds.data();
  call.observations = obs_data;
  call.rewards = step_rewards.data();
  call.flags = flags.data();
  call.env_rewards = env_rewards.data();
  set->run(call, errors);
  call.seeds = nullptr;
  if (watch) {
    for (size_t i = 0; i < n; ++i) watch(i, *watched[i]);
  }
  Evaluation out;
  out.returns.assign(n, 0.0);
  out.lengths.assign(n, 0);
  out.truncated.assign(n, false);
  std::vector<bool> done(n, false);
  size_t running = n;
  const std::unique_ptr<EvalPolicy> policy = agent.evaluation_policy(episodes, greedy, seed);
  std::vector<float> rewards(n, 0.f);  // of each env's previous action
  for (bool first = true; running > 0; first = false) {
    const torch::Tensor actions = policy->act(obs, rewards, first);
    call.actions = static_cast<const uint8_t*>(actions.data_ptr());
    for (size_t i = 0; i < n; ++i) ops[i] = done[i] ? envs::EnvOp::kSkip : envs::EnvOp::kStep;
    env_rewards.assign(n, std::nanf(""));
    set->run(call, errors);
    for (size_t i = 0; i < n; ++i) {
      if (done[i]) continue;
      rewards[i] = step_rewards[i];  // what the policy trained on
      out.returns[i] += std::isnan(env_rewards[i]) ? step_rewards[i] : env_rewards[i];
      out.lengths[i] += 1;
      const bool terminated = (flags[i] & envs::kTerminated) != 0;
      if (terminated || (flags[i] & envs::kTruncated) || out.lengths[i] >= max_steps) {
        done[i] = true;
        out.truncated[i] = !terminated;
        --running;
      }
      if (watch) watch(i, *watched[i]);
    }
  }
  return out;
}

}  // namespace moonseed::engine
