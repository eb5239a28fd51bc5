#include "rpc/codec.h"

#include <capnp/message.h>
#include <kj/exception.h>

#include <algorithm>
#include <cstring>
#include <exception>
#include <memory>
#include <type_traits>
#include <utility>

#include "rpc/moonseed.capnp.h"

namespace moonseed::rpc {
namespace {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "the segment table is written with memcpy: little-endian hosts only");

using capnp::word;

uint32_t read_u32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

void write_u32(uint8_t* p, uint32_t v) { std::memcpy(p, &v, sizeof v); }

size_t table_bytes(uint32_t segment_count) {
  return (size_t{4} * (segment_count + 1) + 7) & ~size_t{7};
}

// Words for a Text or Data blob, plus one word for slack. Estimates only need
// to be upper bounds most of the time: an underestimate costs a second copy.
size_t blob_words(size_t bytes) { return (bytes + 1 + 7) / 8 + 1; }

// A MessageBuilder whose first segment is carved out of the output vector,
// right after room for a one-segment table, so the usual single-segment frame
// is built in place with no copy. Larger-than-estimated messages spill into
// heap segments and are then copied out once by finish().
class FrameBuilder : public capnp::MessageBuilder {
 public:
  FrameBuilder(std::vector<uint8_t>& frame, size_t estimate_words)
      : frame_(frame), estimate_words_(estimate_words) {
    frame_.clear();
    frame_.resize(8 + estimate_words_ * sizeof(word));  // value-initialised: zeroed
  }

  kj::ArrayPtr<word> allocateSegment(uint minimum_words) override {
    if (!first_given_ && minimum_words <= estimate_words_) {
      first_given_ = true;
      uint8_t* start = frame_.data() + 8;
      if (reinterpret_cast<uintptr_t>(start) % alignof(word) == 0) {
        return kj::arrayPtr(reinterpret_cast<word*>(start), estimate_words_);
      }
    }
    first_given_ = true;
    size_t words = std::max<size_t>(minimum_words, estimate_words_);
    auto segment = kj::heapArray<word>(words);
    std::memset(segment.begin(), 0, words * sizeof(word));
    kj::ArrayPtr<word> out = segment;
    spill_.push_back(std::move(segment));
    return out;
  }

  // Writes the segment table and trims the vector to the frame.
  void finish() {
    auto segments = getSegmentsForOutput();
    const uint8_t* in_place = frame_.data() + 8;
    if (segments.size() == 1 &&
        reinterpret_cast<const uint8_t*>(segments[0].begin()) == in_place) {
      write_u32(frame_.data(), 0);
      write_u32(frame_.data() + 4, static_cast<uint32_t>(segments[0].size()));
      frame_.resize(8 + segments[0].size() * sizeof(word));
      return;
    }
    const auto count = static_cast<uint32_t>(segments.size());
    size_t total = table_bytes(count);
    for (auto segment : segments) total += segment.size() * sizeof(word);
    std::vector<uint8_t> out(total);
    write_u32(out.data(), count - 1);
    for (uint32_t i = 0; i < count; ++i) {
      write_u32(out.data() + 4 + 4 * i, static_cast<uint32_t>(segments[i].size()));
    }
    size_t at = table_bytes(count);
    for (auto segment : segments) {
      std::memcpy(out.data() + at, segment.begin(), segment.size() * sizeof(word));
      at += segment.size() * sizeof(word);
    }
    frame_.swap(out);
  }

 private:
  std::vector<uint8_t>& frame_;
  size_t estimate_words_;
  bool first_given_ = false;
  std::vector<kj::Array<word>> spill_;
};

// Root pointer, Frame struct and the message struct's fixed part.
constexpr size_t kFixedWords = 24;

size_t space_words(const envs::Space& s) {
  return 8 + s.shape.size() + (s.low.size() + s.high.size()) / 2 + 4;
}

kj::ArrayPtr<const kj::byte> bytes_of(const std::vector<uint8_t>& v) {
  return kj::arrayPtr(reinterpret_cast<const kj::byte*>(v.data()), v.size());
}

kj::ArrayPtr<const kj::byte> bytes_of(const std::string& s) {
  return kj::arrayPtr(reinterpret_cast<const kj::byte*>(s.data()), s.size());
}

capnp::Text::Reader text_of(const std::string& s) {
  return capnp::Text::Reader(s.data(), s.size());
}

void build_space(const envs::Space& s, wire::Space::Builder b) {
  b.setKind(s.kind == envs::SpaceKind::kDiscrete ? wire::SpaceKind::DISCRETE
                                                 : wire::SpaceKind::BOX);
  b.setDtype(s.dtype == envs::DType::kUInt8 ? wire::DType::UINT8 : wire::DType::FLOAT32);
  b.setN(s.n);
  auto shape = b.initShape(static_cast<uint>(s.shape.size()));
  for (size_t i = 0; i < s.shape.size(); ++i) shape.set(static_cast<uint>(i), s.shape[i]);
  auto low = b.initLow(static_cast<uint>(s.low.size()));
  for (size_t i = 0; i < s.low.size(); ++i) low.set(static_cast<uint>(i), s.low[i]);
  auto high = b.initHigh(static_cast<uint>(s.high.size()));
  for (size_t i = 0; i < s.high.size(); ++i) high.set(static_cast<uint>(i), s.high[i]);
}

// ---- decoding -------------------------------------------------------------

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
}

void read_step_batch(wire::StepBatch::Reader r, StepBatch& out) {
  out.seq = r.getSeq();
  out.env_begin = r.getEnvBegin();
  out.count = r.getCount();
  out.config_version = r.getConfigVersion();
  auto observations = r.getObservations();
  auto rewards = r.getRewards();
  auto flags = r.getFlags();
  // Sizes are checked before copying so a lying header costs no allocation.
  if (out.count == 0) throw Invalid{"StepBatch with count 0"};
  if (rewards.size() != out.count || flags.size() != out.count) {
    throw Invalid{"StepBatch count " + std::to_string(out.count) + " but " +
                  std::to_string(rewards.size()) + " rewards and " +
                  std::to_string(flags.size()) + " flags"};
  }
  if (observations.size() == 0 || observations.size() % out.count != 0) {
    throw Invalid{"StepBatch count " + std::to_string(out.count) + " but " +
                  std::to_string(observations.size()) +
                  " observation bytes (not a positive multiple of count)"};
  }
  read_data(observations, out.observations);
  read_list(rewards, out.rewards);
  read_data(flags, out.flags);
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
      case wire::Frame::BYE: read_text(frame.getBye().getReason(), hold<Bye>(out).reason); break;
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

template <typename T>
std::vector<uint8_t> encoded(const T& message) {
  std::vector<uint8_t> frame;
  encode(message, frame);
  return frame;
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

namespace {

size_t estimate_words(const Hello& m) {
  return kFixedWords + blob_words(m.host.size()) + blob_words(m.auth_token.size());
}

size_t estimate_words(const Welcome& m) {
  size_t words = kFixedWords * 2 + blob_words(m.run_id.size()) + blob_words(m.env_id.size()) +
                 blob_words(m.env_spec.id.size()) + space_words(m.env_spec.observation) +
                 space_words(m.env_spec.action);
  for (const auto& option : m.env_options) words += 3 + blob_words(option.first.size());
  return words + blob_words(m.payload.size());
}

size_t estimate_words(const StepBatch& m) {
  return kFixedWords + blob_words(m.observations.size()) +
         blob_words(m.rewards.size() * sizeof(float)) + blob_words(m.flags.size());
}

size_t estimate_words(const ActionBatch& m) { return kFixedWords + blob_words(m.actions.size()); }

size_t estimate_words(const ConfigUpdate& m) {
  return kFixedWords + blob_words(m.payload.size());
}

size_t estimate_words(const Bye& m) { return kFixedWords + blob_words(m.reason.size()); }

size_t estimate_words(const ActorNotice& m) { return kFixedWords + blob_words(m.text.size()); }

void build(const Hello& m, wire::Frame::Builder frame) {
  auto b = frame.initHello();
  b.setProtocolVersion(m.protocol_version);
  b.setActorId(m.actor_id);
  b.setHost(text_of(m.host));
  b.setPid(m.pid);
  b.setAuthToken(text_of(m.auth_token));
}

void build(const Welcome& m, wire::Frame::Builder frame) {
  auto b = frame.initWelcome();
  b.setRunId(text_of(m.run_id));
  b.setActorId(m.actor_id);
  b.setEnvId(text_of(m.env_id));
  auto options = b.initEnvOptions(static_cast<uint>(m.env_options.size()));
  for (size_t i = 0; i < m.env_options.size(); ++i) {
    options[static_cast<uint>(i)].setKey(text_of(m.env_options[i].first));
    options[static_cast<uint>(i)].setValue(m.env_options[i].second);
  }
  auto spec = b.initEnvSpec();
  spec.setId(text_of(m.env_spec.id));
  build_space(m.env_spec.observation, spec.initObservation());
  build_space(m.env_spec.action, spec.initAction());
  spec.setMaxEpisodeSteps(m.env_spec.max_episode_steps);
  b.setNumEnvs(m.num_envs);
  b.setNumGroups(m.num_groups);
  b.setSeed(m.seed);
  b.setConfigVersion(m.config_version);
  b.setUnrollLength(m.unroll_length);
  b.setPayload(bytes_of(m.payload));
}

void build(const StepBatch& m, wire::Frame::Builder frame) {
  auto b = frame.initStepBatch();
  b.setSeq(m.seq);
  b.setEnvBegin(m.env_begin);
  b.setCount(m.count);
  b.setConfigVersion(m.config_version);
  b.setObservations(bytes_of(m.observations));
  auto rewards = b.initRewards(static_cast<uint>(m.rewards.size()));
  for (size_t i = 0; i < m.rewards.size(); ++i) rewards.set(static_cast<uint>(i), m.rewards[i]);
  b.setFlags(bytes_of(m.flags));
}

void build(const ActionBatch& m, wire::Frame::Builder frame) {
  auto b = frame.initActionBatch();
  b.setSeq(m.seq);
  b.setActions(bytes_of(m.actions));
}

void build(const ConfigUpdate& m, wire::Frame::Builder frame) {
  auto b = frame.initConfigUpdate();
  b.setConfigVersion(m.config_version);
  b.setPayload(bytes_of(m.payload));
}

void build(const Bye& m, wire::Frame::Builder frame) {
  frame.initBye().setReason(text_of(m.reason));
}

void build(const ActorNotice& m, wire::Frame::Builder frame) {
  auto b = frame.initActorNotice();
  b.setConfigVersion(m.config_version);
  b.setText(text_of(m.text));
}

template <typename T>
void encode_with(const T& message, size_t first_segment_words, std::vector<uint8_t>& frame) {
  FrameBuilder builder(frame, first_segment_words);
  build(message, builder.initRoot<wire::Frame>());
  builder.finish();
}

}  // namespace

void encode(const Hello& m, std::vector<uint8_t>& frame) {
  encode_with(m, estimate_words(m), frame);
}
void encode(const Welcome& m, std::vector<uint8_t>& frame) {
  encode_with(m, estimate_words(m), frame);
}
void encode(const StepBatch& m, std::vector<uint8_t>& frame) {
  encode_with(m, estimate_words(m), frame);
}
void encode(const ActionBatch& m, std::vector<uint8_t>& frame) {
  encode_with(m, estimate_words(m), frame);
}
void encode(const ConfigUpdate& m, std::vector<uint8_t>& frame) {
  encode_with(m, estimate_words(m), frame);
}
void encode(const Bye& m, std::vector<uint8_t>& frame) {
  encode_with(m, estimate_words(m), frame);
}
void encode(const ActorNotice& m, std::vector<uint8_t>& frame) {
  encode_with(m, estimate_words(m), frame);
}

void encode(const Message& message, std::vector<uint8_t>& frame) {
  std::visit([&frame](const auto& m) { encode(m, frame); }, message);
}

std::vector<uint8_t> encode(const Hello& m) { return encoded(m); }
std::vector<uint8_t> encode(const Welcome& m) { return encoded(m); }
std::vector<uint8_t> encode(const StepBatch& m) { return encoded(m); }
std::vector<uint8_t> encode(const ActionBatch& m) { return encoded(m); }
std::vector<uint8_t> encode(const ConfigUpdate& m) { return encoded(m); }
std::vector<uint8_t> encode(const Bye& m) { return encoded(m); }
std::vector<uint8_t> encode(const ActorNotice& m) { return encoded(m); }

namespace detail {

void encode_in_small_segments(const Message& message, size_t segment_words,
                              std::vector<uint8_t>& frame) {
  std::visit([&](const auto& m) { encode_with(m, segment_words, frame); }, message);
}

}  // namespace detail

}  // namespace moonseed::rpc
