// V-trace over a batch of unrolls, from a policy net's outputs over it
// (engine/actor_critic/unroll_outputs.h): what V-trace's loss and APPO's share.
#pragma once

#include <torch/torch.h>

#include "engine/actor_critic/unroll_outputs.h"
#include "engine/learner/unroll_batch.h"
#include "engine/vtrace/targets/vtrace.h"

namespace moonseed::engine {

// The V-trace targets and policy-gradient advantages of a batch from a forward pass over it
// (no gradient): log rho_t from out.logpi and the behaviour's log-probs, discounts
// gamma * (1 - terminated_t) * valid_t, bootstrapping from V(x_T). `rhos`, when given, gets
// exp(log rho_t) ([T, B], 1 on invalid steps). APPO computes its advantages with it too.
// The lambda and clips of a section that has V-trace's fields under their names (`vtrace`, `appo`).
template <class Section>
VTraceParams vtrace_params(const Section& section) {
  VTraceParams params;
  params.lambda = section.lambda;
  params.rho_clip = section.rho_clip;
  params.pg_rho_clip = section.pg_rho_clip;
  params.c_clip = section.c_clip;
  return params;
}

VTraceOutput batch_vtrace_targets(const UnrollOutputs& out, const UnrollBatch& batch, double gamma,
                                  const VTraceParams& params, torch::Tensor* rhos = nullptr);

}  // namespace moonseed::engine
