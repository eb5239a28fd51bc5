// A feed-forward torso declared as a list of layers, in the spirit of
// Torch7's nn.Sequential: the building block of the model DSL (issue 3) and of
// the R2D2 network (issue 4). Presets expand to layer lists, so a resolved
// config can always show the layers that ran.
//
//   TorsoImpl torso(preset_layers("nature_cnn"), {4, 84, 84});
//   torso.out_features()            // 512
//   torso.forward(obs)              // [N, 4, 84, 84] float -> [N, 512]
//
// Layer kinds (LayerSpec):
//   linear(out)                          needs a flat input (add flatten after convolutions)
//   conv2d(out, kernel, stride, padding) needs a [C, H, W] input
//   maxpool2d(kernel, stride, padding)   needs a [C, H, W] input
//   impala_block(out)                    IMPALA's conv 3x3 -> max-pool 3x3/2 -> 2 residual blocks
//   flatten, relu, tanh, elu
// ("lstm" is a declared kind too, but a recurrent core, not a torso layer:
// split_recurrent() takes it off the end before the torso is built.)
// The output is flattened at the end when the last layer leaves a [C, H, W].
// Weights: orthogonal with gain sqrt(2), zero biases.
//
// Construction checks every layer against the shape that reaches it and
// throws std::invalid_argument naming the layer's index, what it is and the
// shape it got (a kernel larger than its input, a linear on an image, an
// unknown kind). forward() checks the per-sample input shape.
//
// Thread-safety: as any torch::nn::Module.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "models/model_spec.h"

namespace moonseed::models {

// The declared layer (engine/config/experiment_config.h), as the models room calls it.

// The layer kinds a model declares: the torso's, plus "lstm", the recurrent
// core, which only a recurrent model takes and only as its last layer.
const std::vector<std::string>& layer_kinds();

// A declared layer list split into the feed-forward torso and the recurrent
// core that ends it: lstm_size 0 when there is none. Throws
// std::invalid_argument naming the layer when an lstm is not the last layer.
struct RecurrentSplit {
  std::vector<LayerSpec> torso;
  int64_t lstm_size = 0;
};
RecurrentSplit split_recurrent(const std::vector<LayerSpec>& layers);

// The layers a model config declares: an "mlp" expands to linear and
// activation pairs, a preset to its list, "layers" is taken as written.
// Throws std::invalid_argument for an unknown kind.
std::vector<LayerSpec> model_layers(const ModelSpec& config);

// "nature_cnn" (Mnih et al. 2015: conv 32x8/4, 64x4/2, 64x3/1, linear 512) or
// "impala_resnet" (Espeholt et al. 2018: blocks of 16, 32, 32 channels, linear 256).
// Throws std::invalid_argument for any other name.
std::vector<LayerSpec> preset_layers(const std::string& preset);

class TorsoImpl : public torch::nn::Module {
 public:
  // `input_shape`: one sample's shape, e.g. {4} or {4, 84, 84}.
  TorsoImpl(const std::vector<LayerSpec>& layers, std::vector<int64_t> input_shape);

  // x: [N, input_shape...] float -> [N, out_features()].
  torch::Tensor forward(torch::Tensor x);

  int64_t out_features() const { return out_features_; }
  // The per-sample shape after each layer (before the final flatten).
  const std::vector<std::vector<int64_t>>& shapes() const { return shapes_; }

 private:
  std::vector<int64_t> input_shape_;
  std::vector<std::vector<int64_t>> shapes_;
  int64_t out_features_ = 0;
  torch::nn::Sequential layers_;
};
TORCH_MODULE(Torso);

}  // namespace moonseed::models
