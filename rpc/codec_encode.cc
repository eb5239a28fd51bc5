// Encoding: encode() of rpc/codec.h. A message is built straight into the
// caller's vector when its size estimate holds (the common case), so encoding
// costs one pass over the message and no allocation once the vector has grown.
#include <capnp/message.h>

#include <algorithm>
#include <cstring>
#include <utility>
#include <variant>
#include <vector>

#include "rpc/codec.h"
#include "rpc/codec_internal.h"
#include "rpc/moonseed.capnp.h"

namespace moonseed::rpc {
namespace {

using capnp::word;
using codec_internal::table_bytes;
using codec_internal::write_u32;

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

size_t estimate_words(const Hello& m) {
  return kFixedWords + blob_words(m.host.size()) + blob_words(m.auth_token.size());
}

size_t estimate_words(const Welcome& m) {
  size_t words = kFixedWords * 2 + blob_words(m.run_id.size()) + blob_words(m.env_id.size()) +
                 blob_words(m.env_spec.id.size()) + space_words(m.env_spec.observation) +
                 space_words(m.env_spec.action);
  for (const auto& option : m.env_options) words += 3 + blob_words(option.first.size());
  return words + blob_words(m.payload.size()) + blob_words(m.env_files.model.size()) +
         blob_words(m.env_files.plugin.size()) +
         blob_words(m.env_files.python.size()) + blob_words(m.env_wrappers.size());
}

size_t estimate_words(const StepBatch& m) {
  return kFixedWords + blob_words(m.observations.size()) +
         blob_words(m.rewards.size() * sizeof(float)) + blob_words(m.flags.size()) +
         blob_words(m.env_rewards.size() * sizeof(float));
}

size_t estimate_words(const ActionBatch& m) { return kFixedWords + blob_words(m.actions.size()); }

size_t estimate_words(const ConfigUpdate& m) {
  return kFixedWords + blob_words(m.payload.size());
}

size_t estimate_words(const Bye& m) {
  return kFixedWords + blob_words(m.reason.size()) + blob_words(m.redirect.size());
}

size_t estimate_words(const ActorNotice& m) { return kFixedWords + blob_words(m.text.size()); }

void build(const Hello& m, wire::Frame::Builder frame) {
  auto b = frame.initHello();
  b.setProtocolVersion(m.protocol_version);
  b.setActorId(m.actor_id);
  b.setHost(text_of(m.host));
  b.setPid(m.pid);
  b.setAuthToken(text_of(m.auth_token));
  b.setAnyRank(m.any_rank);
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
  b.setEnvModel(text_of(m.env_files.model));
  b.setEnvPlugin(text_of(m.env_files.plugin));
  b.setEnvPython(text_of(m.env_files.python));
  b.setEnvWrappers(text_of(m.env_wrappers));
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
  if (m.env_rewards.empty()) return;
  auto env_rewards = b.initEnvRewards(static_cast<uint>(m.env_rewards.size()));
  for (size_t i = 0; i < m.env_rewards.size(); ++i) env_rewards.set(static_cast<uint>(i), m.env_rewards[i]);
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
  auto b = frame.initBye();
  b.setReason(text_of(m.reason));
  b.setReconnect(m.reconnect);
  b.setRedirect(text_of(m.redirect));
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

template <typename T>
std::vector<uint8_t> encoded(const T& message) {
  std::vector<uint8_t> frame;
  encode(message, frame);
  return frame;
}

}  // namespace

void encode(const Hello& m, std::vector<uint8_t>& frame) { encode_with(m, estimate_words(m), frame); }
void encode(const Welcome& m, std::vector<uint8_t>& frame) { encode_with(m, estimate_words(m), frame); }
void encode(const StepBatch& m, std::vector<uint8_t>& frame) { encode_with(m, estimate_words(m), frame); }
void encode(const ActionBatch& m, std::vector<uint8_t>& frame) { encode_with(m, estimate_words(m), frame); }
void encode(const ConfigUpdate& m, std::vector<uint8_t>& frame) { encode_with(m, estimate_words(m), frame); }
void encode(const Bye& m, std::vector<uint8_t>& frame) { encode_with(m, estimate_words(m), frame); }
void encode(const ActorNotice& m, std::vector<uint8_t>& frame) { encode_with(m, estimate_words(m), frame); }

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
