#include "cli/engine/checkpoint_choice.h"

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <stdexcept>
#include <vector>

#include "base/text.h"
#include "cli/engine/best_checkpoint.h"
#include "engine/run/checkpoint_manifest.h"
#include "scripts/loader/experiment_loader.h"

namespace moonseed::cli {
namespace {

// The step N of a checkpoint path ".../ckpt-N.pt".
std::string step_of(const std::string& path) {
  const std::string name = std::filesystem::path(path).filename().string();
  return name.substr(5, name.size() - 8);
}

}  // namespace

CheckpointChoice parse_checkpoint_choice(const std::string& text) {
  CheckpointChoice out;
  if (text == "best") {
    out.best = true;
    return out;
  }
  size_t used = 0;
  try {
    out.step = std::stoll(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || out.step < 0) {
    throw std::invalid_argument("--checkpoint takes a checkpoint's step number (N of ckpt-N.pt) or best, got '" +
                                text + "'");
  }
  return out;
}

std::string checkpoint_damage(const std::string& checkpoint, bool companions) {
  const engine::CheckpointCheck check = engine::verify_checkpoint(checkpoint, companions);
  if (check.good() && !check.sealed) {
    std::cerr << "moonseed: " << checkpoint << " has no manifest (" << engine::manifest_path(checkpoint)
              << "; a checkpoint of an older build): it is loaded unverified\n";
  }
  return check.damage;
}

namespace {

// The steps of the run's checkpoints, for a message that asks for another.
std::string steps_there(const std::vector<std::string>& all) {
  std::vector<std::string> steps;
  for (const std::string& path : all) steps.push_back(step_of(path));
  return "checkpoints there: " + base::join(steps);
}

// Export and eval read the .pt alone; R2D2's replay beside it is not checked.
std::string checked(const std::string& checkpoint, const std::vector<std::string>& all) {
  const std::string damage = checkpoint_damage(checkpoint, /*companions=*/false);
  if (damage.empty()) return checkpoint;
  throw std::runtime_error("checkpoint " + checkpoint + " is damaged: " + damage +
                           "; pick another with --checkpoint N (" + steps_there(all) + ")");
}

}  // namespace

std::string pick_checkpoint(const engine::RunDirectory& dir, const CheckpointChoice& choice) {
  const std::vector<std::string> all = dir.checkpoints();
  if (choice.best) {
    const std::string best = best_checkpoint_path(dir.path());
    std::error_code ec;
    if (!std::filesystem::is_regular_file(best, ec)) {
      throw std::runtime_error(dir.path() + " has no best.pt (a run keeps one from its first checkpoint with a "
                               "finished episode on; see docs/eval.md)");
    }
    return checked(best, all);
  }
  if (all.empty()) {
    throw std::runtime_error(dir.path() + " has no checkpoint to export (" + dir.checkpoints_dir() +
                             " holds no ckpt-N.pt; a run writes one every checkpoint.interval_s and when it ends)");
  }
  if (choice.step < 0) {
    // The newest good one, as --resume takes it: each newer one skipped with a line saying why
    // (its save was interrupted, or it is damaged). A step asked for by number is never swapped.
    const std::string newest = dir.newest_checkpoint();
    auto it = all.rbegin();
    for (; !newest.empty() && *it != newest; ++it) {
      std::cerr << "moonseed: skipping incomplete checkpoint " << *it << " (no " << dir.missing_files(*it, {})
                << ": its save was interrupted)\n";
    }
    if (newest.empty()) return checked(all.back(), all);
    for (; it != all.rend(); ++it) {
      if (!dir.missing_files(*it, {}).empty()) continue;  // an interrupted save further back
      const std::string damage = checkpoint_damage(*it, /*companions=*/false);
      if (damage.empty()) return *it;
      std::cerr << "moonseed: skipping checkpoint " << *it << ": " << damage << "\n";
    }
    throw std::runtime_error("every checkpoint of " + dir.path() + " is damaged (" + steps_there(all) +
                             "; the lines above say how)");
  }
  const std::string wanted = dir.checkpoint_path(choice.step);
  for (const std::string& path : all) {
    if (path == wanted) return checked(path, all);
  }
  throw std::runtime_error(dir.path() + " has no checkpoint " + std::to_string(choice.step) + " (" +
                           steps_there(all) + ")");
}

std::optional<int> answer_help(const Args& args, const char* help) {
  if (!args.empty() && !wants_help(args)) return std::nullopt;
  std::fputs(help, args.empty() ? stderr : stdout);
  return args.empty() ? 2 : 0;
}

RunArgs parse_run_args(const Args& args, const std::string& command, const OwnOption& own) {
  RunArgs out;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    const std::function<const std::string&()> value = [&]() -> const std::string& {
      if (i + 1 >= args.size()) throw std::invalid_argument(a + " needs a value");
      return args[++i];
    };
    if (a == "--checkpoint") {
      out.checkpoint = parse_checkpoint_choice(value());
    } else if (!a.empty() && a[0] == '-') {
      if (!own(a, value)) throw std::invalid_argument("unknown option '" + a + "' (see moonseed " + command + " --help)");
    } else if (out.run_dir.empty()) {
      out.run_dir = strip_slash(a);
    } else {
      throw std::invalid_argument("one RUN_DIR only, got '" + out.run_dir + "' and '" + a + "'");
    }
  }
  if (out.run_dir.empty()) throw std::invalid_argument("no RUN_DIR given (see moonseed " + command + " --help)");
  return out;
}

CheckpointRun open_checkpoint_run(const RunArgs& args) {
  engine::RunDirectory dir = engine::RunDirectory::open(args.run_dir);
  std::string checkpoint = pick_checkpoint(dir, args.checkpoint);
  scripts::LoadedExperiment loaded = scripts::load_experiment_sources(dir.config_path());
  return CheckpointRun{std::move(dir), std::move(checkpoint), std::move(loaded.config), std::move(loaded.spec)};
}

}  // namespace moonseed::cli
