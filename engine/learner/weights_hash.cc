#include "engine/learner/weights_hash.h"

namespace moonseed::engine {
namespace {

constexpr uint64_t kOffset = 14695981039346656037ull;
constexpr uint64_t kPrime = 1099511628211ull;

uint64_t mix(uint64_t h, const uint8_t* bytes, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    h ^= bytes[i];
    h *= kPrime;
  }
  return h;
}

template <typename T>
uint64_t mix_value(uint64_t h, T value) {
  return mix(h, reinterpret_cast<const uint8_t*>(&value), sizeof value);
}

}  // namespace

uint64_t tensors_hash(const std::vector<torch::Tensor>& tensors) {
  torch::NoGradGuard no_grad;
  uint64_t h = kOffset;
  for (const torch::Tensor& t : tensors) {
    h = mix_value(h, static_cast<int32_t>(t.scalar_type()));
    for (int64_t d : t.sizes()) h = mix_value(h, d);
    const torch::Tensor c = t.detach().to(torch::kCPU).contiguous();
    h = mix(h, static_cast<const uint8_t*>(c.data_ptr()), static_cast<size_t>(c.numel()) * c.element_size());
  }
  return h;
}

}  // namespace moonseed::engine
