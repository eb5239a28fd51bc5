#include "envs/wrappers/wrappers.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "envs/numpy_rng.h"

namespace moonseed::envs {
namespace {

size_t element_bytes(const Space& s) { return s.dtype == DType::kUInt8 ? 1 : sizeof(float); }

[[noreturn]] void unfit(size_t position, const WrapperSpec& w, const std::string& why) {
  throw WrapperUnfit("env.wrappers[" + std::to_string(position + 1) + "] (" + w.kind + ")", why);
}

void need_box(const EnvSpec& in, size_t position, const WrapperSpec& w) {
  if (in.observation.kind != SpaceKind::kBox) unfit(position, w, "needs a box observation, got " + in.describe());
}

// action_repeat's max_pool: -1 pools pixel observations (uint8 boxes of rank >= 2).
bool pools(const EnvSpec& in, const WrapperSpec& w) {
  const int max_pool = static_cast<int>(w.param("max_pool"));
  if (max_pool >= 0) return max_pool == 1;
  return in.observation.kind == SpaceKind::kBox && in.observation.dtype == DType::kUInt8 &&
         in.observation.shape.size() >= 2;
}

// Per-element bounds repeated n times along the last axis, oldest frame first.
std::vector<float> stack_bounds(const std::vector<float>& bounds, size_t channels, int n) {
  if (bounds.empty()) return bounds;
  std::vector<float> out;
  out.reserve(bounds.size() * static_cast<size_t>(n));
  for (size_t row = 0; row < bounds.size() / channels; ++row) {
    for (int j = 0; j < n; ++j) out.insert(out.end(), bounds.begin() + row * channels, bounds.begin() + (row + 1) * channels);
  }
  return out;
}

EnvSpec apply_spec(const EnvSpec& in, const WrapperSpec& w, size_t position) {
  EnvSpec out = in;
  if (w.kind == "frame_stack") {
    need_box(in, position, w);
    if (in.observation.shape.empty()) unfit(position, w, "needs an observation of rank >= 1, got " + in.describe());
    const int n = static_cast<int>(w.param("n"));
    const auto channels = static_cast<size_t>(in.observation.shape.back());
    out.observation.shape.back() *= n;
    out.observation.low = stack_bounds(in.observation.low, channels, n);
    out.observation.high = stack_bounds(in.observation.high, channels, n);
  } else if (w.kind == "action_repeat") {
    if (pools(in, w)) need_box(in, position, w);
    const int k = static_cast<int>(w.param("k"));
    if (in.max_episode_steps > 0) out.max_episode_steps = (in.max_episode_steps + k - 1) / k;
  } else if (w.kind == "time_limit") {
    const int max_steps = static_cast<int>(w.param("max_steps"));
    out.max_episode_steps = in.max_episode_steps > 0 ? std::min(in.max_episode_steps, max_steps) : max_steps;
  } else if (w.kind == "scale_obs") {
    need_box(in, position, w);
    const double scale = w.param("scale"), offset = w.param("offset");
    out.observation.dtype = DType::kFloat32;
    for (size_t j = 0; j < in.observation.low.size() && j < in.observation.high.size(); ++j) {
      const auto a = static_cast<float>(in.observation.low[j] * scale + offset);
      const auto b = static_cast<float>(in.observation.high[j] * scale + offset);
      out.observation.low[j] = std::min(a, b);
      out.observation.high[j] = std::max(a, b);
    }
  }
  // clip_reward and sticky_actions keep the spec.
  return out;
}

// What every wrapper shares: the inner set, its own spec, and which envs' steps failed.
class WrapperSet : public EnvSet {
 public:
  WrapperSet(std::unique_ptr<EnvSet> inner, EnvSpec spec)
      : inner_(std::move(inner)),
        spec_(std::move(spec)),
        in_obs_bytes_(static_cast<size_t>(inner_->spec().observation.byte_size())),
        out_obs_bytes_(static_cast<size_t>(spec_.observation.byte_size())) {}

  const EnvSpec& spec() const override { return spec_; }
  uint32_t size() const override { return inner_->size(); }

 protected:
  // Runs `call` on the inner set; then failed_[i] says whether the step of env call.begin + i failed.
  void run_inner(const EnvSetCall& call, std::vector<EnvError>& errors) {
    const size_t before = errors.size();
    inner_->run(call, errors);
    failed_.assign(call.count, 0);
    for (size_t k = before; k < errors.size(); ++k) {
      const uint32_t env = errors[k].env;
      if (env >= call.begin && env - call.begin < call.count) failed_[env - call.begin] = 1;
    }
  }

  // `call` with the inner observations written to scratch_ instead (a wrapper that reshapes them).
  EnvSetCall into_scratch(const EnvSetCall& call) {
    scratch_.resize(call.count * in_obs_bytes_);
    EnvSetCall inner = call;
    inner.observations = scratch_.data();
    return inner;
  }

  std::unique_ptr<EnvSet> inner_;
  EnvSpec spec_;
  size_t in_obs_bytes_ = 0;
  size_t out_obs_bytes_ = 0;
  std::vector<uint8_t> failed_;
  std::vector<uint8_t> scratch_;
};

class FrameStack final : public WrapperSet {
 public:
  FrameStack(std::unique_ptr<EnvSet> inner, EnvSpec spec, int n) : WrapperSet(std::move(inner), std::move(spec)), n_(n) {
    const Space& in = inner_->spec().observation;
    chunk_bytes_ = static_cast<size_t>(in.shape.back()) * element_bytes(in);
    rows_ = chunk_bytes_ == 0 ? 0 : in_obs_bytes_ / chunk_bytes_;
    frames_.assign(size() * static_cast<size_t>(n_) * in_obs_bytes_, 0);
    oldest_.assign(size(), 0);
  }

  void run(const EnvSetCall& call, std::vector<EnvError>& errors) override {
    check_call_range(call, size());
    run_inner(into_scratch(call), errors);
    for (uint32_t i = 0; i < call.count; ++i) {
      const uint32_t e = call.begin + i;
      const uint8_t* frame = scratch_.data() + i * in_obs_bytes_;
      if (call.ops[i] == EnvOp::kReset) {
        for (int j = 0; j < n_; ++j) std::memcpy(slot(e, j), frame, in_obs_bytes_);
        oldest_[e] = 0;
      } else if (call.ops[i] == EnvOp::kStep && !failed_[i]) {
        std::memcpy(slot(e, oldest_[e]), frame, in_obs_bytes_);  // the newest replaces the oldest
        oldest_[e] = (oldest_[e] + 1) % n_;
      } else {
        continue;  // skipped, or failed: the outer observation stays
      }
      uint8_t* out = call.observations + i * out_obs_bytes_;
      for (size_t row = 0; row < rows_; ++row) {
        for (int j = 0; j < n_; ++j) {
          std::memcpy(out + (row * n_ + j) * chunk_bytes_, slot(e, (oldest_[e] + j) % n_) + row * chunk_bytes_,
                      chunk_bytes_);
        }
      }
    }
  }

 private:
  uint8_t* slot(uint32_t env, int j) { return frames_.data() + (static_cast<size_t>(env) * n_ + j) * in_obs_bytes_; }

  int n_;
  size_t chunk_bytes_ = 0;  // one frame's last axis at one position
  size_t rows_ = 0;         // positions of the other axes
  std::vector<uint8_t> frames_;  // per env, n frames in a ring
  std::vector<int> oldest_;      // per env, the ring slot of the oldest frame
};

class ActionRepeat final : public WrapperSet {
 public:
  ActionRepeat(std::unique_ptr<EnvSet> inner, EnvSpec spec, int k, bool pool)
      : WrapperSet(std::move(inner), std::move(spec)), k_(k), pool_(pool) {}

  void run(const EnvSetCall& call, std::vector<EnvError>& errors) override {
    check_call_range(call, size());
    const uint32_t n = call.count;
    rewards_.resize(n);
    flags_.resize(n);
    ops_.assign(call.ops, call.ops + n);
    sums_.assign(n, 0.f);
    env_sums_.assign(n, 0.f);
    ends_.assign(n, 0);
    frames_.assign(n, 0);
    last_.assign(n, 0);
    failed_any_.assign(n, 0);
    if (pool_) {
      for (auto& b : pooled_) b.resize(n * in_obs_bytes_);
    }
    for (int j = 0; j < k_; ++j) {
      if (j > 0) {
        bool any = false;
        for (uint32_t i = 0; i < n; ++i) {
          ops_[i] = call.ops[i] == EnvOp::kStep && !ends_[i] ? EnvOp::kStep : EnvOp::kSkip;
          any = any || ops_[i] == EnvOp::kStep;
        }
        if (!any) break;
      }
      EnvSetCall inner = call;
      inner.ops = ops_.data();
      inner.seeds = j == 0 ? call.seeds : nullptr;
      inner.observations = pool_ ? pooled_[j % 2].data() : call.observations;
      inner.rewards = rewards_.data();
      inner.flags = flags_.data();
      if (call.env_rewards) {
        env_rewards_.assign(n, std::nanf(""));
        inner.env_rewards = env_rewards_.data();
      }
      run_inner(inner, errors);
      for (uint32_t i = 0; i < n; ++i) {
        if (ops_[i] == EnvOp::kSkip) continue;
        ++frames_[i];
        last_[i] = j % 2;
        if (ops_[i] == EnvOp::kReset) {
          ends_[i] = kFirst;  // a reset is not repeated
          continue;
        }
        sums_[i] += rewards_[i];
        if (call.env_rewards) env_sums_[i] += std::isnan(env_rewards_[i]) ? rewards_[i] : env_rewards_[i];
        if (failed_[i]) failed_any_[i] = 1;
        ends_[i] |= flags_[i] & (kTerminated | kTruncated);
      }
    }
    for (uint32_t i = 0; i < n; ++i) {
      if (call.ops[i] == EnvOp::kSkip) continue;
      const bool reset = call.ops[i] == EnvOp::kReset;
      call.rewards[i] = reset || failed_any_[i] ? 0.f : sums_[i];
      if (call.env_rewards && !reset && !failed_any_[i]) call.env_rewards[i] = env_sums_[i];
      call.flags[i] = reset ? uint8_t{kFirst} : failed_any_[i] ? uint8_t{kTruncated} : ends_[i];
      if (pool_ && !failed_any_[i]) write_pooled(i, call.observations + i * out_obs_bytes_);
    }
  }

 private:
  // The max of the last two frames of env i's outer step (its only frame when it had one).
  void write_pooled(uint32_t i, uint8_t* out) const {
    const uint8_t* a = pooled_[last_[i]].data() + i * in_obs_bytes_;
    if (frames_[i] < 2) {
      std::memcpy(out, a, in_obs_bytes_);
      return;
    }
    const uint8_t* b = pooled_[1 - last_[i]].data() + i * in_obs_bytes_;
    if (spec_.observation.dtype == DType::kUInt8) {
      for (size_t x = 0; x < in_obs_bytes_; ++x) out[x] = std::max(a[x], b[x]);
      return;
    }
    for (size_t x = 0; x < in_obs_bytes_; x += sizeof(float)) {
      float fa, fb;
      std::memcpy(&fa, a + x, sizeof fa);
      std::memcpy(&fb, b + x, sizeof fb);
      const float m = std::max(fa, fb);
      std::memcpy(out + x, &m, sizeof m);
    }
  }

  int k_;
  bool pool_;
  std::vector<float> rewards_, sums_, env_rewards_, env_sums_;  // env_: the env's own rewards
  std::vector<uint8_t> flags_, ends_, last_, failed_any_;
  std::vector<int> frames_;  // inner frames of this outer step
  std::vector<EnvOp> ops_;
  std::vector<uint8_t> pooled_[2];  // inner observations of even and odd repeats
};

class TimeLimit final : public WrapperSet {
 public:
  TimeLimit(std::unique_ptr<EnvSet> inner, EnvSpec spec, int64_t max_steps)
      : WrapperSet(std::move(inner), std::move(spec)), max_steps_(max_steps), steps_(size(), 0) {}

  void run(const EnvSetCall& call, std::vector<EnvError>& errors) override {
    check_call_range(call, size());
    run_inner(call, errors);
    for (uint32_t i = 0; i < call.count; ++i) {
      const uint32_t e = call.begin + i;
      if (call.ops[i] == EnvOp::kReset) steps_[e] = 0;
      if (call.ops[i] != EnvOp::kStep || failed_[i]) continue;
      // An episode that ended in a terminal state at the limit is reported terminated only.
      if (++steps_[e] >= max_steps_ && !(call.flags[i] & (kTerminated | kTruncated))) call.flags[i] |= kTruncated;
    }
  }

 private:
  int64_t max_steps_;
  std::vector<int64_t> steps_;  // per env, steps since its reset
};

class ClipReward final : public WrapperSet {
 public:
  ClipReward(std::unique_ptr<EnvSet> inner, EnvSpec spec, float low, float high)
      : WrapperSet(std::move(inner), std::move(spec)), low_(low), high_(high) {}

  void run(const EnvSetCall& call, std::vector<EnvError>& errors) override {
    check_call_range(call, size());
    run_inner(call, errors);
    for (uint32_t i = 0; i < call.count; ++i) {
      if (call.ops[i] != EnvOp::kStep) continue;
      // The env's own reward stays for the returns, unless an inner wrapper wrote it already.
      if (call.env_rewards && std::isnan(call.env_rewards[i])) call.env_rewards[i] = call.rewards[i];
      call.rewards[i] = std::clamp(call.rewards[i], low_, high_);
    }
  }

 private:
  float low_, high_;
};

class StickyActions final : public WrapperSet {
 public:
  StickyActions(std::unique_ptr<EnvSet> inner, EnvSpec spec, double p, uint64_t first_seed, size_t position)
      : WrapperSet(std::move(inner), std::move(spec)),
        p_(p),
        position_(static_cast<uint32_t>(position)),
        action_bytes_(static_cast<size_t>(spec_.action.byte_size())) {
    for (uint32_t e = 0; e < size(); ++e) generators_.push_back(generator(first_seed + e));
    previous_.assign(size() * action_bytes_, 0);
  }

  void run(const EnvSetCall& call, std::vector<EnvError>& errors) override {
    check_call_range(call, size());
    if (call.actions) actions_.assign(call.actions, call.actions + call.count * action_bytes_);
    for (uint32_t i = 0; i < call.count; ++i) {
      const uint32_t e = call.begin + i;
      uint8_t* previous = previous_.data() + e * action_bytes_;
      if (call.ops[i] == EnvOp::kReset) {
        if (call.seeds) generators_[e] = generator(call.seeds[i]);
        std::memset(previous, 0, action_bytes_);  // the previous action at a reset is 0 (all zeros)
      } else if (call.ops[i] == EnvOp::kStep) {
        uint8_t* action = actions_.data() + i * action_bytes_;
        if (generators_[e].next_double() < p_) std::memcpy(action, previous, action_bytes_);
        std::memcpy(previous, action, action_bytes_);
      }
    }
    EnvSetCall inner = call;
    inner.actions = call.actions ? actions_.data() : nullptr;
    run_inner(inner, errors);
  }

 private:
  // Its own stream, apart from the env's (which a reset seeds from the same number).
  Pcg64 generator(uint64_t seed) const {
    constexpr uint32_t kStickySalt = 0x5717C4u;
    return Pcg64(SeedSequence({static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32), kStickySalt, position_}));
  }

  double p_;
  uint32_t position_;
  size_t action_bytes_;
  std::vector<Pcg64> generators_;  // per env
  std::vector<uint8_t> previous_;  // per env, the action it last applied
  std::vector<uint8_t> actions_;   // the call's actions, some replaced
};

class ScaleObs final : public WrapperSet {
 public:
  ScaleObs(std::unique_ptr<EnvSet> inner, EnvSpec spec, double scale, double offset)
      : WrapperSet(std::move(inner), std::move(spec)), scale_(scale), offset_(offset) {}

  void run(const EnvSetCall& call, std::vector<EnvError>& errors) override {
    check_call_range(call, size());
    run_inner(into_scratch(call), errors);
    const bool bytes = inner_->spec().observation.dtype == DType::kUInt8;
    const size_t numel = out_obs_bytes_ / sizeof(float);
    for (uint32_t i = 0; i < call.count; ++i) {
      if (call.ops[i] == EnvOp::kSkip || (call.ops[i] == EnvOp::kStep && failed_[i])) continue;
      const uint8_t* in = scratch_.data() + i * in_obs_bytes_;
      uint8_t* out = call.observations + i * out_obs_bytes_;
      for (size_t x = 0; x < numel; ++x) {
        float v;
        if (bytes) {
          v = in[x];
        } else {
          std::memcpy(&v, in + x * sizeof v, sizeof v);
        }
        const auto scaled = static_cast<float>(v * scale_ + offset_);
        std::memcpy(out + x * sizeof scaled, &scaled, sizeof scaled);
      }
    }
  }

 private:
  double scale_, offset_;
};

std::unique_ptr<EnvSet> apply_set(std::unique_ptr<EnvSet> in, const WrapperSpec& w, size_t position,
                                  uint64_t first_seed) {
  EnvSpec spec = apply_spec(in->spec(), w, position);
  if (w.kind == "frame_stack") return std::make_unique<FrameStack>(std::move(in), std::move(spec), static_cast<int>(w.param("n")));
  if (w.kind == "action_repeat") {
    const bool pool = pools(in->spec(), w);
    return std::make_unique<ActionRepeat>(std::move(in), std::move(spec), static_cast<int>(w.param("k")), pool);
  }
  if (w.kind == "time_limit") {
    return std::make_unique<TimeLimit>(std::move(in), std::move(spec), static_cast<int64_t>(w.param("max_steps")));
  }
  if (w.kind == "clip_reward") {
    return std::make_unique<ClipReward>(std::move(in), std::move(spec), static_cast<float>(w.param("low")),
                                        static_cast<float>(w.param("high")));
  }
  if (w.kind == "sticky_actions") {
    return std::make_unique<StickyActions>(std::move(in), std::move(spec), w.param("p"), first_seed, position);
  }
  if (w.kind == "scale_obs") {
    return std::make_unique<ScaleObs>(std::move(in), std::move(spec), w.param("scale"), w.param("offset"));
  }
  throw std::logic_error("wrap: no wrapper of kind " + w.kind);
}

void check_list(const WrapperList& wrappers) {
  const std::string problem = wrapper_list_problem(wrappers);
  if (!problem.empty()) throw std::invalid_argument(problem);
}

}  // namespace

EnvSpec wrapped_spec(const EnvSpec& base, const WrapperList& wrappers) {
  check_list(wrappers);
  EnvSpec spec = base;
  for (size_t i = 0; i < wrappers.size(); ++i) spec = apply_spec(spec, wrappers[i], i);
  return spec;
}

std::unique_ptr<EnvSet> wrap(std::unique_ptr<EnvSet> set, const WrapperList& wrappers, uint64_t first_seed) {
  check_list(wrappers);
  for (size_t i = 0; i < wrappers.size(); ++i) set = apply_set(std::move(set), wrappers[i], i, first_seed);
  return set;
}

}  // namespace moonseed::envs
