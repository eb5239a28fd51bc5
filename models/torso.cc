#include "models/torso.h"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <stdexcept>

namespace moonseed::models {
namespace {

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string out;
  for (size_t i = 0; i < shape.size(); ++i) out += (i ? "x" : "") + std::to_string(shape[i]);
  return out.empty() ? "a scalar" : out;
}

int64_t product(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

void init_orthogonal(torch::nn::Module& module) {
  torch::NoGradGuard no_grad;
  for (auto& p : module.named_parameters(/*recurse=*/false)) {
    if (p.key() == "weight") torch::nn::init::orthogonal_(p.value(), std::sqrt(2.0));
    if (p.key() == "bias") p.value().zero_();
  }
}

// x + conv(relu(conv(relu(x)))), channels kept.
class ResidualImpl : public torch::nn::Module {
 public:
  explicit ResidualImpl(int64_t channels)
      : conv1_(register_module("conv1", torch::nn::Conv2d(torch::nn::Conv2dOptions(channels, channels, 3).padding(1)))),
        conv2_(register_module("conv2", torch::nn::Conv2d(torch::nn::Conv2dOptions(channels, channels, 3).padding(1)))) {
    init_orthogonal(*conv1_);
    init_orthogonal(*conv2_);
  }
  torch::Tensor forward(torch::Tensor x) {
    return x + conv2_->forward(torch::relu(conv1_->forward(torch::relu(x))));
  }

 private:
  torch::nn::Conv2d conv1_;
  torch::nn::Conv2d conv2_;
};
TORCH_MODULE(Residual);

// IMPALA's block: conv 3x3 -> max-pool 3x3 stride 2 -> two residual blocks.
class ImpalaBlockImpl : public torch::nn::Module {
 public:
  ImpalaBlockImpl(int64_t in, int64_t out)
      : conv_(register_module("conv", torch::nn::Conv2d(torch::nn::Conv2dOptions(in, out, 3).padding(1)))),
        pool_(register_module("pool", torch::nn::MaxPool2d(torch::nn::MaxPool2dOptions(3).stride(2).padding(1)))),
        res1_(register_module("res1", Residual(out))),
        res2_(register_module("res2", Residual(out))) {
    init_orthogonal(*conv_);
  }
  torch::Tensor forward(torch::Tensor x) { return res2_->forward(res1_->forward(pool_->forward(conv_->forward(x)))); }

 private:
  torch::nn::Conv2d conv_;
  torch::nn::MaxPool2d pool_;
  Residual res1_;
  Residual res2_;
};
TORCH_MODULE(ImpalaBlock);

// [N, H, W, C] -> [N, C, H, W]: images as Gymnasium and MinAtar lay them out, as convolutions
// take them.
class ChannelsFirstImpl : public torch::nn::Module {
 public:
  torch::Tensor forward(const torch::Tensor& x) { return x.permute({0, 3, 1, 2}).contiguous(); }
};
TORCH_MODULE(ChannelsFirst);

// Output size of a convolution or pooling along one dimension; < 1 means too small.
int64_t out_size(int64_t in, int64_t kernel, int64_t stride, int64_t padding) {
  return (in + 2 * padding - kernel) / stride + 1;
}

}  // namespace

const std::vector<std::string>& layer_kinds() {
  static const std::vector<std::string> kinds = {"linear", "conv2d", "maxpool2d", "impala_block",
                                                 "channels_first", "flatten", "relu", "tanh",
                                                 "elu", "lstm"};
  return kinds;
}

RecurrentSplit split_recurrent(const std::vector<LayerSpec>& layers) {
  RecurrentSplit split;
  for (size_t i = 0; i < layers.size(); ++i) {
    if (layers[i].kind != "lstm") {
      split.torso.push_back(layers[i]);
    } else if (i + 1 != layers.size()) {
      throw std::invalid_argument("layer " + std::to_string(i + 1) + " " + layers[i].describe() +
                                  ": an lstm must be the last layer (the heads read its output)");
    } else if (layers[i].out < 1) {
      throw std::invalid_argument("layer " + std::to_string(i + 1) + " lstm: needs out >= 1");
    } else {
      split.lstm_size = layers[i].out;
    }
  }
  return split;
}

std::vector<LayerSpec> model_layers(const ModelSpec& config) {
  if (config.kind == "layers") return config.layers;
  if (config.kind != "mlp") return preset_layers(config.kind);
  if (config.activation != "tanh" && config.activation != "relu") {
    throw std::invalid_argument("unknown activation '" + config.activation + "' (expected tanh or relu)");
  }
  std::vector<LayerSpec> layers;
  for (int64_t width : config.hidden) {
    layers.push_back(LayerSpec{"linear", width});
    layers.push_back(LayerSpec{config.activation});
  }
  return layers;
}

std::vector<LayerSpec> preset_layers(const std::string& preset) {
  if (preset == "nature_cnn") {
    return {{"conv2d", 32, 8, 4, 0}, {"relu"}, {"conv2d", 64, 4, 2, 0}, {"relu"}, {"conv2d", 64, 3, 1, 0},
            {"relu"},           {"flatten"}, {"linear", 512},     {"relu"}};
  }
  if (preset == "impala_resnet") {
    return {{"impala_block", 16}, {"impala_block", 32}, {"impala_block", 32}, {"relu"},
            {"flatten"},          {"linear", 256},      {"relu"}};
  }
  throw std::invalid_argument("unknown model kind '" + preset +
                              "' (known: mlp, layers, nature_cnn, impala_resnet)");
}

TorsoImpl::TorsoImpl(const std::vector<LayerSpec>& layers, std::vector<int64_t> input_shape)
    : input_shape_(std::move(input_shape)) {
  if (input_shape_.empty() || product(input_shape_) < 1) {
    throw std::invalid_argument("a torso needs a non-empty input shape, got " + shape_text(input_shape_));
  }
  std::vector<int64_t> shape = input_shape_;
  for (size_t i = 0; i < layers.size(); ++i) {
    const LayerSpec& l = layers[i];
    auto fail = [&](const std::string& why) {
      throw std::invalid_argument("layer " + std::to_string(i + 1) + " " + l.describe() + ": " + why +
                                  " (its input is " + shape_text(shape) + ")");
    };
    const bool image = shape.size() == 3;
    if (l.kind == "linear") {
      if (shape.size() != 1) fail("needs a flat input; add flatten before it");
      if (l.out < 1) fail("needs out >= 1");
      torch::nn::Linear linear(shape[0], l.out);
      init_orthogonal(*linear);
      layers_->push_back(linear);
      shape = {l.out};
    } else if (l.kind == "conv2d" || l.kind == "maxpool2d") {
      if (!image) fail("needs a [channels, height, width] input");
      if (l.kernel < 1 || l.stride < 1 || l.padding < 0) fail("needs kernel >= 1, stride >= 1, padding >= 0");
      if (l.kind == "conv2d" && l.out < 1) fail("needs out >= 1");
      const int64_t h = out_size(shape[1], l.kernel, l.stride, l.padding);
      const int64_t w = out_size(shape[2], l.kernel, l.stride, l.padding);
      if (h < 1 || w < 1) fail("its kernel does not fit in its input");
      if (l.kind == "conv2d") {
        torch::nn::Conv2d conv(torch::nn::Conv2dOptions(shape[0], l.out, l.kernel).stride(l.stride).padding(l.padding));
        init_orthogonal(*conv);
        layers_->push_back(conv);
        shape = {l.out, h, w};
      } else {
        layers_->push_back(torch::nn::MaxPool2d(
            torch::nn::MaxPool2dOptions(l.kernel).stride(l.stride).padding(l.padding)));
        shape = {shape[0], h, w};
      }
    } else if (l.kind == "impala_block") {
      if (!image) fail("needs a [channels, height, width] input");
      if (l.out < 1) fail("needs out >= 1");
      layers_->push_back(ImpalaBlock(shape[0], l.out));
      shape = {l.out, out_size(shape[1], 3, 2, 1), out_size(shape[2], 3, 2, 1)};
    } else if (l.kind == "channels_first") {
      if (!image) fail("needs a [height, width, channels] input");
      layers_->push_back(ChannelsFirst());
      shape = {shape[2], shape[0], shape[1]};
    } else if (l.kind == "flatten") {
      layers_->push_back(torch::nn::Flatten());
      shape = {product(shape)};
    } else if (l.kind == "relu") {
      layers_->push_back(torch::nn::ReLU());
    } else if (l.kind == "tanh") {
      layers_->push_back(torch::nn::Tanh());
    } else if (l.kind == "elu") {
      layers_->push_back(torch::nn::ELU());
    } else if (l.kind == "lstm") {
      fail("an lstm is a recurrent core, not a torso layer: only a recurrent model takes it, as its last layer");
    } else {
      std::string known;
      for (const std::string& k : layer_kinds()) known += (known.empty() ? "" : ", ") + k;
      fail("unknown layer kind '" + l.kind + "' (known: " + known + ")");
    }
    shapes_.push_back(shape);
  }
  out_features_ = product(shape);
  register_module("layers", layers_);
}

torch::Tensor TorsoImpl::forward(torch::Tensor x) {
  const std::vector<int64_t> got(x.sizes().begin() + std::min<int64_t>(1, x.dim()), x.sizes().end());
  if (x.dim() < 1 || got != input_shape_) {
    throw std::invalid_argument("torso input must be [N, " + shape_text(input_shape_) + "], got " +
                                shape_text(std::vector<int64_t>(x.sizes().begin(), x.sizes().end())));
  }
  torch::Tensor y = layers_->size() ? layers_->forward(x) : x;
  return y.reshape({y.size(0), out_features_});
}

}  // namespace moonseed::models
