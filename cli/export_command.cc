// `moonseed export RUN_DIR [--checkpoint N] -o FILE.pt` (docs/export.md): the
// run's trained net as a TorchScript module for PyTorch users. The config is
// the run's config.lua, the env's spec is described as the learner describes
// it, the weights come from one checkpoint (the newest by default), and
// models/export.h writes the module.
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "base/text.h"
#include "cli/checkpoint_choice.h"
#include "cli/commands.h"
#include "engine/learner/checkpoint.h"
#include "engine/learner/learner.h"
#include "engine/r2d2/r2d2_core.h"
#include "engine/run/run_directory.h"
#include "envs/spec.h"
#include "models/export.h"
#include "scripts/experiment_loader.h"

namespace moonseed::cli {
namespace {

const char* kHelp =
    "usage: moonseed export RUN_DIR [--checkpoint N|best] -o FILE.pt\n"
    "\n"
    "Writes the run's trained net as a TorchScript module that PyTorch loads with\n"
    "torch.jit.load(\"FILE.pt\") and calls on a batch of raw env observations:\n"
    "  vtrace: forward(obs) -> (logits, value), or (mean, value) for box actions\n"
    "  r2d2:   forward(obs, prev_action, prev_reward, (h, c)) -> (q_values, (h, c))\n"
    "The spec (env, spaces, preprocessing, model, checkpoint) is in the file as\n"
    "moonseed/spec.json. See docs/export.md.\n"
    "\n"
    "  --checkpoint N   the checkpoint RUN_DIR/checkpoints/ckpt-N.pt, N its optimizer\n"
    "                   step, or best: RUN_DIR/best.pt (default: the newest)\n"
    "  -o, --output F   the file to write (required); written whole or not at all\n";

struct ExportArgs {
  std::string run_dir;
  std::string output;
  CheckpointChoice checkpoint;
};

ExportArgs parse(const Args& args) {
  ExportArgs out;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    const auto value = [&]() -> const std::string& {
      if (i + 1 >= args.size()) throw std::invalid_argument(a + " needs a value");
      return args[++i];
    };
    if (a == "-o" || a == "--output") {
      out.output = value();
    } else if (a == "--checkpoint") {
      out.checkpoint = parse_checkpoint_choice(value());
    } else if (!a.empty() && a[0] == '-') {
      throw std::invalid_argument("unknown option '" + a + "' (see moonseed export --help)");
    } else if (out.run_dir.empty()) {
      out.run_dir = strip_slash(a);
    } else {
      throw std::invalid_argument("one RUN_DIR only, got '" + out.run_dir + "' and '" + a + "'");
    }
  }
  if (out.run_dir.empty()) throw std::invalid_argument("no RUN_DIR given (see moonseed export --help)");
  if (out.output.empty()) throw std::invalid_argument("no output file given: add -o FILE.pt");
  return out;
}

}  // namespace

int export_command(const Args& args) {
  if (args.empty() || wants_help(args)) {
    std::fputs(kHelp, args.empty() ? stderr : stdout);
    return args.empty() ? 2 : 0;
  }
  const ExportArgs a = parse(args);
  const engine::RunDirectory dir = engine::RunDirectory::open(a.run_dir);
  const std::string checkpoint = pick_checkpoint(dir, a.checkpoint);
  const engine::ExperimentConfig config = scripts::load_experiment(dir.config_path());
  // As the learner describes it: a plugin or Python env by a child process.
  const envs::EnvSpec spec = engine::model_env_spec(config);

  models::ExportOrigin origin{dir.run_id(), std::filesystem::path(checkpoint).filename().string(), -1};
  models::Exported exported;
  if (config.algo == "vtrace") {
    models::PolicyNet net(config.model, spec);
    origin.step = engine::load_checkpoint_model(checkpoint, *net).optimizer_steps;
    exported = models::export_policy_net(*net, config.model, spec, origin);
  } else if (config.algo == "r2d2") {
    models::QNet net(engine::r2d2_net_spec(config), spec);
    origin.step = engine::load_checkpoint_model(checkpoint, *net, "online").optimizer_steps;
    exported = models::export_q_net(*net, spec, origin);
  } else {
    throw std::runtime_error("algo \"" + config.algo + "\" has no export (known: vtrace, r2d2)");
  }
  models::save_exported(exported, a.output);
  std::cout << "moonseed export: wrote " << a.output << " (" << config.algo << " on " << spec.id << ", "
            << origin.checkpoint << " of " << dir.run_id() << ")\n";
  return 0;
}

}  // namespace moonseed::cli
