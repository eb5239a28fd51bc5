// An experiment survives being written back and read again: every example in
// examples/ through to_lua (what config.lua and --resume use) and through
// ms.load_experiment (a script that returns what it loaded), schedules and
// reward_shaping included. A new example is covered without touching this file.
#include <algorithm>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "engine/config/schema.h"
#include "scripts/loader/experiment_loader.h"
#include "tests/scripts/temp_dir.h"

namespace moonseed::scripts {
namespace {

using testing::TempDir;

std::vector<std::string> examples() {
  std::vector<std::string> out;
  for (const auto& entry : std::filesystem::directory_iterator(std::string(MOONSEED_SOURCE_DIR) + "/examples")) {
    if (entry.path().extension() == ".lua") out.push_back(entry.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// A script that returns what ms.load_experiment gives for `path`.
std::string reloading_script(const std::string& path) {
  return "local ms = require 'moonseed'\nreturn ms.load_experiment(\"" + path + "\")\n";
}

TEST(ConfigRoundTrip, ThereAreExamplesWithSchedules) {
  const std::vector<std::string> all = examples();
  ASSERT_GE(all.size(), 5u);
  EXPECT_TRUE(std::any_of(all.begin(), all.end(), [](const std::string& p) {
    return !load_experiment(p).schedules.empty();
  }));
}

// Each example, loaded, then loaded again from the script `rewrite` writes for it: the same experiment.
void expect_every_example_reads_back(
    const std::function<std::string(const std::string&, const engine::ExperimentConfig&)>& rewrite) {
  for (const std::string& example : examples()) {
    SCOPED_TRACE(example);
    const engine::ExperimentConfig original = load_experiment(example);
    const engine::ExperimentConfig again = load_experiment(rewrite(example, original));
    EXPECT_EQ(engine::changed_fields(original, again), std::vector<std::string>{}) << to_lua(original);
    EXPECT_EQ(again.schedules, original.schedules);
  }
}

TEST(ConfigRoundTrip, EveryExampleReadsBackEqualFromToLua) {
  TempDir dir;
  expect_every_example_reads_back(
      [&](const std::string&, const engine::ExperimentConfig& c) { return dir.write("config.lua", to_lua(c)); });
}

TEST(ConfigRoundTrip, EveryExampleReadsBackEqualFromMsLoadExperiment) {
  TempDir dir;
  expect_every_example_reads_back([&](const std::string& example, const engine::ExperimentConfig&) {
    return dir.write("again.lua", reloading_script(example));
  });
}

TEST(ConfigRoundTrip, MsLoadExperimentKeepsRewardShapingAndSchedules) {
  TempDir dir;
  const std::string script = dir.write("shaped.lua",
                                       "local ms = require 'moonseed'\n"
                                       "return ms.experiment {\n"
                                       "  optimizer = { lr = ms.linear { from = 1e-3, to = 1e-4, frames = 1e6 } },\n"
                                       "  reward_shaping = function(n, reward)\n"
                                       "    for i = 0, n - 1 do reward[i] = 0.5 * reward[i] end\n"
                                       "  end,\n"
                                       "}\n");
  const engine::ExperimentConfig original = load_experiment(script);
  ASSERT_FALSE(original.reward_shaping.source.empty());
  ASSERT_EQ(original.schedules.size(), 1u);
  const engine::ExperimentConfig again = load_experiment(dir.write("again.lua", reloading_script(script)));
  EXPECT_EQ(engine::changed_fields(original, again), std::vector<std::string>{});
  // The function keeps its own file and line, so errors in actors still point at shaped.lua:4.
  EXPECT_EQ(again.reward_shaping, original.reward_shaping);
  EXPECT_EQ(again.reward_shaping.first_line, 4);
  EXPECT_EQ(again.schedules, original.schedules);
  // And through config.lua, as a run directory keeps it.
  const engine::ExperimentConfig written = load_experiment(dir.write("config.lua", to_lua(again)));
  EXPECT_EQ(engine::changed_fields(original, written), std::vector<std::string>{});
}

}  // namespace
}  // namespace moonseed::scripts
