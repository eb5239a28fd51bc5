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

#include "envs/env_set.h"
#include "envs/spec.h"
#include "envs/wrappers/wrapper_spec.h"

namespace moonseed::envs {

// The spec the learner sees: `base` transformed by each wrapper in turn (pure). Throws
// std::invalid_argument naming the wrapper ("env.wrappers[1] (frame_stack): ...") when a
// wrapper does not fit the spec it wraps (e.g. frame_stack over a discrete observation), or
// when the list breaks wrapper_list_problem.
EnvSpec wrapped_spec(const EnvSpec& base, const WrapperList& wrappers);

// `set` under `wrappers` (returns `set` itself for an empty list). The sticky_actions
// generators of env i start from `first_seed + i` and are seeded again by every seeded reset of
// that env. Throws as wrapped_spec.
std::unique_ptr<EnvSet> wrap(std::unique_ptr<EnvSet> set, const WrapperList& wrappers, uint64_t first_seed);

}  // namespace moonseed::envs
