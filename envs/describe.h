// The spec of any env source, for the learner, which never runs user env code in its own
// process (docs/own-envs-design.md "The learner learns the spec before it builds the model").
//
// Built-in envs are made in process. A plugin env is described by a child process,
// `moonseed-actor describe-env ...`, which loads the plugin, creates one env, resets it with
// seed 0 and prints the spec and that first observation as text (description_text); the
// parent reads at most kMaxDescriptionBytes within describe_timeout_s(). A crash (a signal), a
// timeout or a refusal is a std::invalid_argument naming the file and saying why. A Python env
// (files.python) is described the same way by `python3 -m moonseed.actor --env MODULE:FUNCTION
// --describe` (python_actor_command), whose text comes from the same C++ code.
//
// The child is the `moonseed-actor` beside the running binary (/proc/self/exe), or the one
// $MOONSEED_ACTOR_BINARY names (tests, unusual installs); the Python package is the
// `python/` directory beside that binary (a build directory's BUILD/python).
//
// Thread-safety: free functions; describe_env may run on any thread (it waits for its child).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "envs/env.h"
#include "envs/spec.h"

namespace moonseed::envs {

constexpr double kDescribeTimeoutS = 30;
// $MOONSEED_DESCRIBE_TIMEOUT_S when it is a positive number of seconds (an env that takes longer to
// build, e.g. one that loads large assets), else kDescribeTimeoutS.
double describe_timeout_s();
constexpr size_t kMaxDescriptionBytes = size_t{64} << 20;

struct EnvDescription {
  EnvSpec spec;
  // What reset(seed 0) wrote: spec.observation.byte_size() bytes (the loader's reward-shaping trial).
  std::vector<uint8_t> first_observation;
};

// The env's description; std::invalid_argument as make_env, or naming the plugin file.
EnvDescription describe_env(const std::string& id, const EnvOptions& options, const EnvFiles& files);

// In this process, whatever the source (what the child runs): make_env, then reset(seed 0).
EnvDescription describe_here(const std::string& id, const EnvOptions& options, const EnvFiles& files);

// The Python interpreter Moonseed runs: $MOONSEED_PYTHON when set, else Debian's /usr/bin/python3
// (never the first python3 on PATH: on some machines that one has no numpy). cmake/python.cmake
// applies the same rule to the tests.
std::string python_interpreter();

// How to start a Python actor for files.python: argv = {interpreter, "-m", "moonseed.actor", "--env",
// MODULE:FUNCTION}, and NAME=VALUE pairs to add to the inherited environment: PYTHONPATH = the
// moonseed package's directory, files.python_path, then any PYTHONPATH inherited.
struct PythonCommand {
  std::vector<std::string> argv;
  std::vector<std::string> environment;
};
PythonCommand python_actor_command(const EnvFiles& files);

// The text form the child prints, and back; parse_description throws std::invalid_argument
// on text that is not one (its spec gets `id`).
std::string description_text(const EnvDescription& description);
EnvDescription parse_description(const std::string& text, const std::string& id);

// The arguments after `moonseed-actor` that describe this env: "describe-env --id ID ...".
std::vector<std::string> describe_arguments(const std::string& id, const EnvOptions& options, const EnvFiles& files);
// Reads them back (the arguments after "describe-env"); std::invalid_argument on others.
void parse_describe_arguments(const std::vector<std::string>& args, std::string* id, EnvOptions* options,
                              EnvFiles* files);

}  // namespace moonseed::envs
