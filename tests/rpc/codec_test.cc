#include "rpc/codec.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "tests/rpc/sample_messages.h"

namespace moonseed::rpc {
namespace {

using testing::sample_action_batch;
using testing::sample_actor_notice;
using testing::sample_bye;
using testing::sample_config_update;
using testing::sample_hello;
using testing::sample_step_batch;
using testing::sample_welcome;

template <typename T>
T decode_as(const std::vector<uint8_t>& frame, const FrameLimits& limits = {}) {
  DecodeResult result = decode(frame.data(), frame.size(), limits);
  if (auto* error = std::get_if<DecodeError>(&result)) {
    ADD_FAILURE() << "decode failed: " << error->reason;
    return T{};
  }
  EXPECT_TRUE(std::holds_alternative<T>(result)) << "decoded another type, index "
                                                 << result.index();
  return std::holds_alternative<T>(result) ? std::get<T>(std::move(result)) : T{};
}

std::string decode_error(const std::vector<uint8_t>& frame, const FrameLimits& limits = {}) {
  DecodeResult result = decode(frame.data(), frame.size(), limits);
  if (auto* error = std::get_if<DecodeError>(&result)) return error->reason;
  ADD_FAILURE() << "frame was accepted as a message of type index " << result.index();
  return "";
}

uint32_t u32_at(const std::vector<uint8_t>& bytes, size_t offset) {
  uint32_t v;
  std::memcpy(&v, bytes.data() + offset, 4);
  return v;
}

void put_u32(std::vector<uint8_t>& bytes, size_t offset, uint32_t v) {
  std::memcpy(bytes.data() + offset, &v, 4);
}

void expect_same_space(const envs::Space& a, const envs::Space& b) {
  EXPECT_EQ(a.kind, b.kind);
  EXPECT_EQ(a.dtype, b.dtype);
  EXPECT_EQ(a.n, b.n);
  EXPECT_EQ(a.shape, b.shape);
  EXPECT_EQ(a.low, b.low);
  EXPECT_EQ(a.high, b.high);
}

void expect_same(const Hello& a, const Hello& b) {
  EXPECT_EQ(a.protocol_version, b.protocol_version);
  EXPECT_EQ(a.actor_id, b.actor_id);
  EXPECT_EQ(a.host, b.host);
  EXPECT_EQ(a.pid, b.pid);
  EXPECT_EQ(a.auth_token, b.auth_token);
  EXPECT_EQ(a.any_rank, b.any_rank);
}

void expect_same(const Welcome& a, const Welcome& b) {
  EXPECT_EQ(a.run_id, b.run_id);
  EXPECT_EQ(a.actor_id, b.actor_id);
  EXPECT_EQ(a.env_id, b.env_id);
  EXPECT_EQ(a.env_options, b.env_options);
  EXPECT_EQ(a.env_files.model, b.env_files.model);
  EXPECT_EQ(a.env_files.plugin, b.env_files.plugin);
  EXPECT_EQ(a.env_files.python, b.env_files.python);
  EXPECT_EQ(a.env_wrappers, b.env_wrappers);
  EXPECT_EQ(a.env_spec.id, b.env_spec.id);
  expect_same_space(a.env_spec.observation, b.env_spec.observation);
  expect_same_space(a.env_spec.action, b.env_spec.action);
  EXPECT_EQ(a.env_spec.max_episode_steps, b.env_spec.max_episode_steps);
  EXPECT_EQ(a.num_envs, b.num_envs);
  EXPECT_EQ(a.num_groups, b.num_groups);
  EXPECT_EQ(a.seed, b.seed);
  EXPECT_EQ(a.config_version, b.config_version);
  EXPECT_EQ(a.unroll_length, b.unroll_length);
  EXPECT_EQ(a.payload, b.payload);
}

void expect_same(const StepBatch& a, const StepBatch& b) {
  EXPECT_EQ(a.seq, b.seq);
  EXPECT_EQ(a.env_begin, b.env_begin);
  EXPECT_EQ(a.count, b.count);
  EXPECT_EQ(a.config_version, b.config_version);
  EXPECT_EQ(a.observations, b.observations);
  EXPECT_EQ(a.rewards, b.rewards);
  EXPECT_EQ(a.flags, b.flags);
  EXPECT_EQ(a.env_rewards, b.env_rewards);
}

void expect_same(const ActionBatch& a, const ActionBatch& b) {
  EXPECT_EQ(a.seq, b.seq);
  EXPECT_EQ(a.actions, b.actions);
}

void expect_same(const ConfigUpdate& a, const ConfigUpdate& b) {
  EXPECT_EQ(a.config_version, b.config_version);
  EXPECT_EQ(a.payload, b.payload);
}

void expect_same(const Bye& a, const Bye& b) {
  EXPECT_EQ(a.reason, b.reason);
  EXPECT_EQ(a.reconnect, b.reconnect);
  EXPECT_EQ(a.redirect, b.redirect);
}

void expect_same(const ActorNotice& a, const ActorNotice& b) {
  EXPECT_EQ(a.config_version, b.config_version);
  EXPECT_EQ(a.text, b.text);
}

TEST(Codec, HelloSurvivesARoundTripWithEveryField) {
  const Hello sent = sample_hello();
  expect_same(decode_as<Hello>(encode(sent)), sent);
}

TEST(Codec, WelcomeSurvivesARoundTripWithEveryFieldOfItsEnvSpec) {
  const Welcome sent = sample_welcome();
  expect_same(decode_as<Welcome>(encode(sent)), sent);
}

TEST(Codec, StepBatchSurvivesARoundTripWithEveryField) {
  const StepBatch sent = sample_step_batch(77, 5, 16);
  expect_same(decode_as<StepBatch>(encode(sent)), sent);
}

TEST(Codec, StepBatchCarriesTheEnvsOwnRewardsBesideTheShapedOnes) {
  StepBatch sent = sample_step_batch(77, 3, 16);
  sent.env_rewards = {1.f, -0.5f, 0.f};
  const StepBatch got = decode_as<StepBatch>(encode(sent));
  EXPECT_EQ(got.env_rewards, (std::vector<float>{1.f, -0.5f, 0.f}));
  expect_same(got, sent);
  // Without shaping the field stays empty: the rewards are the env's own.
  EXPECT_TRUE(decode_as<StepBatch>(encode(sample_step_batch(77, 3, 16))).env_rewards.empty());
}

TEST(Codec, StepBatchWithEnvRewardsNotOnePerEnvIsRejected) {
  StepBatch batch = sample_step_batch(1, 4);
  batch.env_rewards = {1.f, 2.f};
  EXPECT_NE(decode_error(encode(batch)).find("2 env rewards"), std::string::npos);
}

TEST(Codec, ActionBatchSurvivesARoundTrip) {
  const ActionBatch sent = sample_action_batch(77, 5);
  expect_same(decode_as<ActionBatch>(encode(sent)), sent);
}

TEST(Codec, ConfigUpdatePayloadSurvivesARoundTripIncludingNulAndHighBytes) {
  const ConfigUpdate sent = sample_config_update();
  ASSERT_NE(sent.payload.find('\0'), std::string::npos);
  expect_same(decode_as<ConfigUpdate>(encode(sent)), sent);
}

TEST(Codec, WelcomeCarriesTheUnrollLengthAndTheConfigPayloadIncludingNulAndHighBytes) {
  const Welcome sent = sample_welcome();
  ASSERT_NE(sent.payload.find('\0'), std::string::npos);
  const Welcome got = decode_as<Welcome>(encode(sent));
  EXPECT_EQ(got.unroll_length, 20u);
  EXPECT_EQ(got.payload, sent.payload);
}

TEST(Codec, ActorNoticeSurvivesARoundTrip) {
  const ActorNotice sent = sample_actor_notice();
  expect_same(decode_as<ActorNotice>(encode(sent)), sent);
}

TEST(Codec, ByeSurvivesARoundTrip) {
  const Bye sent = sample_bye();
  expect_same(decode_as<Bye>(encode(sent)), sent);
  const Bye again{"no step batch for 30 s", /*reconnect=*/true, /*redirect=*/""};
  expect_same(decode_as<Bye>(encode(again)), again);
  const Bye elsewhere{"placed on rank 1", /*reconnect=*/true, "tcp:10.0.0.2:7001"};
  const Bye decoded = decode_as<Bye>(encode(elsewhere));
  expect_same(decoded, elsewhere);
  EXPECT_EQ(decoded.redirect, "tcp:10.0.0.2:7001");
}

TEST(Codec, AHelloThatLetsAGroupPlaceTheActorSaysSo) {
  Hello sent = sample_hello();
  EXPECT_FALSE(decode_as<Hello>(encode(sent)).any_rank);
  sent.any_rank = true;
  EXPECT_TRUE(decode_as<Hello>(encode(sent)).any_rank);
}

TEST(Codec, FramesUseStandardStreamFramingWithOneSegment) {
  const std::vector<uint8_t> frame = encode(sample_step_batch(1, 64, 16));
  ASSERT_GE(frame.size(), 16u);
  EXPECT_EQ(u32_at(frame, 0), 0u) << "segment count - 1";
  EXPECT_EQ(size_t{u32_at(frame, 4)} * 8 + 8, frame.size()) << "segment size in words";
  const FrameExtent extent = frame_extent(frame.data(), frame.size(), FrameLimits{});
  EXPECT_EQ(extent.status, FrameExtent::Status::kKnown);
  EXPECT_EQ(extent.bytes, frame.size());
}

TEST(Codec, EveryMessageTypeDecodesFromAFrameSpanningManySegments) {
  const std::vector<Message> sent = testing::all_sample_messages();
  for (const Message& message : sent) {
    std::vector<uint8_t> frame;
    detail::encode_in_small_segments(message, 3, frame);
    ASSERT_GT(u32_at(frame, 0), 0u) << message_name(message) << " fit one segment";
    DecodeResult result = decode(frame.data(), frame.size());
    ASSERT_FALSE(std::holds_alternative<DecodeError>(result))
        << message_name(message) << ": " << std::get<DecodeError>(result).reason;
    std::vector<uint8_t> again;
    std::visit([&again](const auto& m) {
      if constexpr (!std::is_same_v<std::decay_t<decltype(m)>, DecodeError>) encode(m, again);
    }, result);
    std::vector<uint8_t> reference;
    encode(message, reference);
    EXPECT_EQ(again, reference) << message_name(message) << " changed in the round trip";
  }
}

TEST(Codec, FrameExtentAsksForTheWholeSegmentTableBeforeKnowingTheSize) {
  std::vector<uint8_t> header(8, 0);
  put_u32(header, 0, 2);  // three segments: 4 + 12 bytes of table -> 16
  put_u32(header, 4, 10);
  const FrameExtent partial = frame_extent(header.data(), 3, FrameLimits{});
  EXPECT_EQ(partial.status, FrameExtent::Status::kNeedHeader);
  EXPECT_EQ(partial.bytes, 8u);
  const FrameExtent table = frame_extent(header.data(), header.size(), FrameLimits{});
  EXPECT_EQ(table.status, FrameExtent::Status::kNeedHeader);
  EXPECT_EQ(table.bytes, 16u);
}

TEST(Codec, EncodingReusesTheFrameVectorsStorage) {
  std::vector<uint8_t> frame;
  encode(sample_step_batch(1, 64, 16), frame);
  const uint8_t* storage = frame.data();
  encode(sample_step_batch(2, 32, 16), frame);
  EXPECT_EQ(frame.data(), storage);
  expect_same(decode_as<StepBatch>(frame), sample_step_batch(2, 32, 16));
}

TEST(Codec, DecodeIntoReusesTheVectorsOfAMessageOfTheSameType) {
  Message target = sample_step_batch(0, 64, 16);
  const uint8_t* observations = std::get<StepBatch>(target).observations.data();
  const std::vector<uint8_t> frame = encode(sample_step_batch(3, 8, 16));
  DecodeError error;
  ASSERT_TRUE(decode_into(frame.data(), frame.size(), FrameLimits{}, target, error))
      << error.reason;
  EXPECT_EQ(std::get<StepBatch>(target).observations.data(), observations);
  expect_same(std::get<StepBatch>(target), sample_step_batch(3, 8, 16));
}

TEST(Codec, UnalignedInputDecodes) {
  const std::vector<uint8_t> frame = encode(sample_welcome());
  std::vector<uint8_t> shifted(frame.size() + 1);
  std::memcpy(shifted.data() + 1, frame.data(), frame.size());
  DecodeResult result = decode(shifted.data() + 1, frame.size());
  ASSERT_TRUE(std::holds_alternative<Welcome>(result));
  expect_same(std::get<Welcome>(result), sample_welcome());
}

TEST(Codec, EveryTruncationOfAFrameIsRejected) {
  const std::vector<uint8_t> frame = encode(sample_welcome());
  for (size_t length = 0; length < frame.size(); ++length) {
    DecodeResult result = decode(frame.data(), length);
    ASSERT_TRUE(std::holds_alternative<DecodeError>(result)) << "length " << length;
    EXPECT_NE(std::get<DecodeError>(result).reason.find("truncated"), std::string::npos)
        << std::get<DecodeError>(result).reason;
  }
}

TEST(Codec, BytesAfterTheFrameAreRejected) {
  std::vector<uint8_t> frame = encode(sample_bye());
  frame.resize(frame.size() + 8, 0);
  EXPECT_NE(decode_error(frame).find("after the end"), std::string::npos);
}

TEST(Codec, GarbageBodyBehindAValidSegmentTableIsRejected) {
  std::vector<uint8_t> frame(8 + 8 * 16, 0xff);
  put_u32(frame, 0, 0);
  put_u32(frame, 4, 16);
  EXPECT_FALSE(decode_error(frame).empty());
}

TEST(Codec, RandomBytesAreRejected) {
  std::mt19937 random(12345);
  std::vector<uint8_t> bytes(256);
  for (auto& b : bytes) b = static_cast<uint8_t>(random());
  put_u32(bytes, 0, 0x9e3779b9u);  // what a random stream most likely starts with
  EXPECT_NE(decode_error(bytes).find("segments"), std::string::npos);
}

TEST(Codec, SegmentTableClaimingMoreThanMaxFrameBytesIsRejectedBeforeTheBodyArrives) {
  std::vector<uint8_t> header(8, 0);
  put_u32(header, 4, 9u << 20);  // 9 Mi words = 72 MiB > 64 MiB
  const FrameExtent extent = frame_extent(header.data(), header.size(), FrameLimits{});
  EXPECT_EQ(extent.status, FrameExtent::Status::kInvalid);
  EXPECT_NE(extent.error.find("max_frame_bytes"), std::string::npos) << extent.error;
  EXPECT_NE(decode_error(header).find("max_frame_bytes"), std::string::npos);
}

TEST(Codec, FrameAboveAConfiguredMaxFrameBytesIsRejected) {
  FrameLimits limits;
  limits.max_frame_bytes = 1024;
  const std::vector<uint8_t> frame = encode(sample_step_batch(1, 64, 16));
  ASSERT_GT(frame.size(), 1024u);
  EXPECT_NE(decode_error(frame, limits).find("max_frame_bytes"), std::string::npos);
}

TEST(Codec, SegmentTableWithTooManySegmentsIsRejected) {
  std::vector<uint8_t> header(8, 0);
  put_u32(header, 0, 512);  // 513 segments, one above the default limit
  put_u32(header, 4, 1);
  const FrameExtent extent = frame_extent(header.data(), header.size(), FrameLimits{});
  EXPECT_EQ(extent.status, FrameExtent::Status::kInvalid);
  EXPECT_NE(extent.error.find("513 segments"), std::string::npos) << extent.error;
}

TEST(Codec, MessageExceedingTheTraversalLimitIsRejected) {
  FrameLimits limits;
  limits.traversal_limit_words = 1024;
  const std::vector<uint8_t> frame = encode(sample_step_batch(1, 256, 64));  // 16 KiB of obs
  EXPECT_NE(decode_error(frame, limits).find("traversal"), std::string::npos);
  EXPECT_EQ(decode(frame.data(), frame.size()).index(), 2u) << "accepted with default limits";
}

TEST(Codec, MessageExceedingTheNestingLimitIsRejected) {
  FrameLimits limits;
  limits.nesting_limit = 2;  // Frame -> Welcome -> EnvSpec -> Space is deeper
  EXPECT_FALSE(decode_error(encode(sample_welcome()), limits).empty());
}

TEST(Codec, StepBatchWithFewerRewardsThanCountIsRejected) {
  StepBatch batch = sample_step_batch(1, 4);
  batch.rewards.pop_back();
  EXPECT_NE(decode_error(encode(batch)).find("3 rewards"), std::string::npos);
}

TEST(Codec, StepBatchWithMoreFlagsThanCountIsRejected) {
  StepBatch batch = sample_step_batch(1, 4);
  batch.flags.push_back(0);
  EXPECT_NE(decode_error(encode(batch)).find("5 flags"), std::string::npos);
}

TEST(Codec, StepBatchWhoseObservationBytesAreNotAMultipleOfCountIsRejected) {
  StepBatch batch = sample_step_batch(1, 4);
  batch.observations.pop_back();
  EXPECT_NE(decode_error(encode(batch)).find("observation bytes"), std::string::npos);
}

TEST(Codec, StepBatchWithCountZeroIsRejected) {
  StepBatch batch;
  EXPECT_NE(decode_error(encode(batch)).find("count 0"), std::string::npos);
}

}  // namespace
}  // namespace moonseed::rpc
