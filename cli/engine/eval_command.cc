// `moonseed eval RUN_DIR [--checkpoint N|best] [--episodes N] [--greedy] [--seed S]
// [--video FILE]` (docs/eval.md): the run's policy, restored from one checkpoint, plays
// episodes on fresh envs in this process (engine::play_episodes, as `moonseed ctl RUN
// evaluate` does in a running learner), trains nothing, and prints each episode's return and
// length and a summary. With --video the envs' renderers draw every step and cli/engine/video_writer.h
// encodes them; the episodes are then played one after another, into one file.
#include <signal.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <iostream>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>

#include "base/text.h"
#include "cli/engine/checkpoint_choice.h"
#include "cli/common/commands.h"
#include "cli/engine/video_writer.h"
#include "engine/learner/agent_registry.h"
#include "engine/learner/evaluator.h"
#include "envs/env.h"
#include "models/device.h"

namespace moonseed::cli {
namespace {

const char* kHelp =
    "usage: moonseed eval RUN_DIR [--checkpoint N|best] [--episodes N] [--greedy] [--seed S]\n"
    "                     [--video FILE.mp4|FILE.gif]\n"
    "\n"
    "Plays the run's trained policy on fresh envs in this process, without training,\n"
    "and prints each episode's return and length, then their mean, std, min and max.\n"
    "See docs/eval.md.\n"
    "\n"
    "  --checkpoint N   RUN_DIR/checkpoints/ckpt-N.pt, or best: RUN_DIR/best.pt\n"
    "                   (default: the newest checkpoint)\n"
    "  --episodes N     episodes to play, 1 to 10000 (default 10)\n"
    "  --greedy         the most likely action (V-trace) or epsilon 0 (R2D2); default:\n"
    "                   sampled actions (V-trace) or the run's r2d2.eval_epsilon\n"
    "  --seed S         env seeds S, S+1, ... (default: the seed `moonseed ctl RUN\n"
    "                   evaluate` uses, 1000000007 + the run's seed)\n"
    "  --video FILE     also renders every step into FILE (.mp4 or .gif, by ffmpeg);\n"
    "                   episodes are then played one after another\n";

struct EvalOptions {
  int episodes = 10;
  bool greedy = false;
  std::optional<uint64_t> seed;
  std::string video;
};

int64_t parse_integer(const std::string& option, const std::string& text) {
  size_t used = 0;
  int64_t v = 0;
  try {
    v = std::stoll(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || v < 0) throw std::invalid_argument(option + " takes a whole number >= 0, got '" + text + "'");
  return v;
}

// eval's own options (cli/engine/checkpoint_choice.h's OwnOption).
bool take_option(EvalOptions& out, const std::string& a, const std::function<const std::string&()>& value) {
  if (a == "--episodes") {
    const int64_t n = parse_integer(a, value());
    if (n < 1 || n > 10000) throw std::invalid_argument("--episodes must be in [1, 10000], got " + std::to_string(n));
    out.episodes = static_cast<int>(n);
  } else if (a == "--greedy") {
    out.greedy = true;
  } else if (a == "--seed") {
    out.seed = static_cast<uint64_t>(parse_integer(a, value()));
  } else if (a == "--video") {
    out.video = value();
  } else {
    return false;
  }
  return true;
}

constexpr int64_t kMaxSteps = 100000;  // as Learner::evaluate
constexpr int kVideoFps = 30;

}  // namespace

int eval_command(const Args& args) {
  if (const std::optional<int> code = answer_help(args, kHelp)) return *code;
  EvalOptions a;
  const RunArgs run_args = parse_run_args(args, "eval", [&](const std::string& option, const auto& value) {
    return take_option(a, option, value);
  });
  const CheckpointRun run = open_checkpoint_run(run_args);
  const std::string& checkpoint = run.checkpoint;
  const engine::ExperimentConfig& config = run.config;
  std::unique_ptr<VideoWriter> video;
  if (!a.video.empty()) {
    // What can fail is checked before anything is loaded or played. Plugin and Python envs
    // are refused by play_episodes, before any frame.
    video = std::make_unique<VideoWriter>(a.video, kVideoFps);
    envs::Image probe;
    if (config.env.plugin.empty() && config.env.python.empty() &&
        !envs::make_env(config.env.id, config.env.options, {config.env.model})->render(probe)) {
      throw std::runtime_error("env " + config.env.id + " cannot render, so --video cannot draw it (envs that "
                               "render: docs/eval.md)");
    }
  }
  const envs::EnvSpec& spec = run.spec;  // described once, while config.lua loaded
  const std::unique_ptr<engine::Agent> agent =
      engine::make_agent(config, spec, models::choose_device(config.inference.device));
  const engine::Counters restored = agent->restore_weights(checkpoint);
  const uint64_t seed = a.seed.value_or(1000000007ull + config.seed);  // RunControl::evaluate's seeds
  std::cout << "moonseed eval: " << config.algo << " on " << spec.id << ", " << checkpoint << " (step "
            << restored.optimizer_steps << "), " << a.episodes << " episode(s), "
            << (a.greedy ? "greedy" : "exploring as at evaluation") << ", seeds from " << seed << "\n";

  engine::Evaluation e;
  if (!video) {
    e = engine::play_episodes(config.env, spec, *agent, a.episodes, seed, a.greedy, kMaxSteps);
  } else {
    ::signal(SIGPIPE, SIG_IGN);  // an ffmpeg that dies is an EPIPE with its message, not our death
    envs::Image frame;
    const engine::EpisodeWatcher draw = [&](size_t, const envs::Env& env) {
      if (!env.render(frame)) throw std::runtime_error("env " + config.env.id + " drew no frame");
      video->write(frame);
    };
    for (int i = 0; i < a.episodes; ++i) {
      const engine::Evaluation one =
          engine::play_episodes(config.env, spec, *agent, 1, seed + static_cast<uint64_t>(i), a.greedy, kMaxSteps, draw);
      e.returns.push_back(one.returns[0]);
      e.lengths.push_back(one.lengths[0]);
      e.truncated.push_back(one.truncated[0]);
    }
  }
  double sum = 0, sum_sq = 0;
  for (size_t i = 0; i < e.returns.size(); ++i) {
    std::cout << "episode " << i + 1 << ": return " << base::number_text(e.returns[i], 6) << ", length "
              << e.lengths[i] << (e.truncated[i] ? " (truncated)" : "") << "\n";
    sum += e.returns[i];
    sum_sq += e.returns[i] * e.returns[i];
  }
  const double n = static_cast<double>(e.returns.size());
  const double mean = sum / n;
  const double std_dev = std::sqrt(std::max(0.0, sum_sq / n - mean * mean));
  double length = 0;
  for (int64_t l : e.lengths) length += static_cast<double>(l);
  std::cout << "return: mean " << base::number_text(mean, 6) << ", std " << base::number_text(std_dev, 6) << ", min "
            << base::number_text(*std::min_element(e.returns.begin(), e.returns.end()), 6) << ", max "
            << base::number_text(*std::max_element(e.returns.begin(), e.returns.end()), 6) << "; length: mean "
            << base::number_text(length / n, 6) << "\n";
  if (video) {
    video->finish();
    std::cout << "moonseed eval: wrote " << a.video << " (" << video->frames() << " frames, " << video->width() << "x"
              << video->height() << ", " << kVideoFps << " fps)\n";
  }
  return 0;
}

}  // namespace moonseed::cli
