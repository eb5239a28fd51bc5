// A checkpoint written onto a disk that fills: a real file size limit
// (RLIMIT_FSIZE), in a child process.
#include <signal.h>
#include <sys/resource.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "engine/learner/checkpoint.h"
#include "tests/engine/learner/checkpoint_fixtures.h"
#include "engine/learner/optimizer.h"
#include "models/policy_net.h"

namespace moonseed::engine {
namespace {

namespace fs = std::filesystem;

using testing::small_net;
using testing::spec;

// A TempDir named after this file.
struct TempDir : testing::TempDir {
  TempDir() : testing::TempDir("moonseed-ckpt-full-disk") {}
};

// Saves under a file size limit the checkpoint does not fit in; 0 when that is
// a CheckpointError (printed) and no file of it is left.
int save_past_a_file_size_limit(const TempDir& tmp) {
  models::PolicyNet net = small_net();
  auto opt = make_optimizer(OptimizerConfig{}, net->parameters());
  ::signal(SIGXFSZ, SIG_IGN);  // past the limit, a write is short or fails with EFBIG, as on a full disk
  const rlimit limit{2000, RLIM_INFINITY};
  if (::setrlimit(RLIMIT_FSIZE, &limit) != 0) return 2;
  try {
    save_checkpoint(tmp.path("ckpt-1.pt"), *net, *opt, Counters{});
  } catch (const CheckpointError& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return fs::exists(tmp.path("ckpt-1.pt")) || fs::exists(tmp.path("ckpt-1.pt.partial")) ? 1 : 0;
  }
  return 3;
}

// LibTorch's zip writer threw from its destructor after a failed write:
// std::terminate, SIGABRT. In a child process: the limit would hit the test's
// own files too.
TEST(CheckpointOnAFullDiskDeathTest, AFailedWriteIsACheckpointErrorAndLeavesNoFile) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  TempDir tmp;
  EXPECT_EXIT(std::exit(save_past_a_file_size_limit(tmp)), ::testing::ExitedWithCode(0),
              "cannot write checkpoint .*ckpt-1.pt.partial: File too large");
}

}  // namespace
}  // namespace moonseed::engine
