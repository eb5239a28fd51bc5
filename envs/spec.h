// Plain descriptions of what an environment observes and accepts.
// Shared by envs/, rpc/ (carried in the handshake) and engine/ (shapes the model).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace moonseed::envs {

enum class SpaceKind : uint8_t { kDiscrete = 0, kBox = 1 };
enum class DType : uint8_t { kFloat32 = 0, kUInt8 = 1 };

// A discrete space has `n` choices and an empty shape; a box has `shape`, `dtype`
// and per-element bounds (`low`/`high` have one entry per element, or are empty
// when unbounded).
struct Space {
  SpaceKind kind = SpaceKind::kBox;
  DType dtype = DType::kFloat32;
  int64_t n = 0;
  std::vector<int64_t> shape;
  std::vector<float> low;
  std::vector<float> high;

  // Number of scalar elements: 1 for discrete, the product of shape for a box.
  int64_t numel() const;
  // Bytes of one value of this space on the wire and in unrolls.
  int64_t byte_size() const;
  bool operator==(const Space& o) const;
  bool operator!=(const Space& o) const { return !(*this == o); }
};

struct EnvSpec {
  std::string id;             // "CartPole-v1"
  Space observation;
  Space action;
  int max_episode_steps = 0;  // truncation limit, 0 = none

  bool operator==(const EnvSpec& o) const;
  bool operator!=(const EnvSpec& o) const { return !(*this == o); }
  // One line for logs and error messages, e.g. "CartPole-v1 obs=box f32[4] act=discrete(2)".
  std::string describe() const;
};

// A float32 box of shape [low.size()] with per-element bounds; std::logic_error when `low`
// and `high` differ in size.
Space float32_box(std::vector<float> low, std::vector<float> high);
// Discrete(n): an int32 index in [0, n).
Space discrete_space(int64_t n);

}  // namespace moonseed::envs
