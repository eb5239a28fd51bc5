// Where algorithms plug in. Each algorithm's library registers its parts (the
// Agent factory, its model check, its export, how its evaluation envs act)
// under the name `algo` selects, from a static AgentRegistration in its own
// .cc; engine/CMakeLists.txt links every algorithm library whole into
// moonseed_engine, so nothing else names them (docs/algorithms-design.md).
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
#include "models/export.h"

namespace moonseed::engine {

using AgentFactory = std::unique_ptr<Agent> (*)(const ExperimentConfig& config, const envs::EnvSpec& spec,
                                                torch::Device device);
// "" when the model `config` declares can be built for this algorithm and
// env (on the CPU), else why not: a layer that does not fit the observation,
// a recurrent core the algorithm cannot train. The loader reports it at load
// time (scripts/loader/cross_field_rules.h), before anything starts.
using ModelCheck = std::string (*)(const ExperimentConfig& config, const envs::EnvSpec& spec);

// How an algorithm's evaluation envs act (topology.eval_envs_per_actor), which the run's final
// evaluation copies: `greedy` for Learner::evaluate, and the words that say it ("sampled",
// "greedy", "epsilon 0.001").
struct EvalActing {
  bool greedy = false;
  std::string text = "sampled";
};
using EvalActingFn = EvalActing (*)(const ExperimentConfig& config);

// `moonseed export`: the algorithm's acting net for `config` and `spec` with the weights of
// `checkpoint`, as a TorchScript module (models/export.h); sets origin.step to the checkpoint's
// optimizer step. Throws what loading the checkpoint throws.
using ExportFn = models::Exported (*)(const ExperimentConfig& config, const envs::EnvSpec& spec,
                                      const std::string& checkpoint, models::ExportOrigin& origin);

// One number an algorithm writes under its own name (TrainReport::metrics, AgentStats::metrics):
// its metrics.jsonl key, its unit, and what it means. docs/metrics.md's table of the
// algorithms' numbers is made from these (algorithm_metrics_markdown).
struct MetricDoc {
  const char* name;
  const char* unit;
  const char* meaning;
};

struct AlgorithmParts {
  AgentFactory make = nullptr;
  ModelCheck check_model = nullptr;
  ExportFn export_net = nullptr;       // null: `moonseed export` refuses the algorithm's runs
  const char* export_signature = "";   // the exported module's forward, for `moonseed export --help`
  EvalActingFn eval_acting = nullptr;  // null: sampled
  std::vector<MetricDoc> metrics;      // every metric its agent reports
};

// `static const AgentRegistration kRegistration("vtrace", {&make, &check_model, ...});`
// Registering one name twice is a bug: std::logic_error.
class AgentRegistration {
 public:
  AgentRegistration(const char* algo, AlgorithmParts parts);
};

// The agent for config.algo. Throws std::invalid_argument naming the
// registered algorithms when none has that name.
std::unique_ptr<Agent> make_agent(const ExperimentConfig& config, const envs::EnvSpec& spec,
                                  torch::Device device);

// The registered export of config.algo (ExportFn). Throws std::runtime_error naming the
// algorithms that have one when config.algo has none.
models::Exported export_net(const ExperimentConfig& config, const envs::EnvSpec& spec, const std::string& checkpoint,
                            models::ExportOrigin& origin);

// How config.algo's evaluation envs act (EvalActingFn); sampled for an algorithm that does not say.
EvalActing eval_acting(const ExperimentConfig& config);

// The metrics `algo` declared (empty for an unknown algorithm).
std::vector<MetricDoc> algorithm_metrics(const std::string& algo);

// docs/metrics.md's table of the algorithms' own numbers: a header and one row per declared
// metric, by algorithm name ("| `mean_q` | value (h-space) | r2d2 | mean Q of ... |").
std::string algorithm_metrics_markdown();

// `page` (docs/metrics.md's text) with the lines between its markers "<!-- algorithm metrics"
// and "<!-- end of algorithm metrics -->" replaced by algorithm_metrics_markdown(). Throws
// std::invalid_argument when a marker is missing.
std::string with_algorithm_metrics(const std::string& page);

// One line per algorithm with an export: "  NAME: SIGNATURE\n" (its lines after the first indented).
std::string export_signatures();

}  // namespace moonseed::engine
