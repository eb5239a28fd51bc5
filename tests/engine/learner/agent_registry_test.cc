// What the algorithms register beside their agents (engine/learner/agent_registry.h): how their
// evaluation envs act, their export and its help, asked by name.
#include "engine/learner/agent_registry.h"

#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "engine/r2d2/config/r2d2_config.h"
#include "engine/vtrace/config/vtrace_config.h"
#include "envs/env.h"

namespace moonseed::engine {
namespace {

ExperimentConfig with_algo(const std::string& algo) {
  ExperimentConfig config;
  config.algo = algo;
  config.topology.actors = 1;
  config.topology.envs_per_actor = 2;
  config.model.hidden = {8};
  return config;
}

TEST(AgentRegistry, EvaluationActsAsEachAlgorithmSays) {
  ExperimentConfig vtrace = with_algo("vtrace");
  EXPECT_FALSE(eval_acting(vtrace).greedy);
  EXPECT_EQ(eval_acting(vtrace).text, "sampled");
  vtrace.section<VTraceConfig>().eval_greedy = true;
  EXPECT_TRUE(eval_acting(vtrace).greedy);
  EXPECT_EQ(eval_acting(vtrace).text, "greedy");

  ExperimentConfig r2d2 = with_algo("r2d2");
  r2d2.section<R2d2Config>().eval_epsilon = 0.01;
  EXPECT_FALSE(eval_acting(r2d2).greedy);
  EXPECT_EQ(eval_acting(r2d2).text, "epsilon 0.01");
}

TEST(AgentRegistry, ExportHelpHasALinePerAlgorithmWithItsLaterLinesIndented) {
  const std::string help = export_signatures();
  EXPECT_NE(help.find("  r2d2: forward(obs, prev_action, prev_reward, (h, c)) -> (q_values, (h, c))\n"),
            std::string::npos) << help;
  EXPECT_NE(help.find("  vtrace: forward(obs) -> (logits, value)"), std::string::npos) << help;
  EXPECT_NE(help.find("\n          recurrent: forward("), std::string::npos) << help;
}

TEST(AgentRegistry, AnAlgoWithoutAnExportIsRefusedNamingThoseThatHaveOne) {
  const envs::EnvSpec spec = envs::make_env("CartPole-v1")->spec();
  models::ExportOrigin origin;
  try {
    export_net(with_algo("nonesuch"), spec, "/nonexistent.pt", origin);
    FAIL() << "exported an unknown algorithm";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()), "algo \"nonesuch\" has no export (algorithms with one: appo, r2d2, vtrace)");
  }
}

TEST(AgentRegistry, ExportBuildsTheAlgorithmsNetFromItsCheckpoint) {
  const envs::EnvSpec spec = envs::make_env("CartPole-v1")->spec();
  const std::string dir = testing::TempDir() + "/agent_registry_export";
  std::filesystem::create_directories(dir);
  for (const std::string algo : {"vtrace", "r2d2"}) {
    ExperimentConfig config = with_algo(algo);
    if (algo == "r2d2") {
      config.model.kind = "layers";
      config.model.layers = {{"linear", 8}, {"relu"}, {"lstm", 8}};
    }
    std::unique_ptr<Agent> agent = make_agent(config, spec, torch::kCPU);
    const std::string path = dir + "/" + algo + ".pt";
    Counters counters;
    counters.optimizer_steps = 17;
    agent->save(path, counters);
    models::ExportOrigin origin;
    const models::Exported exported = export_net(config, spec, path, origin);
    EXPECT_EQ(origin.step, 17) << algo;
    EXPECT_NE(exported.spec_json.find("\"" + algo + "\""), std::string::npos) << exported.spec_json;
    agent->close();
  }
}

// docs/metrics.md's table of the algorithms' numbers is what their registrations declare.
TEST(AgentRegistry, TheMetricsPageListsWhatEveryAlgorithmDeclares) {
  std::stringstream page;
  page << std::ifstream(std::string(MOONSEED_SOURCE_DIR) + "/docs/metrics.md").rdbuf();
  EXPECT_EQ(with_algorithm_metrics(page.str()), page.str())
      << "docs/metrics.md differs from the registrations: cmake --build build --target metrics_docs";
  for (const std::string& algo : {"vtrace", "appo", "r2d2"}) EXPECT_FALSE(algorithm_metrics(algo).empty()) << algo;
  EXPECT_NE(algorithm_metrics_markdown().find("| `clip_fraction` | fraction (0 to 1) | appo | "), std::string::npos);
  EXPECT_THROW(with_algorithm_metrics("no markers"), std::invalid_argument);
}

}  // namespace
}  // namespace moonseed::engine
