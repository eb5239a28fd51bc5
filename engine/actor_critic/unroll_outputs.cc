#include "engine/actor_critic/unroll_outputs.h"

#include <sstream>
#include <stdexcept>
#include <string>

#include "models/action_dist.h"

namespace moonseed::engine {
namespace {

void require_steps(const char* who, const char* name, const torch::Tensor& t, int64_t T1, int64_t B) {
  if (!t.defined() || t.dim() < 2 || t.size(0) != T1 || t.size(1) != B) {
    std::ostringstream os;
    os << who << ": batch." << name << " must start with [T+1, B] = [" << T1 << ", " << B << "], got ";
    if (t.defined()) {
      os << t.sizes();
    } else {
      os << "undefined";
    }
    throw std::invalid_argument(os.str());
  }
}

// A recurrent policy over the batch's T+1 steps from each unroll's start state. x_t starts an
// episode where x_{t-1} was a final observation (valid 0): the state is zeroed before it. Step 0's
// start state was stored after any reset at acting time, so it needs none.
models::PolicyOutput recurrent_outputs(models::PolicyNet& model, const UnrollBatch& batch, const char* who) {
  if (!batch.start_h.defined() || !batch.start_c.defined()) {
    throw std::invalid_argument(std::string(who) + ": a recurrent model needs the batch's start states (start_h, start_c)");
  }
  if (!batch.start_prev_action.defined() || !batch.start_prev_reward.defined()) {
    throw std::invalid_argument(std::string(who) +
                                ": a recurrent model needs the batch's start_prev_action and start_prev_reward");
  }
  const int64_t T = batch.T(), B = batch.B();
  const torch::Tensor valid = batch.valid.to(torch::kFloat32);
  const torch::Tensor reset = torch::cat({torch::zeros({1, B}, valid.options()), 1 - valid.narrow(0, 0, T)});
  // The action and reward before x_t: a_{t-1} and r_{t-1}, step 0's from the unroll; none where x_t
  // starts an episode.
  torch::Tensor prev_action = torch::cat({batch.start_prev_action.unsqueeze(0), batch.actions.narrow(0, 0, T)});
  const torch::Tensor prev_reward =
      torch::cat({batch.start_prev_reward.unsqueeze(0), batch.rewards.narrow(0, 0, T)}) * (1 - reset);
  if (prev_action.scalar_type() == torch::kInt64) {
    prev_action = torch::where(reset > 0, torch::full_like(prev_action, -1), prev_action);
  } else {
    prev_action = prev_action * (1 - reset).unsqueeze(-1);
  }
  return model->unroll(batch.observations, prev_action, prev_reward, reset, {batch.start_h, batch.start_c}).first;
}

// The rows of a forward pass that belong to steps t < T (time-major flattening puts them first).
models::PolicyOutput first_rows(const models::PolicyOutput& out, int64_t rows) {
  models::PolicyOutput head;
  head.logits_or_mean = out.logits_or_mean.narrow(0, 0, rows);
  if (out.log_std.defined()) head.log_std = out.log_std.narrow(0, 0, rows);
  head.value = out.value.narrow(0, 0, rows);
  return head;
}

torch::Tensor select_columns(const torch::Tensor& t, const torch::Tensor& index) {
  return t.defined() ? t.index_select(1, index) : t;
}

torch::Tensor select_rows(const torch::Tensor& t, const torch::Tensor& index) {
  return t.defined() ? t.index_select(0, index) : t;
}

}  // namespace

UnrollOutputs unroll_outputs(models::PolicyNet& model, const UnrollBatch& batch, const char* who) {
  if (!batch.observations.defined() || batch.observations.dim() < 3 || batch.observations.size(0) < 2) {
    std::ostringstream os;
    os << who << ": batch.observations must be [T+1, B, obs...] with T >= 1, got ";
    if (batch.observations.defined()) {
      os << batch.observations.sizes();
    } else {
      os << "undefined";
    }
    throw std::invalid_argument(os.str());
  }
  const int64_t T = batch.T();
  const int64_t B = batch.B();
  require_steps(who, "actions", batch.actions, T + 1, B);
  require_steps(who, "behaviour_logp", batch.behaviour_logp, T + 1, B);
  require_steps(who, "rewards", batch.rewards, T + 1, B);
  require_steps(who, "terminated", batch.terminated, T + 1, B);
  require_steps(who, "valid", batch.valid, T + 1, B);

  const models::PolicyOutput out = model->recurrent() ? recurrent_outputs(model, batch, who)
                                                      : model->forward(batch.observations.flatten(0, 1));
  const models::PolicyOutput head = first_rows(out, T * B);
  const torch::Tensor actions = batch.actions.narrow(0, 0, T).flatten(0, 1);
  UnrollOutputs result;
  result.logpi = models::log_prob(head, actions).view({T, B});
  result.entropy = models::entropy(head).view({T, B});
  result.values = out.value.view({T + 1, B});
  result.valid = batch.valid.narrow(0, 0, batch.T()).to(torch::kFloat32);
  return result;
}

UnrollBatch select_unrolls(const UnrollBatch& batch, const torch::Tensor& index) {
  UnrollBatch part;
  part.observations = select_columns(batch.observations, index);
  part.actions = select_columns(batch.actions, index);
  part.behaviour_logp = select_columns(batch.behaviour_logp, index);
  part.rewards = select_columns(batch.rewards, index);
  part.terminated = select_columns(batch.terminated, index);
  part.truncated = select_columns(batch.truncated, index);
  part.valid = select_columns(batch.valid, index);
  part.policy_version = select_columns(batch.policy_version, index);
  part.start_h = select_rows(batch.start_h, index);
  part.start_c = select_rows(batch.start_c, index);
  part.start_prev_action = select_rows(batch.start_prev_action, index);
  part.start_prev_reward = select_rows(batch.start_prev_reward, index);
  part.frames = part.valid.narrow(0, 0, part.T()).sum().item<int64_t>();
  return part;
}

}  // namespace moonseed::engine
