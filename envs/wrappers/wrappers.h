// Env wrappers: each an EnvSet over an inner EnvSet (envs/env_set.h), so that they apply the same
// way to every source of envs (built-in, plugin, a Python actor's vector), in the order the
// experiment lists them, the first listed innermost (docs/env-wrappers.md).
//
// Each keeps its per-env state in arrays (stacked frames, step counters, previous actions,
// generators) and resets an env's state at that env's reset. A failed inner step (an EnvError)
// passes through every wrapper as the EnvSet contract says: that env's outer observation stays
// the last one written, its reward is 0, its flags say kTruncated, and the error is reported once.
//
// Thread-safety: one thread at a time, like any EnvSet.
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>

#include "envs/env_set.h"
#include "envs/spec.h"
#include "envs/wrappers/wrapper_spec.h"

namespace moonseed::envs {

// A wrapper that does not fit the spec it wraps (e.g. frame_stack over a discrete
// observation). what() is "env.wrappers[1] (frame_stack): needs a box observation, got ...";
// field() is "env.wrappers[1] (frame_stack)" and why() the rest, for config issues.
class WrapperUnfit : public std::invalid_argument {
 public:
  WrapperUnfit(std::string field, const std::string& why)
      : std::invalid_argument(field + ": " + why), field_(std::move(field)), why_(why) {}
  const std::string& field() const { return field_; }
  const std::string& why() const { return why_; }

 private:
  std::string field_;
  std::string why_;
};

// The spec the learner sees: `base` transformed by each wrapper in turn (pure). Throws
// WrapperUnfit when a wrapper does not fit the spec it wraps, and std::invalid_argument
// (wrapper_list_problem's text) when the list itself is wrong.
EnvSpec wrapped_spec(const EnvSpec& base, const WrapperList& wrappers);

// `set` under `wrappers` (returns `set` itself for an empty list). The sticky_actions
// generators of env i start from `first_seed + i` and are seeded again by every seeded reset of
// that env. Throws as wrapped_spec.
std::unique_ptr<EnvSet> wrap(std::unique_ptr<EnvSet> set, const WrapperList& wrappers, uint64_t first_seed);

}  // namespace moonseed::envs
