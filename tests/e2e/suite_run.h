// One training run that every test of a suite reads (the export and eval suites): the
// suite's SetUpTestSuite makes it with start() and runs it (run_until_it_ends() for a run
// that stops on its own); TearDownTestSuite removes its runs directory. Under ctest each
// test is its own process, so there the run is made once per test; a whole-binary run
// shares it. `Suite` (the derived fixture) gives each suite its own run.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/e2e/process.h"

namespace moonseed::testing {

inline bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// `moonseed ARGS...` to its end, its output in `log`.
inline Finished run_moonseed(const std::vector<std::string>& args, const std::string& log) {
  std::vector<std::string> argv = {MOONSEED_BINARY};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_to_end(argv, log, 240);
}

template <typename Suite>
class SuiteRun : public ::testing::Test {
 protected:
  static TrainingRun& start(const std::string& script, const std::vector<std::string>& fixed,
                            const std::string& prefix) {
    run_ = new TrainingRun(script, fixed, prefix);
    return *run_;
  }
  // For a run that stops on its own (stop.frames): it ends with its final checkpoint.
  static void run_until_it_ends() {
    ChildProcess learner(run_->args({}), run_->log);
    ASSERT_EQ(learner.wait(240), std::optional<int>(0)) << read_file(run_->log);
    taken();
  }
  // Takes the run directory once: tests add directories of their own beside it.
  static void taken() { dir_ = run_->run_dir(); }
  static void TearDownTestSuite() {
    std::error_code ec;
    if (run_ != nullptr) std::filesystem::remove_all(run_->runs_dir, ec);
    delete run_;
    run_ = nullptr;
  }
  // RUN_DIR/checkpoints/ckpt-N.pt with the largest N ("" when there is none).
  static std::string newest_checkpoint() {
    std::string newest;
    int64_t best = -1;
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator(dir_ + "/checkpoints", ec)) {
      const std::string name = entry.path().filename().string();
      if (name.rfind("ckpt-", 0) != 0 || name.size() < 8 || name.substr(name.size() - 3) != ".pt") continue;
      const int64_t step = std::stoll(name.substr(5, name.size() - 8));
      if (step > best) best = step, newest = entry.path().string();
    }
    return newest;
  }

  static inline TrainingRun* run_ = nullptr;
  static inline std::string dir_;
};

}  // namespace moonseed::testing
