// The environment interface every built-in or user environment implements.
//
// Thread-safety: an Env is used by one thread at a time. Envs are cheap to
// create; the actor owns one per slot.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "envs/spec.h"

namespace moonseed::envs {

// What an actor reports with each observation (one byte per env on the wire,
// rpc::StepBatch::flags; the learner's unrolls keep the same bits).
enum StepFlag : uint8_t {
  kFirst = 1,       // the observation is the first of an episode (its reward is 0)
  kTerminated = 2,  // the previous action ended the episode in a terminal state
  kTruncated = 4,   // the previous action hit the time limit
};

// An RGB image: `height` rows of `width` pixels, top row first, 3 bytes (red, green, blue) a
// pixel; rgb.size() == width * height * 3.
struct Image {
  int width = 0;
  int height = 0;
  std::vector<uint8_t> rgb;
};

// An env broke memory that is not its own (a plugin that wrote past its
// observation): unlike a failed step, which ends its episode, this ends the
// process (EnvSet::run lets it through), whose memory can no longer be trusted.
struct EnvCorrupted : std::logic_error {
  using std::logic_error::logic_error;
};

struct StepResult {
  float reward = 0.f;
  bool terminated = false;  // a terminal state of the MDP: no bootstrap
  bool truncated = false;   // time limit or other cut: bootstrap through it
};

class Env {
 public:
  virtual ~Env() = default;

  virtual const EnvSpec& spec() const = 0;

  // Starts an episode. Seeds the env's generator when `seed` is set (as
  // Gymnasium's reset(seed=...)); otherwise continues the current generator.
  // Writes the first observation to `obs` (spec().observation.byte_size() bytes).
  virtual void reset(std::optional<uint64_t> seed, void* obs) = 0;

  // Applies `action` (int32 index for discrete spaces, float32[numel] for
  // boxes) and writes the next observation. After terminated or truncated the
  // caller must reset() before stepping again; stepping anyway is a caller bug.
  virtual StepResult step(const void* action, void* obs) = 0;

  // The complete internal state (physics, step counter, generator), such that
  // set_state(get_state()) on any env of the same id continues identically.
  virtual std::vector<double> get_state() const = 0;
  // Throws std::invalid_argument when `state` has the wrong size for this env.
  virtual void set_state(const std::vector<double>& state) = 0;

  // Draws the current state into `frame` (resized to the env's fixed image size) and returns
  // true; false, leaving `frame` alone, for an env that cannot render (the default). Renders
  // (docs/eval.md): CartPole, MountainCar, Pendulum, the MinAtar games.
  virtual bool render(Image& frame) const {
    (void)frame;
    return false;
  }
};

// Options an env accepts by name (e.g. "max_episode_steps"); unknown names are
// an error, never silently ignored.
using EnvOptions = std::vector<std::pair<std::string, double>>;

// Files an env reads, named by the experiment as strings (env.model): absolute paths, or
// relative to the working directory (the experiment loader resolves the script's relative
// ones). Only MuJoCo/Model-v0 reads `model`; any other id refuses one. `plugin` names a C
// plugin (envs/plugin_env.h, docs/env-plugins.md) that serves the id instead of a built-in env.
// `python` names a Python factory, MODULE:FUNCTION, that Python actors run (docs/python-actors.md);
// make_env refuses it (a Python env never runs in a C++ process), describe_env asks a Python child.
struct EnvFiles {
  std::string model;
  std::string plugin = {};  // "" = a built-in env (a default: EnvFiles{model} stays valid)
  std::string python = {};  // "" = not a Python env
  // Where Python looks for `python`'s module before its own path: absolute directories joined
  // with ':' (env.python_path as the loader resolved it). Not sent to actors.
  std::string python_path = {};

  bool operator==(const EnvFiles& o) const {
    return model == o.model && plugin == o.plugin && python == o.python && python_path == o.python_path;
  }
  bool operator!=(const EnvFiles& o) const { return !(*this == o); }
};

// Creates a built-in env by Gymnasium id, or with `files.plugin` set the plugin's env `id`
// (envs/plugin_env.h: its errors name the file). Throws std::invalid_argument naming
// the id (with the list of known ids), the unknown option, or a file the id does
// not read or cannot load.
std::unique_ptr<Env> make_env(const std::string& id, const EnvOptions& options = {},
                              const EnvFiles& files = {});

// Ids make_env knows, sorted.
std::vector<std::string> env_ids();

}  // namespace moonseed::envs
