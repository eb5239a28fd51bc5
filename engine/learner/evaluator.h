// Plays evaluation episodes with a policy, outside training: fresh envs of the
// run's env under its env.wrappers, seeded seed, seed + 1, ..., all stepped together with one call of
// the policy per step (Learner::evaluate, `moonseed ctl RUN evaluate`).
//
// Thread-safety: one call uses only its own envs; the policy guards the
// weights it reads (Agent::evaluation_policy).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>

#include "engine/config/experiment_config.h"
#include "engine/learner/agent.h"
#include "engine/learner/stats.h"
#include "envs/env.h"
#include "envs/spec.h"

namespace moonseed::engine {

// `episodes` episodes of `env` (whose wrapped spec is `spec`) under the agent's
// evaluation policy (greedy, or exploring as the algorithm does at
// evaluation), which acts for all of them at once. An episode ends at
// termination, at the env's own time limit, or after `max_steps` steps.
// Throws std::invalid_argument for episodes outside [1, 10000].
// `watch`, when set, is called in the calling thread with the episode's index and its env (the
// built-in env under the wrappers) after the episode's reset and after each of its steps, the
// last included: `moonseed eval --video` renders it. What it throws ends the play.
using EpisodeWatcher = std::function<void(size_t episode, const envs::Env& env)>;
Evaluation play_episodes(const EnvConfig& env, const envs::EnvSpec& spec, Agent& agent, int episodes,
                         uint64_t seed, bool greedy, int64_t max_steps, const EpisodeWatcher& watch = {});

}  // namespace moonseed::engine
