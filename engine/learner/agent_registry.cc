#include "engine/learner/agent_registry.h"

#include <algorithm>
#include <map>
#include <stdexcept>

#include "base/text.h"

namespace moonseed::engine {
namespace {

// Built on first use, so registrations from any translation unit's static
// initializers find it ready.
std::map<std::string, AgentFactory>& registry() {
  static std::map<std::string, AgentFactory> factories;
  return factories;
}

}  // namespace

AgentRegistration::AgentRegistration(const char* algo, AgentFactory make) {
  if (!registry().emplace(algo, make).second) {
    throw std::logic_error(std::string("algorithm \"") + algo + "\" is registered twice");
  }
}

std::unique_ptr<Agent> make_agent(const ExperimentConfig& config, const envs::EnvSpec& spec,
                                  torch::Device device) {
  const auto found = registry().find(config.algo);
  if (found == registry().end()) {
    std::vector<std::string> names = registered_algorithms();
    for (std::string& name : names) name = "\"" + name + "\"";
    throw std::invalid_argument("algo '" + config.algo + "' is not available; this learner trains " +
                                base::join(names, " and "));
  }
  return found->second(config, spec, device);
}

std::vector<std::string> registered_algorithms() {
  std::vector<std::string> names;
  for (const auto& entry : registry()) names.push_back(entry.first);
  return names;
}

}  // namespace moonseed::engine
