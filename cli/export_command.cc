// `moonseed export RUN_DIR [--checkpoint N] -o FILE.pt` (docs/export.md): the
// run's trained net as a TorchScript module for PyTorch users. The config is
// the run's config.lua, the env's spec is described as the learner describes
// it (once, while the config loads: cli/checkpoint_choice.h), the weights come
// from one checkpoint (the newest by default), and models/export.h writes the module.
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <optional>
#include <stdexcept>
#include <string>

#include "cli/checkpoint_choice.h"
#include "cli/commands.h"
#include "engine/learner/checkpoint.h"
#include "engine/r2d2/r2d2_core.h"
#include "engine/run/run_directory.h"
#include "envs/spec.h"
#include "models/export.h"

namespace moonseed::cli {
namespace {

const char* kHelp =
    "usage: moonseed export RUN_DIR [--checkpoint N|best] -o FILE.pt\n"
    "\n"
    "Writes the run's trained net as a TorchScript module that PyTorch loads with\n"
    "torch.jit.load(\"FILE.pt\") and calls on a batch of raw env observations:\n"
    "  vtrace: forward(obs) -> (logits, value), or (mean, value) for box actions;\n"
    "          recurrent: forward(obs, prev_action, prev_reward, (h, c))\n"
    "                     -> (logits or mean, value, (h, c))\n"
    "  r2d2:   forward(obs, prev_action, prev_reward, (h, c)) -> (q_values, (h, c))\n"
    "The spec (env, spaces, preprocessing, model, checkpoint) is in the file as\n"
    "moonseed/spec.json. See docs/export.md.\n"
    "\n"
    "  --checkpoint N   the checkpoint RUN_DIR/checkpoints/ckpt-N.pt, N its optimizer\n"
    "                   step, or best: RUN_DIR/best.pt (default: the newest)\n"
    "  -o, --output F   the file to write (required); written whole or not at all\n";

}  // namespace

int export_command(const Args& args) {
  if (const std::optional<int> code = answer_help(args, kHelp)) return *code;
  std::string output;
  const RunArgs run_args = parse_run_args(args, "export", [&](const std::string& option, const auto& value) {
    if (option != "-o" && option != "--output") return false;
    output = value();
    return true;
  });
  if (output.empty()) throw std::invalid_argument("no output file given: add -o FILE.pt");
  const CheckpointRun run = open_checkpoint_run(run_args);
  const engine::RunDirectory& dir = run.dir;
  const std::string& checkpoint = run.checkpoint;
  const engine::ExperimentConfig& config = run.config;
  const envs::EnvSpec& spec = run.spec;  // as the learner describes it, described once

  models::ExportOrigin origin{dir.run_id(), std::filesystem::path(checkpoint).filename().string(), -1,
                              config.env.wrappers};
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
  models::save_exported(exported, output);
  std::cout << "moonseed export: wrote " << output << " (" << config.algo << " on " << spec.id << ", "
            << origin.checkpoint << " of " << dir.run_id() << ")\n";
  return 0;
}

}  // namespace moonseed::cli
