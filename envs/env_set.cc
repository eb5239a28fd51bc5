#include "envs/env_set.h"

#include <stdexcept>
#include <utility>

namespace moonseed::envs {

void check_call_range(const EnvSetCall& call, uint32_t size) {
  if (call.begin > size || call.count > size - call.begin) {
    throw std::out_of_range("env set call on envs [" + std::to_string(call.begin) + ", " +
                            std::to_string(uint64_t{call.begin} + call.count) + ") of a set of " +
                            std::to_string(size));
  }
}

EnvArray::EnvArray(std::vector<std::unique_ptr<Env>> envs) : envs_(std::move(envs)) {
  if (envs_.empty()) throw std::invalid_argument("an env set needs at least one env");
  for (const auto& env : envs_) {
    if (env->spec() != envs_.front()->spec()) {
      throw std::invalid_argument("the envs of a set differ: " + envs_.front()->spec().describe() + " and " +
                                  env->spec().describe());
    }
  }
  obs_bytes_ = static_cast<size_t>(spec().observation.byte_size());
  action_bytes_ = static_cast<size_t>(spec().action.byte_size());
}

void EnvArray::run(const EnvSetCall& call, std::vector<EnvError>& errors) {
  check_call_range(call, size());
  for (uint32_t i = 0; i < call.count; ++i) {
    const uint32_t e = call.begin + i;
    Env& env = *envs_[e];
    uint8_t* obs = call.observations + i * obs_bytes_;
    switch (call.ops[i]) {
      case EnvOp::kSkip:
        break;
      case EnvOp::kReset: {
        std::optional<uint64_t> seed;
        if (call.seeds) seed = call.seeds[i];
        try {
          env.reset(seed, obs);
        } catch (const std::exception& ex) {
          throw std::runtime_error("env " + std::to_string(e) + ": reset failed: " + ex.what());
        }
        call.rewards[i] = 0.f;
        call.flags[i] = kFirst;
        break;
      }
      case EnvOp::kStep: {
        try {
          StepResult r = env.step(call.actions + i * action_bytes_, obs);
          call.rewards[i] = r.reward;
          call.flags[i] = static_cast<uint8_t>((r.terminated ? kTerminated : 0) | (r.truncated ? kTruncated : 0));
        } catch (const EnvCorrupted&) {
          throw;
        } catch (const std::exception& ex) {
          call.rewards[i] = 0.f;
          call.flags[i] = kTruncated;
          errors.push_back(EnvError{e, ex.what()});
        }
        break;
      }
    }
  }
}

}  // namespace moonseed::envs
