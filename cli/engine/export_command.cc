// `moonseed export RUN_DIR [--checkpoint N] -o FILE.pt` (docs/export.md): the
// run's trained net as a TorchScript module for PyTorch users. The config is
// the run's config.lua, the env's spec is described as the learner describes
// it (once, while the config loads: cli/engine/checkpoint_choice.h), the weights come
// from one checkpoint (the newest by default), and models/export.h writes the module.
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <optional>
#include <stdexcept>
#include <string>

#include "cli/engine/checkpoint_choice.h"
#include "cli/common/commands.h"
#include "engine/learner/agent_registry.h"
#include "engine/run/run_directory.h"
#include "envs/spec.h"
#include "models/export.h"

namespace moonseed::cli {
namespace {

const char* kHelpRest =
    "The spec (env, spaces, preprocessing, model, checkpoint) is in the file as\n"
    "moonseed/spec.json. See docs/export.md.\n"
    "\n"
    "  --checkpoint N   the checkpoint RUN_DIR/checkpoints/ckpt-N.pt, N its optimizer\n"
    "                   step, or best: RUN_DIR/best.pt (default: the newest)\n"
    "  -o, --output F   the file to write (required); written whole or not at all\n";

// The module's forward per algorithm comes from the registry (engine/learner/agent_registry.h).
std::string help() {
  return "usage: moonseed export RUN_DIR [--checkpoint N|best] -o FILE.pt\n"
         "\n"
         "Writes the run's trained net as a TorchScript module that PyTorch loads with\n"
         "torch.jit.load(\"FILE.pt\") and calls on a batch of raw env observations:\n" +
         engine::export_signatures() + kHelpRest;
}

}  // namespace

int export_command(const Args& args) {
  if (const std::optional<int> code = answer_help(args, help().c_str())) return *code;
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
                              config.env.wrappers, config.algo};
  const models::Exported exported = engine::export_net(config, spec, checkpoint, origin);
  models::save_exported(exported, output);
  std::cout << "moonseed export: wrote " << output << " (" << config.algo << " on " << spec.id << ", "
            << origin.checkpoint << " of " << dir.run_id() << ")\n";
  return 0;
}

}  // namespace moonseed::cli
