// What an experiment declares about its network, as plain values: the layer
// list (or a preset, or the default MLP) and the few options of its heads.
// models/torso.h and models/policy_net.h build LibTorch modules from it;
// engine/config holds one in ExperimentConfig::model; scripts/ reads it from
// Lua. No LibTorch here, so config and script code stay light.
//
// Layer kinds and their fields: linear(out), lstm(out), impala_block(out),
// conv2d(out, kernel, stride = 1, padding = 0), maxpool2d(kernel, stride =
// kernel, padding = 0), and flatten, relu, tanh, elu without fields. An lstm,
// the recurrent core, may only end the list.
//
// Pure values and functions; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace moonseed::models {

// One declared layer.
struct LayerSpec {
  std::string kind;
  int64_t out = 0;      // linear, lstm: features; conv2d, impala_block: channels
  int64_t kernel = 0;   // conv2d, maxpool2d
  int64_t stride = 1;   // conv2d, maxpool2d
  int64_t padding = 0;  // conv2d, maxpool2d

  // "conv2d(32, kernel 8, stride 4)", "linear(512)", "relu".
  std::string describe() const;
  // The fields this kind takes, in the order they are written: "out",
  // "kernel", "stride", "padding" (a subset).
  static std::vector<std::string> fields_of(const std::string& kind);
  // The value of one of those fields by name.
  int64_t field(const std::string& name) const;

  bool operator==(const LayerSpec& o) const {
    return kind == o.kind && out == o.out && kernel == o.kernel && stride == o.stride && padding == o.padding;
  }
  bool operator!=(const LayerSpec& o) const { return !(*this == o); }
};

using LayerList = std::vector<LayerSpec>;

struct ModelSpec {
  // "mlp": hidden/activation below; "layers": the `layers` list;
  // "nature_cnn" | "impala_resnet": presets (models/torso.h).
  std::string kind = "mlp";
  std::vector<int64_t> hidden = {64, 64};
  std::string activation = "tanh";      // "tanh" | "relu"
  LayerList layers;                     // kind = "layers"
  bool shared_torso = false;            // policy and value share hidden layers
  double init_log_std = -0.5;           // Gaussian policies: initial log std
};

// Every declared layer kind (models::layer_kinds() builds them all).
const std::vector<std::string>& declared_layer_kinds();

// "" when `layer` is a known kind with its fields in range, else what is
// wrong: "needs kernel in [1, 256], got 0", "unknown layer kind \"conv\"; did
// you mean \"conv2d\"? (known: ...)".
std::string layer_problem(const LayerSpec& layer);

// "" when the list is well formed, else the first problem, naming the
// element: "element 3 (conv2d): needs kernel in [1, 256], got 0". An empty
// list is fine here (ModelSpec::kind decides whether layers are needed).
std::string layer_list_problem(const LayerList& layers);

}  // namespace moonseed::models
