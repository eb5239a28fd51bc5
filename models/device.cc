#include "models/device.h"

#include <algorithm>
#include <stdexcept>

namespace moonseed::models {

torch::Device choose_device(const std::string& want) {
  if (want == "cpu") return torch::Device(torch::kCPU);
  if (want == "auto") {
    return torch::cuda::is_available() ? torch::Device(torch::kCUDA) : torch::Device(torch::kCPU);
  }
  if (want == "cuda") {
    if (!torch::cuda::is_available()) {
      throw std::invalid_argument(
          "device \"cuda\" requested but this LibTorch build sees no usable CUDA device");
    }
    return torch::Device(torch::kCUDA);
  }
  throw std::invalid_argument("unknown device \"" + want + "\" (expected auto, cpu or cuda)");
}

bool prepare_math_thread(int intra_op_threads) {
  at::set_num_threads(std::max(1, intra_op_threads));
  return at::globalContext().setFlushDenormal(true);
}

}  // namespace moonseed::models
