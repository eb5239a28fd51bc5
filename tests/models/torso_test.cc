#include "models/torso.h"

#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace moonseed::models {
namespace {

int64_t parameter_count(torch::nn::Module& m) {
  int64_t n = 0;
  for (const torch::Tensor& p : m.parameters()) n += p.numel();
  return n;
}

// Torso's holder takes its arguments as deduced templates, so brace lists need a typed call.
Torso make_torso(const std::vector<LayerSpec>& layers, const std::vector<int64_t>& shape) {
  return Torso(layers, shape);
}

std::string error_of(const std::vector<LayerSpec>& layers, const std::vector<int64_t>& shape) {
  try {
    make_torso(layers, shape);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

TEST(Torso, NatureCnnMapsAtariFramesTo512FeaturesWithThePublishedParameterCount) {
  Torso torso = make_torso(preset_layers("nature_cnn"), {4, 84, 84});
  EXPECT_EQ(torso->out_features(), 512);
  // conv 4->32 8x8, 32->64 4x4, 64->64 3x3, linear 64*7*7 -> 512, with biases.
  EXPECT_EQ(parameter_count(*torso), (4 * 32 * 64 + 32) + (32 * 64 * 16 + 64) + (64 * 64 * 9 + 64) +
                                         (64 * 7 * 7 * 512 + 512));
  EXPECT_EQ(torso->shapes()[4], (std::vector<int64_t>{64, 7, 7}));
  torch::Tensor y = torso->forward(torch::rand({2, 4, 84, 84}));
  EXPECT_EQ(y.sizes(), (std::vector<int64_t>{2, 512}));
}

// MinAtar's [10, 10, C] frames: channels_first lets a convolution read them as [C, 10, 10],
// the same as permuting the input by hand.
TEST(Torso, ChannelsFirstTurnsChannelsLastImagesForTheConvolutions) {
  torch::manual_seed(5);
  Torso last = make_torso({{"channels_first"}, {"conv2d", 16, 3, 1, 0}, {"relu"}}, {10, 10, 4});
  EXPECT_EQ(last->shapes()[0], (std::vector<int64_t>{4, 10, 10}));
  EXPECT_EQ(last->shapes()[1], (std::vector<int64_t>{16, 8, 8}));
  EXPECT_EQ(last->out_features(), 16 * 8 * 8);
  torch::manual_seed(5);
  Torso first = make_torso({{"conv2d", 16, 3, 1, 0}, {"relu"}}, {4, 10, 10});
  const torch::Tensor hwc = torch::rand({3, 10, 10, 4});
  EXPECT_TRUE(torch::allclose(last->forward(hwc), first->forward(hwc.permute({0, 3, 1, 2}))));
  EXPECT_NE(error_of({{"channels_first"}}, {8}).find("needs a [height, width, channels] input"),
            std::string::npos);
}

TEST(Torso, ImpalaResnetHalvesTheImageThreeTimesAndEndsIn256Features) {
  Torso torso = make_torso(preset_layers("impala_resnet"), {3, 64, 64});
  EXPECT_EQ(torso->shapes()[0], (std::vector<int64_t>{16, 32, 32}));
  EXPECT_EQ(torso->shapes()[1], (std::vector<int64_t>{32, 16, 16}));
  EXPECT_EQ(torso->shapes()[2], (std::vector<int64_t>{32, 8, 8}));
  EXPECT_EQ(torso->out_features(), 256);
  torch::Tensor x = torch::rand({3, 3, 64, 64});
  torch::Tensor y = torso->forward(x);
  EXPECT_EQ(y.sizes(), (std::vector<int64_t>{3, 256}));
  // Gradients reach the first convolution through the residual blocks.
  y.sum().backward();
  for (const auto& p : torso->named_parameters()) {
    ASSERT_TRUE(p.value().grad().defined()) << p.key();
  }
}

TEST(Torso, AnMlpOfLinearLayersMatchesItsDeclaration) {
  Torso torso = make_torso({{"linear", 64}, {"tanh"}, {"linear", 32}, {"relu"}}, {4});
  EXPECT_EQ(torso->out_features(), 32);
  EXPECT_EQ(parameter_count(*torso), (4 * 64 + 64) + (64 * 32 + 32));
  torch::Tensor y = torso->forward(torch::randn({5, 4}));
  EXPECT_EQ(y.sizes(), (std::vector<int64_t>{5, 32}));
  EXPECT_GE(y.min().item<float>(), 0.f);  // after relu
}

TEST(Torso, AnImageLeftByTheLastLayerIsFlattened) {
  Torso torso = make_torso({{"conv2d", 8, 3, 1, 1}}, {2, 5, 5});
  EXPECT_EQ(torso->out_features(), 8 * 5 * 5);
  EXPECT_EQ(torso->forward(torch::rand({1, 2, 5, 5})).sizes(), (std::vector<int64_t>{1, 200}));
}

TEST(Torso, ALinearLayerOnAnImageIsRefusedNamingTheLayerAndShape) {
  EXPECT_EQ(error_of({{"conv2d", 16, 3, 1, 0}, {"relu"}, {"linear", 64}}, {1, 10, 10}),
            "layer 3 linear(64): needs a flat input; add flatten before it (its input is 16x8x8)");
}

TEST(Torso, AKernelLargerThanItsInputIsRefused) {
  // 20x20 -> (20 - 8) / 4 + 1 = 4 -> (4 - 4) / 2 + 1 = 1: the third convolution has no room.
  EXPECT_EQ(error_of(preset_layers("nature_cnn"), {4, 20, 20}),
            "layer 5 conv2d(64, kernel 3, stride 1): its kernel does not fit in its input (its input is 64x1x1)");
}

TEST(Torso, ConvolutionsNeedAnImageAndUnknownKindsAreNamed) {
  EXPECT_EQ(error_of({{"conv2d", 8, 3, 1, 0}}, {4}),
            "layer 1 conv2d(8, kernel 3, stride 1): needs a [channels, height, width] input (its input is 4)");
  const std::string unknown = error_of({{"linear", 8}, {"attention", 8}}, {4});
  EXPECT_NE(unknown.find("layer 2 attention: unknown layer kind 'attention' (known: linear, conv2d"),
            std::string::npos)
      << unknown;
  EXPECT_EQ(error_of({{"linear", 8}, {"lstm", 8}}, {4}),
            "layer 2 lstm(8): an lstm is a recurrent core, not a torso layer: only a recurrent model takes it, "
            "as its last layer (its input is 8)");
  EXPECT_THROW(preset_layers("resnet50"), std::invalid_argument);
}

TEST(Torso, ForwardChecksTheSampleShape) {
  Torso torso = make_torso({{"linear", 8}}, {4});
  EXPECT_THROW(torso->forward(torch::rand({2, 5})), std::invalid_argument);
  EXPECT_THROW(torso->forward(torch::rand({2, 4, 1})), std::invalid_argument);
}

}  // namespace
}  // namespace moonseed::models
