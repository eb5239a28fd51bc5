#include "engine/learner/agent_registry.h"

#include <algorithm>
#include <map>
#include <stdexcept>

#include "base/text.h"

namespace moonseed::engine {
namespace {

// Built on first use, so registrations from any translation unit's static
// initializers find it ready.
std::map<std::string, AlgorithmParts>& registry() {
  static std::map<std::string, AlgorithmParts> algorithms;
  return algorithms;
}

std::string unknown_algo(const std::string& algo) {
  std::vector<std::string> names = registered_algorithms();
  for (std::string& name : names) name = "\"" + name + "\"";
  return "algo '" + algo + "' is not available; this learner trains " + base::join(names, " and ");
}

}  // namespace

AgentRegistration::AgentRegistration(const char* algo, AlgorithmParts parts) {
  if (parts.make == nullptr || parts.check_model == nullptr) {
    throw std::logic_error(std::string("algorithm \"") + algo + "\" is registered without its agent factory or model check");
  }
  if (!registry().emplace(algo, parts).second) {
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

models::Exported export_net(const ExperimentConfig& config, const envs::EnvSpec& spec, const std::string& checkpoint,
                            models::ExportOrigin& origin) {
  const auto found = registry().find(config.algo);
  if (found == registry().end() || found->second.export_net == nullptr) {
    std::vector<std::string> known;
    for (const auto& [name, parts] : registry()) {
      if (parts.export_net != nullptr) known.push_back(name);
    }
    throw std::runtime_error("algo \"" + config.algo + "\" has no export (algorithms with one: " +
                             base::join(known, ", ") + ")");
  }
  return found->second.export_net(config, spec, checkpoint, origin);
}

EvalActing eval_acting(const ExperimentConfig& config) {
  const auto found = registry().find(config.algo);
  if (found == registry().end() || found->second.eval_acting == nullptr) return EvalActing{};
  return found->second.eval_acting(config);
}

std::vector<MetricDoc> algorithm_metrics(const std::string& algo) {
  const auto found = registry().find(algo);
  return found == registry().end() ? std::vector<MetricDoc>{} : found->second.metrics;
}

std::string algorithm_metrics_markdown() {
  std::string text = "| key | unit | written by | meaning |\n|---|---|---|---|\n";
  for (const auto& [name, parts] : registry()) {
    for (const MetricDoc& m : parts.metrics) {
      text += std::string("| `") + m.name + "` | " + m.unit + " | " + name + " | " + m.meaning + " |\n";
    }
  }
  return text;
}

std::string with_algorithm_metrics(const std::string& page) {
  const std::string begin = "<!-- algorithm metrics";
  const std::string end = "<!-- end of algorithm metrics -->";
  const size_t b = page.find(begin);
  const size_t e = page.find(end);
  if (b == std::string::npos || e == std::string::npos || e < b) {
    throw std::invalid_argument("the page has no \"" + begin + " ...\" and \"" + end + "\" lines");
  }
  const size_t body = page.find('\n', b) + 1;
  return page.substr(0, body) + algorithm_metrics_markdown() + page.substr(e);
}

std::string export_signatures() {
  std::string text;
  for (const auto& [name, parts] : registry()) {
    if (parts.export_net == nullptr) continue;
    const std::string lead = "  " + name + ": ";
    std::string signature = parts.export_signature;
    for (size_t at = signature.find('\n'); at != std::string::npos; at = signature.find('\n', at + 1)) {
      signature.insert(at + 1, std::string(lead.size(), ' '));
    }
    text += lead + signature + "\n";
  }
  return text;
}

}  // namespace moonseed::engine
