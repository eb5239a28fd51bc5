#include "envs/spec.h"

#include <stdexcept>
#include <utility>

#include "base/text.h"

namespace moonseed::envs {
namespace {

int64_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::kFloat32: return 4;
    case DType::kUInt8: return 1;
  }
  throw std::logic_error("dtype_size: unknown DType " + std::to_string(static_cast<int>(dtype)));
}

const char* dtype_name(DType dtype) {
  switch (dtype) {
    case DType::kFloat32: return "f32";
    case DType::kUInt8: return "u8";
  }
  return "?";
}

std::string describe_space(const Space& space) {
  if (space.kind == SpaceKind::kDiscrete) return "discrete(" + std::to_string(space.n) + ")";
  return std::string("box ") + dtype_name(space.dtype) + base::shape_text(space.shape, ",");
}

}  // namespace

int64_t Space::numel() const {
  if (kind == SpaceKind::kDiscrete) return 1;
  int64_t count = 1;
  for (int64_t dim : shape) {
    if (dim < 0) {
      throw std::invalid_argument("Space::numel: negative dimension " + std::to_string(dim) +
                                  " in " + describe_space(*this));
    }
    count *= dim;
  }
  return count;
}

int64_t Space::byte_size() const {
  // A discrete value travels as one int32 index.
  if (kind == SpaceKind::kDiscrete) return 4;
  return numel() * dtype_size(dtype);
}

bool Space::operator==(const Space& o) const {
  return kind == o.kind && dtype == o.dtype && n == o.n && shape == o.shape && low == o.low &&
         high == o.high;
}

bool EnvSpec::operator==(const EnvSpec& o) const {
  return id == o.id && observation == o.observation && action == o.action &&
         max_episode_steps == o.max_episode_steps;
}

std::string EnvSpec::describe() const {
  std::string text = id + " obs=" + describe_space(observation) + " act=" + describe_space(action);
  if (max_episode_steps > 0) text += " max_episode_steps=" + std::to_string(max_episode_steps);
  return text;
}

Space float32_box(std::vector<float> low, std::vector<float> high) {
  if (low.size() != high.size()) {
    throw std::logic_error("float32_box: " + std::to_string(low.size()) + " lows but " +
                           std::to_string(high.size()) + " highs");
  }
  Space space;
  space.kind = SpaceKind::kBox;
  space.dtype = DType::kFloat32;
  space.shape = {static_cast<int64_t>(low.size())};
  space.low = std::move(low);
  space.high = std::move(high);
  return space;
}

Space discrete_space(int64_t n) {
  Space space;
  space.kind = SpaceKind::kDiscrete;
  space.n = n;
  return space;
}

}  // namespace moonseed::envs
