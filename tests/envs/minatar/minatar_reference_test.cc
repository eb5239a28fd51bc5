// Every MinAtar game against the `minatar` package 1.0.15: the trajectories in data/ are the
// package's answers (observations, rewards, terminals) to recorded actions, written by
// make_reference_trajectories.py (format there); this test replays the actions and compares
// every step. The data cover each game's late phases (the "# covers:" line of each file).
#include <gtest/gtest.h>

#include <cctype>
#include <cstdint>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "envs/env.h"
#include "envs/minatar/minatar_env.h"

namespace moonseed::envs {
namespace {

std::string data_file(const std::string& game) {
  std::string file;
  for (char c : game) {
    if (std::isupper(static_cast<unsigned char>(c)) && !file.empty()) file += '_';
    file += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return std::string(MOONSEED_SOURCE_DIR) + "/tests/envs/minatar/data/" + file + ".txt";
}

// Applies a CELLS field (flat indices of changed cells, 3 hex digits each, '.' for none).
void apply_changes(const std::string& cells, std::vector<uint8_t>& obs) {
  if (cells == ".") return;
  ASSERT_EQ(cells.size() % 3, 0u) << cells;
  for (size_t at = 0; at < cells.size(); at += 3) {
    const size_t index = std::stoul(cells.substr(at, 3), nullptr, 16);
    ASSERT_LT(index, obs.size());
    obs[index] ^= 1;
  }
}

// "row 3, column 4, channel 1" for each cell where the observations differ.
std::string differences(const std::vector<uint8_t>& expected, const std::vector<uint8_t>& actual,
                        int channels) {
  std::ostringstream out;
  for (size_t i = 0; i < expected.size(); ++i) {
    if (expected[i] == actual[i]) continue;
    const int cell = static_cast<int>(i) / channels;
    out << " (row " << cell / 10 << ", column " << cell % 10 << ", channel "
        << static_cast<int>(i) % channels << ": package " << int(expected[i]) << ", ours "
        << int(actual[i]) << ")";
  }
  return out.str();
}

struct Replay {
  int steps = 0, episodes = 0, envs = 0;
};

Replay replay_file(const std::string& path) {
  Replay replay;
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << "cannot read " << path;
  std::unique_ptr<Env> env;
  std::vector<uint8_t> expected, actual;
  int channels = 0;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    std::string kind;
    fields >> kind;
    const std::string where = path + ":" + std::to_string(number);
    if (kind == "env") {
      std::string id;
      double sticky = 0, ramping = 0;
      fields >> id >> sticky >> ramping;
      env = make_env(id, {{"sticky_action_prob", sticky}, {"difficulty_ramping", ramping}});
      const size_t bytes = static_cast<size_t>(env->spec().observation.byte_size());
      expected.assign(bytes, 0);
      actual.assign(bytes, 0);
      channels = static_cast<int>(env->spec().observation.shape[2]);
      ++replay.envs;
    } else if (kind == "reset") {
      std::string seed, cells;
      fields >> seed >> cells;
      EXPECT_TRUE(env != nullptr) << where;
      if (env == nullptr) return replay;
      env->reset(seed == "-" ? std::nullopt : std::optional<uint64_t>(std::stoull(seed)),
                 actual.data());
      std::fill(expected.begin(), expected.end(), 0);
      apply_changes(cells, expected);
      EXPECT_EQ(actual, expected) << where << differences(expected, actual, channels);
      if (actual != expected) return replay;
      ++replay.episodes;
    } else if (kind == "step") {
      int32_t action = 0;
      double reward = 0;
      int terminal = 0;
      std::string cells;
      fields >> action >> reward >> terminal >> cells;
      const StepResult result = env->step(&action, actual.data());
      apply_changes(cells, expected);
      const bool same = actual == expected && result.reward == static_cast<float>(reward) &&
                        result.terminated == (terminal == 1) && !result.truncated;
      EXPECT_TRUE(same) << where << ": action " << action << ", reward package " << reward
                        << " ours " << result.reward << ", terminal package " << terminal
                        << " ours " << result.terminated << differences(expected, actual, channels);
      if (!same) return replay;
      ++replay.steps;
    } else {
      ADD_FAILURE() << where << ": unknown record \"" << kind << "\"";
      return replay;
    }
  }
  return replay;
}

class MinAtarReference : public ::testing::TestWithParam<std::string> {};

TEST_P(MinAtarReference, EveryStepEqualsThePackages) {
  const Replay replay = replay_file(data_file(GetParam()));
  // Each file holds several envs (v0 and v1, sticky actions and ramping on and off), seeded and
  // unseeded resets, and long played episodes.
  EXPECT_GE(replay.envs, 2);
  EXPECT_GE(replay.episodes, 3);
  EXPECT_GE(replay.steps, 2000);
}

INSTANTIATE_TEST_SUITE_P(Games, MinAtarReference, ::testing::ValuesIn(minatar::game_names()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace moonseed::envs
