// Decoding: frame_extent() and decode() of rpc/codec.h. Every check that
// untrusted bytes need happens here: the segment table against FrameLimits
// before anything is read, Cap'n Proto's traversal and nesting limits while
// reading, and our own size checks before any copy.
#include <capnp/message.h>
#include <kj/exception.h>

#include <exception>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "rpc/codec.h"
#include "rpc/codec_internal.h"
#include "rpc/moonseed.capnp.h"

namespace moonseed::rpc {
namespace {

using capnp::word;
using codec_internal::read_u32;
using codec_internal::table_bytes;

// Thrown inside decode_into only, to leave a half-read frame; never escapes.
struct Invalid {
  std::string reason;
};

template <typename T>
T& hold(Message& out) {
  if (!std::holds_alternative<T>(out)) out.template emplace<T>();
  return std::get<T>(out);
}

void read_text(capnp::Text::Reader r, std::string& out) { out.assign(r.cStr(), r.size()); }

void read_data(capnp::Data::Reader r, std::vector<uint8_t>& out) {
  out.assign(r.begin(), r.end());
}

template <typename T, typename ListReader>
void read_list(ListReader r, std::vector<T>& out) {
  out.resize(r.size());
  for (uint i = 0; i < r.size(); ++i) out[i] = r[i];
}

void read_space(wire::Space::Reader r, envs::Space& out, const char* which) {
  switch (r.getKind()) {
    case wire::SpaceKind::DISCRETE: out.kind = envs::SpaceKind::kDiscrete; break;
    case wire::SpaceKind::BOX: out.kind = envs::SpaceKind::kBox; break;
    default:
      throw Invalid{std::string(which) + " space has unknown kind " +
                    std::to_string(static_cast<unsigned>(r.getKind()))};
  }
  switch (r.getDtype()) {
    case wire::DType::FLOAT32: out.dtype = envs::DType::kFloat32; break;
    case wire::DType::UINT8: out.dtype = envs::DType::kUInt8; break;
    default:
      throw Invalid{std::string(which) + " space has unknown dtype " +
                    std::to_string(static_cast<unsigned>(r.getDtype()))};
  }
  out.n = r.getN();
  read_list(r.getShape(), out.shape);
  read_list(r.getLow(), out.low);
  read_list(r.getHigh(), out.high);
}

void read_hello(wire::Hello::Reader r, Hello& out) {
  out.protocol_version = r.getProtocolVersion();
  out.actor_id = r.getActorId();
  read_text(r.getHost(), out.host);
  out.pid = r.getPid();
  read_text(r.getAuthToken(), out.auth_token);
  out.any_rank = r.getAnyRank();
}

void read_welcome(wire::Welcome::Reader r, Welcome& out) {
  read_text(r.getRunId(), out.run_id);
  out.actor_id = r.getActorId();
  read_text(r.getEnvId(), out.env_id);
  auto options = r.getEnvOptions();
  out.env_options.resize(options.size());
  for (uint i = 0; i < options.size(); ++i) {
    auto option = options[i];
    read_text(option.getKey(), out.env_options[i].first);
    out.env_options[i].second = option.getValue();
  }
  auto spec = r.getEnvSpec();
  read_text(spec.getId(), out.env_spec.id);
  read_space(spec.getObservation(), out.env_spec.observation, "observation");
  read_space(spec.getAction(), out.env_spec.action, "action");
  out.env_spec.max_episode_steps = spec.getMaxEpisodeSteps();
  out.num_envs = r.getNumEnvs();
  out.num_groups = r.getNumGroups();
  out.seed = r.getSeed();
  out.config_version = r.getConfigVersion();
  out.unroll_length = r.getUnrollLength();
  auto payload = r.getPayload();
  out.payload.assign(reinterpret_cast<const char*>(payload.begin()), payload.size());
  read_text(r.getEnvModel(), out.env_files.model);
  read_text(r.getEnvPlugin(), out.env_files.plugin);
  read_text(r.getEnvPython(), out.env_files.python);
  read_text(r.getEnvWrappers(), out.env_wrappers);
}

void read_step_batch(wire::StepBatch::Reader r, StepBatch& out) {
  out.seq = r.getSeq();
  out.env_begin = r.getEnvBegin();
  out.count = r.getCount();
  out.config_version = r.getConfigVersion();
  auto observations = r.getObservations();
  auto rewards = r.getRewards();
  auto flags = r.getFlags();
  auto env_rewards = r.getEnvRewards();
  // Sizes are checked before copying so a lying header costs no allocation.
  if (out.count == 0) throw Invalid{"StepBatch with count 0"};
  if (rewards.size() != out.count || flags.size() != out.count) {
    throw Invalid{"StepBatch count " + std::to_string(out.count) + " but " +
                  std::to_string(rewards.size()) + " rewards and " +
                  std::to_string(flags.size()) + " flags"};
  }
  if (env_rewards.size() != 0 && env_rewards.size() != out.count) {
    throw Invalid{"StepBatch count " + std::to_string(out.count) + " but " +
                  std::to_string(env_rewards.size()) + " env rewards (0 or count)"};
  }
  if (observations.size() == 0 || observations.size() % out.count != 0) {
    throw Invalid{"StepBatch count " + std::to_string(out.count) + " but " +
                  std::to_string(observations.size()) +
                  " observation bytes (not a positive multiple of count)"};
  }
  read_data(observations, out.observations);
  read_list(rewards, out.rewards);
  read_data(flags, out.flags);
  read_list(env_rewards, out.env_rewards);
}

bool decode_frame(const kj::ArrayPtr<const kj::ArrayPtr<const word>> segments,
                  const FrameLimits& limits, Message& out, DecodeError& error) {
  capnp::ReaderOptions options;
  options.traversalLimitInWords = limits.traversal_limit_words;
  options.nestingLimit = limits.nesting_limit;
  try {
    capnp::SegmentArrayMessageReader reader(segments, options);
    auto frame = reader.getRoot<wire::Frame>();
    switch (frame.which()) {
      case wire::Frame::HELLO: read_hello(frame.getHello(), hold<Hello>(out)); break;
      case wire::Frame::WELCOME: read_welcome(frame.getWelcome(), hold<Welcome>(out)); break;
      case wire::Frame::STEP_BATCH:
        read_step_batch(frame.getStepBatch(), hold<StepBatch>(out));
        break;
      case wire::Frame::ACTION_BATCH: {
        auto r = frame.getActionBatch();
        auto& batch = hold<ActionBatch>(out);
        batch.seq = r.getSeq();
        read_data(r.getActions(), batch.actions);
        break;
      }
      case wire::Frame::CONFIG_UPDATE: {
        auto r = frame.getConfigUpdate();
        auto& update = hold<ConfigUpdate>(out);
        update.config_version = r.getConfigVersion();
        auto payload = r.getPayload();
        update.payload.assign(reinterpret_cast<const char*>(payload.begin()), payload.size());
        break;
      }
      case wire::Frame::BYE: {
        auto r = frame.getBye();
        auto& bye = hold<Bye>(out);
        read_text(r.getReason(), bye.reason);
        bye.reconnect = r.getReconnect();
        read_text(r.getRedirect(), bye.redirect);
        break;
      }
      case wire::Frame::ACTOR_NOTICE: {
        auto r = frame.getActorNotice();
        auto& notice = hold<ActorNotice>(out);
        notice.config_version = r.getConfigVersion();
        read_text(r.getText(), notice.text);
        break;
      }
      default:
        error.reason = "unknown frame type " + std::to_string(static_cast<unsigned>(frame.which()));
        return false;
    }
    return true;
  } catch (const Invalid& e) {
    error.reason = e.reason;
  } catch (const kj::Exception& e) {
    error.reason = "malformed message: " + std::string(e.getDescription().cStr());
  } catch (const std::exception& e) {
    error.reason = std::string("malformed message: ") + e.what();
  }
  return false;
}

}  // namespace

FrameExtent frame_extent(const uint8_t* data, size_t available, const FrameLimits& limits) {
  FrameExtent extent;
  if (available < 8) {
    extent.bytes = 8;
    return extent;
  }
  const uint32_t count_minus_one = read_u32(data);
  if (count_minus_one >= limits.max_segments) {
    extent.status = FrameExtent::Status::kInvalid;
    extent.error = "segment table claims " + std::to_string(uint64_t{count_minus_one} + 1) +
                   " segments, limit " + std::to_string(limits.max_segments);
    return extent;
  }
  const uint32_t count = count_minus_one + 1;
  const size_t table = table_bytes(count);
  if (available < table) {
    extent.bytes = table;
    return extent;
  }
  uint64_t words = 0;  // 512 segments of < 2^32 words cannot overflow
  for (uint32_t i = 0; i < count; ++i) words += read_u32(data + 4 + 4 * i);
  const uint64_t total = table + words * sizeof(word);
  if (total > limits.max_frame_bytes) {
    extent.status = FrameExtent::Status::kInvalid;
    extent.error = "frame of " + std::to_string(total) + " bytes exceeds max_frame_bytes " +
                   std::to_string(limits.max_frame_bytes);
    return extent;
  }
  if (read_u32(data + 4) == 0) {
    extent.status = FrameExtent::Status::kInvalid;
    extent.error = "first segment is empty (no root pointer)";
    return extent;
  }
  extent.status = FrameExtent::Status::kKnown;
  extent.bytes = static_cast<size_t>(total);
  return extent;
}

bool decode_into(const uint8_t* data, size_t size, const FrameLimits& limits, Message& out,
                 DecodeError& error) {
  const FrameExtent extent = frame_extent(data, size, limits);
  switch (extent.status) {
    case FrameExtent::Status::kInvalid: error.reason = extent.error; return false;
    case FrameExtent::Status::kNeedHeader:
      error.reason = "truncated frame: segment table needs " + std::to_string(extent.bytes) +
                     " bytes, got " + std::to_string(size);
      return false;
    case FrameExtent::Status::kKnown: break;
  }
  if (extent.bytes != size) {
    error.reason = extent.bytes > size
                       ? "truncated frame: needs " + std::to_string(extent.bytes) +
                             " bytes, got " + std::to_string(size)
                       : std::to_string(size - extent.bytes) + " bytes after the end of the frame";
    return false;
  }

  std::vector<uint64_t> aligned;  // only for input that is not 8-byte aligned
  const uint8_t* base = data;
  if (reinterpret_cast<uintptr_t>(data) % alignof(word) != 0) {
    aligned.resize(size / sizeof(uint64_t));
    std::memcpy(aligned.data(), data, size);
    base = reinterpret_cast<const uint8_t*>(aligned.data());
  }

  const uint32_t count = read_u32(base) + 1;
  constexpr uint32_t kInline = 8;
  kj::ArrayPtr<const word> inline_segments[kInline];
  std::vector<kj::ArrayPtr<const word>> many;
  kj::ArrayPtr<const word>* segments = inline_segments;
  if (count > kInline) {
    many.resize(count);
    segments = many.data();
  }
  const word* at = reinterpret_cast<const word*>(base + table_bytes(count));
  for (uint32_t i = 0; i < count; ++i) {
    const uint32_t words = read_u32(base + 4 + 4 * i);
    segments[i] = kj::arrayPtr(at, words);
    at += words;
  }
  return decode_frame(kj::arrayPtr(segments, count), limits, out, error);
}

DecodeResult decode(const uint8_t* data, size_t size, const FrameLimits& limits) {
  Message message;
  DecodeError error;
  if (!decode_into(data, size, limits, message, error)) return error;
  return std::visit([](auto&& m) -> DecodeResult { return std::move(m); }, std::move(message));
}

const char* message_name(const Message& message) {
  static const char* const kNames[] = {"Hello",        "Welcome", "StepBatch",  "ActionBatch",
                                       "ConfigUpdate", "Bye",     "ActorNotice"};
  static_assert(std::variant_size_v<Message> == 7, "name every message type");
  return kNames[message.index()];
}

}  // namespace moonseed::rpc
