// What the registered algorithms (agent_registry.h) offer code that knows no
// LibTorch: their names, and whether the model an experiment declares can be
// built for its algorithm. The loader asks both before anything starts.
//
// Thread-safety: after static initialization, any thread.
#pragma once

#include <string>
#include <vector>

#include "engine/config/experiment_config.h"
#include "envs/spec.h"

namespace moonseed::engine {

// The registered algorithm's model check for config.algo (agent_registry.h
// ModelCheck): "" or why the declared model cannot be built for it and the
// env. For an unknown algo, the reason make_agent would give.
std::string model_problem(const ExperimentConfig& config, const envs::EnvSpec& spec);

// The registered names, sorted.
std::vector<std::string> registered_algorithms();

}  // namespace moonseed::engine
