// Where algorithms plug in. Each algorithm's library registers its Agent
// factory under the name `algo` selects, from a static AgentRegistration in
// its own .cc; engine/CMakeLists.txt links every algorithm library whole into
// moonseed_engine, so nothing else names them. A new algorithm is one folder
// under engine/ with its agent and one line in that list.
//
// Thread-safety: registrations run during static initialization; make_agent
// and registered_algorithms afterwards, from any thread.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "engine/config/experiment_config.h"
#include "engine/learner/agent.h"
#include "engine/learner/algorithms.h"
#include "envs/spec.h"

namespace moonseed::engine {

using AgentFactory = std::unique_ptr<Agent> (*)(const ExperimentConfig& config, const envs::EnvSpec& spec,
                                                torch::Device device);
// "" when the model `config` declares can be built for this algorithm and
// env (on the CPU), else why not: a layer that does not fit the observation,
// a recurrent core the algorithm cannot train. The loader reports it at load
// time (scripts/cross_field_rules.h), before anything starts.
using ModelCheck = std::string (*)(const ExperimentConfig& config, const envs::EnvSpec& spec);

// `static const AgentRegistration kRegistration("vtrace", &make, &check_model);`
// Registering one name twice is a bug: std::logic_error.
class AgentRegistration {
 public:
  AgentRegistration(const char* algo, AgentFactory make, ModelCheck check_model);
};

// The agent for config.algo. Throws std::invalid_argument naming the
// registered algorithms when none has that name.
std::unique_ptr<Agent> make_agent(const ExperimentConfig& config, const envs::EnvSpec& spec,
                                  torch::Device device);

}  // namespace moonseed::engine
