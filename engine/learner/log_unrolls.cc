#include "engine/learner/log_unrolls.h"

#include <filesystem>
#include <stdexcept>

#include "base/text.h"
#include "envs/env.h"

namespace moonseed::engine {
namespace {

std::string log_directory(const std::string& path) {
  const std::filesystem::path experience = std::filesystem::path(path) / "experience";
  std::error_code ec;
  return std::filesystem::is_directory(experience, ec) ? experience.string() : path;
}

}  // namespace

LogUnrolls::LogUnrolls(const std::string& path, const envs::EnvSpec& spec, int64_t unroll_length)
    : directory_(log_directory(path)), shape_(UnrollShape::from_spec(spec, unroll_length)) {
  try {
    reader_ = std::make_unique<explog::LogReader>(directory_);
  } catch (const std::exception& e) {
    throw std::invalid_argument(std::string("warm start: cannot read the experience log: ") + e.what());
  }
  const explog::LogSchema& schema = reader_->schema();
  auto column = [&](const std::string& name, explog::DType dtype, const std::vector<int64_t>& shape) {
    for (size_t i = 0; i < schema.columns.size(); ++i) {
      const explog::ColumnSpec& c = schema.columns[i];
      if (c.name != name) continue;
      if (c.dtype != dtype || c.shape != shape) {
        throw std::invalid_argument("warm start: column '" + name + "' of " + directory_ + " is " +
                                    explog::dtype_name(c.dtype) + base::shape_text(c.shape, ",") + ", but " + spec.id +
                                    " needs " + explog::dtype_name(dtype) + base::shape_text(shape, ",") +
                                    " (a log of another env?)");
      }
      return i;
    }
    throw std::invalid_argument("warm start: " + directory_ + " has no column '" + name +
                                "' (not a log recorded by a learner?)");
  };
  const bool discrete = spec.action.kind == envs::SpaceKind::kDiscrete;
  observation_column_ = column("observation",
                               spec.observation.dtype == envs::DType::kUInt8 ? explog::DType::kU8
                                                                            : explog::DType::kF32,
                               spec.observation.shape);
  action_column_ = column("action", discrete ? explog::DType::kI64 : explog::DType::kF32,
                          discrete ? std::vector<int64_t>{} : std::vector<int64_t>{shape_.action_dim});
  reward_column_ = column("reward", explog::DType::kF32, {});
  logp_column_ = column("behaviour_logp", explog::DType::kF32, {});
  version_column_ = column("policy_version", explog::DType::kI64, {});
  config_column_ = column("config_version", explog::DType::kI64, {});
  pool_ = UnrollPool::create(shape_);
  rewind();
}

void LogUnrolls::rewind() {
  streams_.clear();
  stores_.clear();
  ready_.clear();
  steps_read_ = 0;
  cursor_.emplace(reader_->scan());
}

std::vector<std::string> LogUnrolls::problems() const {
  std::vector<std::string> out;
  for (const explog::LogProblem& p : reader_->problems()) out.push_back(p.message);
  if (cursor_) {
    for (const explog::LogProblem& p : cursor_->problems()) out.push_back(p.message);
  }
  return out;
}

LogUnrolls::Stream& LogUnrolls::stream_for(const explog::RecordMeta& meta) {
  auto [it, inserted] = streams_.try_emplace({meta.actor_id, meta.env_id});
  if (inserted) {
    it->second.slot = static_cast<int>(stores_.size());
    stores_.push_back(std::make_unique<UnrollStore>(1, pool_));
  }
  return it->second;
}

void LogUnrolls::feed(const explog::Record& r) {
  Stream& s = stream_for(r.meta);
  UnrollStore& store = *stores_[static_cast<size_t>(s.slot)];
  const bool is_first = (r.meta.flags & explog::kIsFirst) != 0;
  const bool continues = (r.meta.episode_id == s.episode_id && r.meta.first_step == s.next_step && !s.ended) ||
                         (s.ended && is_first && s.episode_id >= 0);
  if (!continues) store.reset_slot(0);  // a jump: start the stream afresh
  const int64_t obs_bytes = shape_.observation_bytes();
  const int64_t action_bytes = shape_.action_bytes();
  const auto* obs = r.columns[observation_column_].data();
  const auto* actions = r.columns[action_column_].data();
  const auto* rewards = reinterpret_cast<const float*>(r.columns[reward_column_].data());
  const auto* logps = reinterpret_cast<const float*>(r.columns[logp_column_].data());
  const auto* versions = reinterpret_cast<const int64_t*>(r.columns[version_column_].data());
  const auto* configs = reinterpret_cast<const uint64_t*>(r.columns[config_column_].data());
  for (int32_t i = 0; i < r.meta.steps; ++i) {
    uint8_t flags = 0;
    if (i == 0 && is_first) flags |= envs::kFirst;
    if (i == r.meta.steps - 1 && (r.meta.flags & explog::kIsLast)) {
      // Both may be set (terminated on the step the time limit came).
      if (r.meta.flags & explog::kTerminated) flags |= envs::kTerminated;
      if (r.meta.flags & explog::kTruncated) flags |= envs::kTruncated;
      if (!(flags & (envs::kTerminated | envs::kTruncated))) flags |= envs::kTerminated;
    }
    const float reward = (i == 0 && !continues) ? 0.f : s.prev_reward;
    if (UnrollPtr done = store.observe(0, obs + i * obs_bytes, reward, flags, configs[i])) {
      done->slot = s.slot;  // the stream's index, for a consumer that keeps streams apart
      ready_.push_back(std::move(done));
    }
    store.act(0, actions + i * action_bytes, logps[i], versions[i]);
    s.prev_reward = rewards[i];
  }
  steps_read_ += r.meta.steps;
  s.episode_id = r.meta.episode_id;
  s.next_step = r.meta.first_step + r.meta.steps;
  s.ended = (r.meta.flags & explog::kIsLast) != 0;
}

UnrollPtr LogUnrolls::next() {
  while (ready_.empty()) {
    std::optional<explog::Record> record = cursor_->next();
    if (!record) return UnrollPtr();
    feed(*record);
  }
  UnrollPtr u = std::move(ready_.front());
  ready_.pop_front();
  return u;
}

}  // namespace moonseed::engine
