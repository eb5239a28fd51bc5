// TorchScript export of the learner's nets (`moonseed export`, docs/export.md): a
// torch::jit::Module that computes what PolicyNet or QNet computes, with the
// net's parameters copied in and the observation preprocessing (uint8 scaling,
// models/obs_scale.h) inside, so that a PyTorch user loads it with
// torch.jit.load and feeds raw env observations.
//
// The module's TorchScript source is generated from the model's declared layers
// (models/torso.h) and its heads, using the same ATen ops as the LibTorch
// modules, so outputs agree with the learner's to rounding. Parameters are named
// as in the C++ net with '.' replaced by '_' ("policy_head.weight" ->
// "policy_head_weight").
//
//   V-trace: forward(obs) -> (logits, value) for discrete actions, (mean, value)
//            for box actions; the box policy's log std is the parameter `log_std`.
//            A recurrent policy: forward(obs, prev_action, prev_reward, state) ->
//            (logits or mean, value, state), state = (h, c), and
//            initial_state(batch) -> zeros; at an episode's first step a row's
//            state is zeros, its prev_action -1 (Box: zeros), its prev_reward 0.
//   R2D2:    forward(obs, prev_action, prev_reward, state) -> (q_values, state),
//            state = (h, c), and initial_state(batch) -> zeros; prev_action and
//            prev_reward are ignored when the net does not feed them to its core.
//
// The spec (env id, spaces, preprocessing, algo, model, inputs, outputs and where
// the weights came from) is JSON, saved in the archive as the extra file
// kSpecFile and as the module's string attribute `moonseed_spec`.
//
// Errors: std::logic_error when a net holds a parameter the export did not use
// (a net this file does not know how to export); save_exported throws
// std::runtime_error naming the path and the reason, leaving no file behind.
// Thread-safety: reads the net's parameters; call while nobody trains it.
#pragma once

#include <cstdint>
#include <string>

#include <torch/script.h>

#include "envs/spec.h"
#include "envs/wrappers/wrapper_spec.h"
#include "models/model_spec.h"
#include "models/policy_net.h"
#include "models/q_net.h"

namespace moonseed::models {

// The archive's extra file that holds the spec JSON.
inline constexpr const char* kSpecFile = "moonseed/spec.json";

// Where the exported weights come from, for the spec: the run, its checkpoint, and the env
// wrappers (env.wrappers) between the env and the net, which a user must apply the same way.
struct ExportOrigin {
  std::string run_id;      // the run directory's name
  std::string checkpoint;  // "ckpt-1200.pt"
  int64_t step = -1;       // its optimizer step
  envs::WrapperList env_wrappers;  // the spec's "env_wrappers": [{"kind": "frame_stack", "n": 4}, ...]
  std::string algo;                // the spec's "algo" for a policy net ("vtrace", "appo"); empty: "vtrace"
};

struct Exported {
  torch::jit::Module module;
  std::string spec_json;
};

Exported export_policy_net(const PolicyNetImpl& net, const ModelSpec& model, const envs::EnvSpec& env,
                           const ExportOrigin& origin);
Exported export_q_net(const QNetImpl& net, const envs::EnvSpec& env, const ExportOrigin& origin);

// Writes the module with its spec to `path` through PATH.partial, fsync and
// rename: `path` is either untouched or the whole new file.
void save_exported(const Exported& exported, const std::string& path);

}  // namespace moonseed::models
