// `moonseed run` with env.python (docs/python-actors.md): the learner describes the Python env in
// a child process, starts Python actors itself (the interpreter the project uses, the package and
// the script's directory on PYTHONPATH) and trains on them like on C++ actors. The shipped Catch
// example learns; CartPole (tests/python/numpy_envs.py, found through env.python_path) learns; a
// C++ moonseed-actor that joins a Python run is told to use a Python actor; and what cannot be
// described (an unimportable module, a factory that raises) refuses the script at load time.
#include <signal.h>
#include <stdlib.h>

#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/e2e/process.h"

namespace moonseed::testing {
namespace {

const std::string kBinary = MOONSEED_BINARY;
const std::string kCatchScript = std::string(MOONSEED_SOURCE_DIR) + "/examples/python_env/catch.lua";
const std::string kCartPoleScript = std::string(MOONSEED_SOURCE_DIR) + "/examples/cartpole_vtrace.lua";
const std::string kTestEnvs = std::string(MOONSEED_SOURCE_DIR) + "/tests/python";

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(PythonEnvRun, TheCatchExampleTrainsFarAboveRandomOnPythonActors) {
  // Random play scores about -0.6; the run stops as soon as the mean return passes 0.5.
  TrainingRun run(kCatchScript, {"log.interval_s=0.5", "stop.return_mean=0.5", "stop.frames=3000000"},
                  "moonseed-python-catch");
  ChildProcess learner(run.args({}), run.log);
  ASSERT_EQ(learner.wait(300), std::optional<int>(0)) << read_file(run.log);
  const std::string log = read_file(run.log);
  EXPECT_TRUE(contains(log, "Catch-v0 (Python: catch:make_env), 2 Python actors x 16 envs")) << log;
  EXPECT_TRUE(contains(log, "stopped: return_mean")) << log;
  const std::vector<MetricsRow> rows = run.metrics();
  EXPECT_GE(last(rows, "return_mean"), 0.3) << log;
  EXPECT_LT(last(rows, "frames"), 3000000) << "stopped on frames, not on the return";
  // The actors were Python processes: their logs say so.
  EXPECT_TRUE(contains(read_file(run.run_dir() + "/actors/actor-0.log"), "moonseed actor")) << log;
}

TEST(PythonEnvRun, CartPoleLearnsThroughPythonActorsFoundOnEnvPythonPathDescribedOnce) {
  // tests/python/numpy_envs.py is not beside the script: env.python_path points at it.
  TrainingRun run(kCartPoleScript,
                  {"log.interval_s=0.5", "env.python=\"numpy_envs:logged_cartpole\"",
                   "env.python_path=\"" + kTestEnvs + "\"", "env.id=\"NumpyCartPole-v1\"", "stop.return_mean=100",
                   "stop.frames=2000000"},
                  "moonseed-python-cartpole");
  // The factory notes each call: in the description child, or in an actor.
  const std::string factory_log = run.runs_dir + "/factory.log";
  ::setenv("MOONSEED_TEST_FACTORY_LOG", factory_log.c_str(), 1);
  ChildProcess learner(run.args({}), run.log);
  ASSERT_EQ(learner.wait(400), std::optional<int>(0)) << read_file(run.log);
  ::unsetenv("MOONSEED_TEST_FACTORY_LOG");
  const std::string log = read_file(run.log);
  EXPECT_TRUE(contains(log, "stopped: return_mean")) << log;
  // Random play lasts about 22 steps.
  EXPECT_GE(last(run.metrics(), "return_mean"), 60) << log;
  // The loader describes the env; the learner reuses that description instead of a second child.
  const std::string calls = read_file(factory_log);
  size_t describes = 0;
  for (size_t at = calls.find("describe"); at != std::string::npos; at = calls.find("describe", at + 1)) ++describes;
  EXPECT_EQ(describes, 1u) << calls;
  EXPECT_TRUE(contains(calls, "actor\n")) << calls;
}

TEST(PythonEnvRun, AMoonseedActorJoiningAPythonRunIsToldToRunAPythonActor) {
  TrainingRun run(kCatchScript, {"log.interval_s=0.5", kUntilStopped, "topology.local_actors=1"},
                  "moonseed-python-cpp-actor");
  ChildProcess learner(run.args({}), run.log);
  const std::string address = run.address_once_connected(1, 60);
  ASSERT_FALSE(address.empty()) << read_file(run.log);
  const std::string remote_log = run.runs_dir + "/remote.log";
  ChildProcess remote({kBinary, "actor", "--connect", address}, remote_log);
  EXPECT_EQ(remote.wait(60), std::optional<int>(1)) << read_file(remote_log);
  EXPECT_TRUE(contains(read_file(remote_log), "is a Python env (env.python = \"catch:make_env\"): it runs only in "
                                              "Python actors (python3 -m moonseed.actor)"))
      << read_file(remote_log);
  EXPECT_TRUE(learner.running());
  learner.signal(SIGTERM);
  EXPECT_EQ(learner.wait(60), std::optional<int>(0)) << read_file(run.log);
}

// The script is refused before any run directory exists, with the Python side's words.
std::string refusal(const std::vector<std::string>& overrides) {
  TrainingRun run(kCatchScript, overrides, "moonseed-python-refused");
  ChildProcess learner(run.args({}), run.log);
  EXPECT_EQ(learner.wait(120), std::optional<int>(1)) << read_file(run.log);
  EXPECT_EQ(run.run_dir(), "");
  return read_file(run.log);
}

TEST(PythonEnvRun, AnEnvThatCannotBeDescribedRefusesTheScriptWithPythonsReason) {
  const std::string missing = refusal({"env.python=\"no_such_module:make_env\""});
  EXPECT_TRUE(contains(missing, "env.python = \"no_such_module:make_env\": moonseed actor: --env "
                                "no_such_module:make_env: cannot import no_such_module: ModuleNotFoundError"))
      << missing;
  // Catch refuses a grid of one column in its constructor.
  const std::string raised = refusal({"env.options={rows=10, columns=1}"});
  EXPECT_TRUE(contains(raised, "env.python = \"catch:make_env\": moonseed actor: making env 0 failed: ValueError: "
                               "Catch needs rows >= 3 and columns >= 2, got 10 x 1"))
      << raised;
  const std::string both = refusal({"env.plugin=\"libcatch.so\""});
  EXPECT_TRUE(contains(both, "env.plugin belongs to another kind of env; set one of them")) << both;
}

TEST(RunHelp, ListsEveryConfigFieldOfDocsConfigMdWithItsDefault) {
  const std::string out_path = make_temp_dir("moonseed-run-help") + "/help.txt";
  ChildProcess help({kBinary, "run", "--help"}, out_path);
  ASSERT_EQ(help.wait(60), std::optional<int>(0));
  const std::string text = read_file(out_path);
  EXPECT_TRUE(contains(text, "\n  env.python = \"\"  (restart) a Python env factory, MODULE:FUNCTION")) << text;
  EXPECT_TRUE(contains(text, "\n  env.python_path = \"\"  (restart) ")) << text;
  // Every row of docs/config.md's table (generated from the same schema) is in the help.
  const std::string table = read_file(std::string(MOONSEED_SOURCE_DIR) + "/docs/config.md");
  int fields = 0;
  for (size_t at = table.find("\n| `"); at != std::string::npos; at = table.find("\n| `", at + 1)) {
    const size_t start = at + 4, end = table.find('`', start);
    const std::string field = table.substr(start, end - start);
    if (field == "reward_shaping") continue;  // a function, not a schema row
    ++fields;
    EXPECT_TRUE(contains(text, "\n  " + field + " = ")) << field;
  }
  EXPECT_GT(fields, 50);
}

}  // namespace
}  // namespace moonseed::testing
