// What `moonseed export` and `moonseed eval` share before their own work: --help, the command
// line's RUN_DIR and --checkpoint (each command hands its own options to a callback), and the
// run opened from them: the checkpoint chosen (--checkpoint N: RUN_DIR/checkpoints/ckpt-N.pt,
// --checkpoint best: RUN_DIR/best.pt, cli/engine/best_checkpoint.h; the newest by default), its
// config.lua loaded, and the env's spec as the learner's model sees it, described once, by
// the loader.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "cli/common/commands.h"
#include "engine/config/experiment_config.h"
#include "engine/run/run_directory.h"
#include "envs/spec.h"

namespace moonseed::cli {

struct CheckpointChoice {
  int64_t step = -1;  // -1: the newest
  bool best = false;
};

// --checkpoint's value: a step number or "best". Throws std::invalid_argument for anything else.
CheckpointChoice parse_checkpoint_choice(const std::string& text);

// The checkpoint file chosen, checked against its manifest (checkpoint_damage: its own file,
// not R2D2's replay, which export and eval do not read). By default the newest good one, as
// --resume takes it: a line on stderr names each newer one skipped, as interrupted
// (RunDirectory::newest_checkpoint) or damaged (why). Throws std::runtime_error naming the run
// when it has none, none good, no best.pt, or no checkpoint of that step (listing the steps it
// has), and for a damaged one asked for by step or as best: no other is taken in its place,
// the message says why (the file, both CRCs, the size) and lists the others.
std::string pick_checkpoint(const engine::RunDirectory& dir, const CheckpointChoice& choice);

// Checks `checkpoint` against its manifest before it is loaded (engine::verify_checkpoint, with
// its companions or its own file alone): "" when it may be loaded, else why it is damaged. One
// without a manifest (an older build's) may be loaded: a line on stderr says it is unverified.
std::string checkpoint_damage(const std::string& checkpoint, bool companions);

// No arguments: `help` on stderr, 2. --help or -h: `help` on stdout, 0. Otherwise nothing.
std::optional<int> answer_help(const Args& args, const char* help);

// A command's own option: `option` is the argument; `value()` takes the next one as its value
// (std::invalid_argument "OPTION needs a value" when there is none). Returns false for an
// option the command does not know.
using OwnOption = std::function<bool(const std::string& option, const std::function<const std::string&()>& value)>;

struct RunArgs {
  std::string run_dir;
  CheckpointChoice checkpoint;
};

// RUN_DIR (one, required) and --checkpoint; every other "-..." argument goes to `own`.
// std::invalid_argument for an unknown option ("see moonseed COMMAND --help"), a second
// RUN_DIR or none.
RunArgs parse_run_args(const Args& args, const std::string& command, const OwnOption& own);

struct CheckpointRun {
  engine::RunDirectory dir;
  std::string checkpoint;  // the file chosen
  engine::ExperimentConfig config;
  envs::EnvSpec spec;  // engine::model_env_spec's, from the loader's one description
};

// The run directory, its checkpoint (pick_checkpoint), then its config.lua (loaded as
// `moonseed run` loads a script, which describes the env once). Throws what those throw.
CheckpointRun open_checkpoint_run(const RunArgs& args);

}  // namespace moonseed::cli
