#include "models/device.h"

#include <limits>
#include <stdexcept>
#include <thread>

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

// 1e-20 * 1e-20 = 1e-40 is a denormal float: kept on a plain thread, flushed to
// zero on one that prepare_math_thread set up; and the setting stays with that thread.
float denormal_product() {
  const torch::Tensor a = torch::full({8}, 1e-20f);
  return (a * a).max().item<float>();
}

TEST(PrepareMathThread, FlushesDenormalsOnItsOwnThreadOnly) {
  float plain = -1;
  float prepared = -1;
  float other = -1;
  bool flushing = false;
  std::thread([&] { plain = denormal_product(); }).join();
  std::thread([&] {
    flushing = prepare_math_thread(1);
    prepared = denormal_product();
    EXPECT_EQ(at::get_num_threads(), 1);
  }).join();
  std::thread([&] { other = denormal_product(); }).join();
  EXPECT_GT(plain, 0.f);
  EXPECT_LT(plain, std::numeric_limits<float>::min());  // a denormal
  EXPECT_EQ(other, plain);
  if (flushing) {
    EXPECT_EQ(prepared, 0.f);
  } else {
    EXPECT_EQ(prepared, plain);
  }
}

}  // namespace
}  // namespace moonseed::models
