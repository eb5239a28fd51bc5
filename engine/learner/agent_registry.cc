#include "engine/learner/agent_registry.h"

#include <algorithm>
#include <map>
#include <stdexcept>

#include "base/text.h"

namespace moonseed::engine {
namespace {

struct Algorithm {
  AgentFactory make;
  ModelCheck check_model;
};

// Built on first use, so registrations from any translation unit's static
// initializers find it ready.
std::map<std::string, Algorithm>& registry() {
  static std::map<std::string, Algorithm> algorithms;
  return algorithms;
}

std::string unknown_algo(const std::string& algo) {
  std::vector<std::string> names = registered_algorithms();
  for (std::string& name : names) name = "\"" + name + "\"";
  return "algo '" + algo + "' is not available; this learner trains " + base::join(names, " and ");
}

}  // namespace

AgentRegistration::AgentRegistration(const char* algo, AgentFactory make, ModelCheck check_model) {
  if (!registry().emplace(algo, Algorithm{make, check_model}).second) {
    throw std::logic_error(std::string("algorithm \"") + algo + "\" is registered twice");
  }
}

std::unique_ptr<Agent> make_agent(const ExperimentConfig& config, const envs::EnvSpec& spec,
                                  torch::Device device) {
  const auto found = registry().find(config.algo);
  if (found == registry().end()) throw std::invalid_argument(unknown_algo(config.algo));
  return found->second.make(config, spec, device);
}

std::string model_problem(const ExperimentConfig& config, const envs::EnvSpec& spec) {
  const auto found = registry().find(config.algo);
  if (found == registry().end()) return unknown_algo(config.algo);
  return found->second.check_model(config, spec);
}

std::vector<std::string> registered_algorithms() {
  std::vector<std::string> names;
  for (const auto& entry : registry()) names.push_back(entry.first);
  return names;
}

}  // namespace moonseed::engine
