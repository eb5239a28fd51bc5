#include "models/device.h"

#include <stdexcept>

#include <gtest/gtest.h>

namespace moonseed::models {
namespace {

TEST(ChooseDevice, CpuIsAlwaysTheCpu) { EXPECT_EQ(choose_device("cpu"), torch::Device(torch::kCPU)); }

TEST(ChooseDevice, AutoPicksCudaExactlyWhenItIsAvailable) {
  const torch::Device d = choose_device("auto");
  EXPECT_EQ(d.is_cuda(), torch::cuda::is_available());
}

TEST(ChooseDevice, CudaWithoutAGpuIsAnError) {
  if (torch::cuda::is_available()) {
    EXPECT_TRUE(choose_device("cuda").is_cuda());
  } else {
    EXPECT_THROW(choose_device("cuda"), std::invalid_argument);
  }
}

TEST(ChooseDevice, UnknownNameIsAnError) {
  EXPECT_THROW(choose_device("gpu"), std::invalid_argument);
}

}  // namespace
}  // namespace moonseed::models
