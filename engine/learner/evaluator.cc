#include "engine/learner/evaluator.h"

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "envs/env.h"

namespace moonseed::engine {

Evaluation play_episodes(const EnvConfig& env_config, const envs::EnvSpec& spec, Agent& agent, int episodes,
                         uint64_t seed, bool greedy, int64_t max_steps) {
  if (episodes < 1 || episodes > 10000) {
    throw std::invalid_argument("evaluate: episodes must be in [1, 10000], got " + std::to_string(episodes));
  }
  if (!env_config.plugin.empty()) {
    throw std::invalid_argument("evaluate: runs envs in the learner's process, which never loads a plugin (env.plugin = \"" +
                                env_config.plugin + "\"): evaluation needs a built-in env; watch the training "
                                "returns instead (docs/env-plugins.md)");
  }
  const size_t n = static_cast<size_t>(episodes);
  std::vector<std::unique_ptr<envs::Env>> env(n);
  const bool uint8_obs = spec.observation.dtype == envs::DType::kUInt8;
  std::vector<int64_t> shape = {episodes};
  shape.insert(shape.end(), spec.observation.shape.begin(), spec.observation.shape.end());
  torch::Tensor obs = torch::zeros(shape, uint8_obs ? torch::kUInt8 : torch::kFloat32);
  const int64_t obs_bytes = spec.observation.byte_size();
  auto* obs_data = static_cast<uint8_t*>(obs.data_ptr());
  for (size_t i = 0; i < n; ++i) {
    env[i] = envs::make_env(env_config.id, env_config.options, {env_config.model});
    env[i]->reset(seed + i, obs_data + static_cast<int64_t>(i) * obs_bytes);
  }
  Evaluation out;
  out.returns.assign(n, 0.0);
  out.lengths.assign(n, 0);
  out.truncated.assign(n, false);
  std::vector<bool> done(n, false);
  size_t running = n;
  const int64_t action_bytes = spec.action.byte_size();
  const std::unique_ptr<EvalPolicy> policy = agent.evaluation_policy(episodes, greedy, seed);
  std::vector<float> rewards(n, 0.f);  // of each env's previous action
  for (bool first = true; running > 0; first = false) {
    const torch::Tensor actions = policy->act(obs, rewards, first);
    const auto* action_data = static_cast<const uint8_t*>(actions.data_ptr());
    for (size_t i = 0; i < n; ++i) {
      if (done[i]) continue;
      envs::StepResult r = env[i]->step(action_data + static_cast<int64_t>(i) * action_bytes,
                                        obs_data + static_cast<int64_t>(i) * obs_bytes);
      rewards[i] = r.reward;
      out.returns[i] += r.reward;
      out.lengths[i] += 1;
      if (r.terminated || r.truncated || out.lengths[i] >= max_steps) {
        done[i] = true;
        out.truncated[i] = !r.terminated;
        --running;
      }
    }
  }
  return out;
}

}  // namespace moonseed::engine
