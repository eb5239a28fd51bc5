#include "engine/learner/unroll_batch.h"

namespace moonseed::engine {
namespace {

torch::Tensor moved(const torch::Tensor& t, const torch::Device& device, bool non_blocking) {
  return t.defined() ? t.to(device, non_blocking) : t;
}

}  // namespace

UnrollBatch UnrollBatch::to(const torch::Device& device, bool non_blocking) const {
  UnrollBatch out;
  out.observations = moved(observations, device, non_blocking);
  out.actions = moved(actions, device, non_blocking);
  out.behaviour_logp = moved(behaviour_logp, device, non_blocking);
  out.rewards = moved(rewards, device, non_blocking);
  out.terminated = moved(terminated, device, non_blocking);
  out.truncated = moved(truncated, device, non_blocking);
  out.valid = moved(valid, device, non_blocking);
  out.policy_version = moved(policy_version, device, non_blocking);
  if (start_h.defined()) {
    out.start_h = moved(start_h, device, non_blocking);
    out.start_c = moved(start_c, device, non_blocking);
    out.start_prev_action = moved(start_prev_action, device, non_blocking);
    out.start_prev_reward = moved(start_prev_reward, device, non_blocking);
  }
  out.frames = frames;
  return out;
}

}  // namespace moonseed::engine
