// The proof that an algorithm is one folder (docs/architecture.md "Adding an algorithm"): the toy
// algorithm, defined in tests/algos/toy/ alone and linked into this test only, is known to the
// rest of Moonseed through its registrations. A script selects it and its section, and calls its
// Lua helper; the loader validates its fields by its own rows; a real Learner trains it from a
// real socket; its checkpoint restores, exports and evaluates.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <variant>
#include <vector>

#include <gtest/gtest.h>

#include "engine/config/schema.h"
#include "engine/config/section_registry.h"
#include "engine/learner/agent_registry.h"
#include "engine/learner/algorithms.h"
#include "rpc/client.h"
#include "scripts/api/config_error.h"
#include "scripts/loader/experiment_loader.h"
#include "tests/algos/toy/toy_config.h"
#include "tests/engine/learner/served.h"

namespace moonseed::toy {
namespace {

namespace fs = std::filesystem;

class ToyAlgorithm : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("moonseed-toy-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // An experiment selecting the toy algorithm, its section's fields written as `toy_fields`.
  std::string script(const std::string& toy_fields) {
    const std::string path = (dir_ / "toy.lua").string();
    std::ofstream(path) << "local ms = require \"moonseed\"\n"
                           "return ms.experiment {\n"
                           "  name = \"toy\",\n"
                           "  algo = \"toy\",\n"
                           "  env = { id = \"CartPole-v1\" },\n"
                           "  model = ms.mlp { hidden = { 8 } },\n"
                           "  toy = ms.toy { " << toy_fields << " },\n"
                           "  topology = { actors = 1, envs_per_actor = 2, local_actors = 0 },\n"
                           "  learner = { batch = 1, unroll = 2, queue_capacity = 4 },\n"
                           "}\n";
    return path;
  }

  fs::path dir_;
};

TEST_F(ToyAlgorithm, IsKnownToTheRegistriesTheSchemaAndTheConfigDocs) {
  const std::vector<std::string> algos = engine::registered_algorithms();
  EXPECT_NE(std::find(algos.begin(), algos.end(), "toy"), algos.end());
  ASSERT_NE(engine::find_section("toy"), nullptr);
  const std::string docs = engine::schema_markdown();
  EXPECT_NE(docs.find("| `toy.scale` | number | `1` | [0.001, 100] | hot | weight of the value regression |"),
            std::string::npos);
  EXPECT_NE(docs.find("toy (a test's value regression)"), std::string::npos) << "the algo row's list";
  EXPECT_NE(engine::export_signatures().find("  toy: forward(obs)"), std::string::npos);
  EXPECT_NE(engine::algorithm_metrics_markdown().find("| `toy_value_loss` | loss | toy | "), std::string::npos)
      << "the metrics table of docs/metrics.md";
}

TEST_F(ToyAlgorithm, AScriptSelectsItAndCallsItsLuaHelperAndItsRowsValidateIt) {
  // ms.toy tags the section and carries the folder's helper, ms.toy.double.
  const engine::ExperimentConfig config = scripts::load_experiment(script("scale = ms.toy.double(1.25)"));
  EXPECT_EQ(config.algo, "toy");
  EXPECT_DOUBLE_EQ(config.section<ToyConfig>().scale, 2.5);
  EXPECT_DOUBLE_EQ(config.section<ToyConfig>().gamma, 0.9);
  try {
    scripts::load_experiment(script("scale = 1000"));
    FAIL() << "toy.scale = 1000 was accepted";
  } catch (const scripts::ConfigError& e) {
    const std::string text = e.what();
    EXPECT_NE(text.find("toy.scale"), std::string::npos) << text;
    EXPECT_NE(text.find("[0.001, 100]"), std::string::npos) << text;
  }
}

// Steps both envs of a connected client once (zero observations) and waits for the actions.
void step(rpc::Client& client, uint64_t seq, bool first) {
  rpc::StepBatch b;
  b.seq = seq;
  b.count = 2;
  b.observations.assign(2 * 4 * sizeof(float), 0);
  b.rewards.assign(2, first ? 0.f : 1.f);
  b.flags.assign(2, first ? envs::kFirst : 0);
  client.send(b);
  for (;;) {
    rpc::Incoming in = client.receive(std::chrono::seconds(10));
    if (std::holds_alternative<rpc::ActionBatch>(in)) return;
    ASSERT_TRUE(std::holds_alternative<rpc::ConfigUpdate>(in)) << "variant " << in.index();
  }
}

TEST_F(ToyAlgorithm, ALearnerTrainsItAndItsCheckpointRestoresExportsAndEvaluates) {
  engine::ExperimentConfig config = scripts::load_experiment(script("scale = 2"));
  const std::string checkpoint = (dir_ / "ckpt.pt").string();
  uint64_t trained_hash = 0;
  {
    engine::Served s(config);
    rpc::Client client = rpc::Client::connect(s.address, std::chrono::seconds(5));
    client.hello(rpc::Hello{});
    engine::LearnerStats stats;
    for (uint64_t seq = 1; seq < 400 && stats.optimizer_steps < 3; ++seq) {
      step(client, seq, seq == 1);
      stats = s.learner.stats();
    }
    ASSERT_GE(stats.optimizer_steps, 3);
    EXPECT_TRUE(std::isfinite(stats.metric("toy_value_loss")));
    EXPECT_GT(stats.metric("toy_value_loss"), 0);
    const std::vector<engine::MetricDoc> declared = engine::algorithm_metrics("toy");
    for (const engine::Metric& m : stats.agent_metrics) {
      EXPECT_TRUE(std::any_of(declared.begin(), declared.end(),
                              [&](const engine::MetricDoc& d) { return m.name == d.name; }))
          << m.name;
    }
    client.close();
    s.learner.stop();
    s.learner.save_checkpoint(checkpoint, 1.0);
    trained_hash = s.learner.weights_hash();
  }
  engine::Learner restored(config, "restored");
  const engine::Counters counters = restored.restore(checkpoint);
  EXPECT_GE(counters.optimizer_steps, 3);
  EXPECT_EQ(restored.weights_hash(), trained_hash);

  const envs::EnvSpec spec = envs::make_env("CartPole-v1")->spec();
  models::ExportOrigin origin;
  const models::Exported exported = engine::export_net(config, spec, checkpoint, origin);
  EXPECT_EQ(origin.step, counters.optimizer_steps);
  EXPECT_NE(exported.spec_json.find("\"algo\": \"toy\""), std::string::npos) << exported.spec_json;
  EXPECT_EQ(engine::eval_acting(config).text, "sampled by the toy");
  const engine::Evaluation evaluation = restored.evaluate(2, 7, engine::eval_acting(config).greedy, 50);
  EXPECT_EQ(evaluation.returns.size(), 2u);
}

}  // namespace
}  // namespace moonseed::toy
