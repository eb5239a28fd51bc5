// A set of environments stepped together, one call per group of consecutive envs: what the
// actor loop steps (docs/own-envs-design.md "Stepping: env sets").
//
// EnvArray serves the call from per-env Env objects (built-in and plugin envs); a Python
// actor serves it with one call into Python per group; wrappers (env.wrappers) are sets over
// a set. Every operation of a call names one env: step it with its action, reset it (seeded
// when the call carries seeds), or leave it alone (a wrapper repeating actions skips the envs
// whose episode already ended).
//
// Failures: a step that fails ends only that env's episode. Its observation stays the last one
// written (an Env that can fail must not write `obs` when it throws), its reward is 0, its flags say kTruncated, and the set appends an EnvError; the
// caller must reset that env before stepping it again. A reset that fails throws
// std::runtime_error naming the env: without a first observation the env cannot go on.
//
// Thread-safety: one thread at a time, like Env.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "envs/env.h"
#include "envs/spec.h"

namespace moonseed::envs {

enum class EnvOp : uint8_t {
  kStep = 0,   // apply the env's action; writes observation, reward, flags
  kReset = 1,  // start an episode; writes observation, reward 0, flags kFirst
  kSkip = 2,   // leave the env and its outputs alone
};

// One call on the envs [begin, begin + count) of a set. Arrays hold `count` entries (actions
// and observations `count` values of the spec's action and observation), env-major.
struct EnvSetCall {
  uint32_t begin = 0;
  uint32_t count = 0;
  const EnvOp* ops = nullptr;
  const uint8_t* actions = nullptr;  // read for kStep (int32 index or float32 values)
  const uint64_t* seeds = nullptr;   // null: resets continue the envs' generators; else one seed per env
  uint8_t* observations = nullptr;
  float* rewards = nullptr;
  uint8_t* flags = nullptr;          // envs::StepFlag bits
  // Null, or one per env that the caller sets to NaN before the call: a wrapper that changes
  // rewards (clip_reward) writes there the env's own reward, which the learner's returns count
  // (docs/env-wrappers.md). NaN after the call: the same as `rewards`. Sets that leave rewards
  // alone (EnvArray, a Python set) need not touch it.
  float* env_rewards = nullptr;
};

struct EnvError {
  uint32_t env = 0;     // index in the set
  std::string message;  // what the env said
};

class EnvSet {
 public:
  virtual ~EnvSet() = default;
  virtual const EnvSpec& spec() const = 0;
  virtual uint32_t size() const = 0;
  // Runs `call` (its envs must lie inside the set: std::out_of_range otherwise). Failed steps
  // are appended to `errors`, as the header says.
  virtual void run(const EnvSetCall& call, std::vector<EnvError>& errors) = 0;
};

// A set of independent Env objects, stepped one after the other.
class EnvArray final : public EnvSet {
 public:
  // `envs` must be non-empty and all of one spec (std::invalid_argument otherwise, with both specs).
  explicit EnvArray(std::vector<std::unique_ptr<Env>> envs);

  const EnvSpec& spec() const override { return envs_.front()->spec(); }
  uint32_t size() const override { return static_cast<uint32_t>(envs_.size()); }
  void run(const EnvSetCall& call, std::vector<EnvError>& errors) override;

  Env& env(uint32_t i) { return *envs_.at(i); }

 private:
  std::vector<std::unique_ptr<Env>> envs_;
  size_t obs_bytes_ = 0;
  size_t action_bytes_ = 0;
};

// Checks that [call.begin, call.begin + call.count) lies inside a set of `size` envs.
void check_call_range(const EnvSetCall& call, uint32_t size);

}  // namespace moonseed::envs
