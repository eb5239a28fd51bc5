#include "engine/vtrace/vtrace_loss.h"

#include <algorithm>
#include <sstream>
#include <stdexcept>

#include "engine/vtrace/vtrace.h"
#include "models/action_dist.h"

namespace moonseed::engine {
namespace {

void require_steps(const char* name, const torch::Tensor& t, int64_t T1, int64_t B) {
  if (!t.defined() || t.dim() < 2 || t.size(0) != T1 || t.size(1) != B) {
    std::ostringstream os;
    os << "vtrace_loss: batch." << name << " must start with [T+1, B] = [" << T1 << ", " << B
       << "], got ";
    if (t.defined()) {
      os << t.sizes();
    } else {
      os << "undefined";
    }
    throw std::invalid_argument(os.str());
  }
}

// The rows of a forward pass that belong to steps t < T (time-major flattening
// puts them first).
models::PolicyOutput first_rows(const models::PolicyOutput& out, int64_t rows) {
  models::PolicyOutput head;
  head.logits_or_mean = out.logits_or_mean.narrow(0, 0, rows);
  if (out.log_std.defined()) head.log_std = out.log_std.narrow(0, 0, rows);
  head.value = out.value.narrow(0, 0, rows);
  return head;
}

// A recurrent policy over the batch's T+1 steps from each unroll's start state. x_t starts an
// episode where x_{t-1} was a final observation (valid 0): the state is zeroed before it. Step 0's
// start state was stored after any reset at acting time, so it needs none.
models::PolicyOutput recurrent_outputs(models::PolicyNet& model, const UnrollBatch& batch) {
  if (!batch.start_h.defined() || !batch.start_c.defined()) {
    throw std::invalid_argument("vtrace_loss: a recurrent model needs the batch's start states (start_h, start_c)");
  }
  if (!batch.start_prev_action.defined() || !batch.start_prev_reward.defined()) {
    throw std::invalid_argument("vtrace_loss: a recurrent model needs the batch's start_prev_action and start_prev_reward");
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

}  // namespace

LossTerms vtrace_loss(models::PolicyNet& model, const UnrollBatch& batch,
                      const VTraceConfig& config, double bc_cost) {
  if (!batch.observations.defined() || batch.observations.dim() < 3 ||
      batch.observations.size(0) < 2) {
    std::ostringstream os;
    os << "vtrace_loss: batch.observations must be [T+1, B, obs...] with T >= 1, got ";
    if (batch.observations.defined()) {
      os << batch.observations.sizes();
    } else {
      os << "undefined";
    }
    throw std::invalid_argument(os.str());
  }
  const int64_t T = batch.T();
  const int64_t B = batch.B();
  require_steps("actions", batch.actions, T + 1, B);
  require_steps("behaviour_logp", batch.behaviour_logp, T + 1, B);
  require_steps("rewards", batch.rewards, T + 1, B);
  require_steps("terminated", batch.terminated, T + 1, B);
  require_steps("valid", batch.valid, T + 1, B);

  const models::PolicyOutput out = model->recurrent() ? recurrent_outputs(model, batch)
                                                      : model->forward(batch.observations.flatten(0, 1));
  const models::PolicyOutput learner = first_rows(out, T * B);
  const torch::Tensor actions = batch.actions.narrow(0, 0, T).flatten(0, 1);
  const torch::Tensor logpi = models::log_prob(learner, actions).view({T, B});
  const torch::Tensor entropy = models::entropy(learner).view({T, B});
  const torch::Tensor values_all = out.value.view({T + 1, B});
  const torch::Tensor values = values_all.narrow(0, 0, T);

  const torch::Tensor valid = batch.valid.narrow(0, 0, T).to(torch::kFloat32);
  const torch::Tensor is_valid = valid > 0;
  VTraceOutput targets;
  torch::Tensor rhos;
  {
    torch::NoGradGuard no_grad;
    // Invalid steps are zeroed with where() rather than by the mask product alone,
    // so that anything stored there (even inf or NaN) cannot reach the loss.
    const torch::Tensor zeros = torch::zeros_like(valid);
    VTraceInput in;
    in.log_rhos = torch::where(
        is_valid, logpi.detach() - batch.behaviour_logp.narrow(0, 0, T).to(torch::kFloat32),
        zeros);
    in.discounts = config.gamma * (1.0 - batch.terminated.narrow(0, 0, T)) * valid;
    in.rewards = torch::where(is_valid, batch.rewards.narrow(0, 0, T), zeros);
    in.values = values.detach();
    in.bootstrap_value = values_all[T].detach();
    in.mask = valid;
    VTraceParams params;
    params.lambda = config.lambda;
    params.rho_clip = config.rho_clip;
    params.pg_rho_clip = config.pg_rho_clip;
    params.c_clip = config.c_clip;
    targets = vtrace(in, params);
    rhos = in.log_rhos.exp();
  }

  // Sums are divided by the number of valid steps in the batch, not by B*T, so the
  // learning rate means the same thing whatever the batch and unroll sizes are, and
  // batches with many final-observation steps are not down-weighted.
  const int64_t valid_steps = is_valid.sum().item<int64_t>();
  const double denom = static_cast<double>(std::max<int64_t>(valid_steps, 1));

  const torch::Tensor policy_loss = -(logpi * targets.pg_advantages * valid).sum() / denom;
  const torch::Tensor baseline_loss =
      config.baseline_cost * 0.5 * ((targets.vs - values).square() * valid).sum() / denom;
  const torch::Tensor mean_entropy = (entropy * valid).sum() / denom;
  // IMPALA's sign: the loss gets minus the entropy bonus, so minimising it raises H.
  const torch::Tensor entropy_loss = -config.entropy_cost * mean_entropy;

  LossTerms terms;
  terms.total = policy_loss + baseline_loss + entropy_loss;
  if (bc_cost > 0) {
    const torch::Tensor bc_loss = -bc_cost * (logpi * valid).sum() / denom;
    terms.total = terms.total + bc_loss;
    terms.bc = bc_loss.item<double>();
  }
  terms.policy = policy_loss.item<double>();
  terms.baseline = baseline_loss.item<double>();
  terms.entropy = entropy_loss.item<double>();
  terms.mean_entropy = mean_entropy.item<double>();
  terms.mean_rho = ((rhos * valid).sum() / denom).item<double>();
  terms.mean_value = ((values.detach() * valid).sum() / denom).item<double>();
  terms.valid_steps = valid_steps;
  return terms;
}

}  // namespace moonseed::engine
