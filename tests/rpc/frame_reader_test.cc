#include "rpc/frame_reader.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>

#include "tests/rpc/sample_messages.h"

namespace moonseed::rpc {
namespace {

using Status = FrameReader::Next::Status;

// Feeds `bytes` to the reader in pieces of at most `piece` bytes and collects
// every frame it hands out.
std::vector<std::vector<uint8_t>> feed(FrameReader& reader, const std::vector<uint8_t>& bytes,
                                       size_t piece) {
  std::vector<std::vector<uint8_t>> frames;
  size_t at = 0;
  for (;;) {
    FrameReader::Next next = reader.next();
    if (next.status == Status::kFrame) {
      EXPECT_EQ(reinterpret_cast<uintptr_t>(next.data) % 8, 0u) << "frame not word-aligned";
      frames.emplace_back(next.data, next.data + next.size);
      continue;
    }
    EXPECT_EQ(next.status, Status::kNeedMore) << next.error;
    if (next.status != Status::kNeedMore || at == bytes.size()) return frames;
    EXPECT_GT(reader.writable(), 0u);
    const size_t n = std::min({piece, reader.writable(), bytes.size() - at});
    std::memcpy(reader.write_ptr(), bytes.data() + at, n);
    reader.commit(n);
    at += n;
  }
}

TEST(FrameReader, FrameArrivingOneByteAtATimeIsReassembled) {
  FrameReader reader(FrameLimits{});
  const std::vector<uint8_t> frame = encode(testing::sample_welcome());
  const auto frames = feed(reader, frame, 1);
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(frames[0], frame);
}

TEST(FrameReader, SeveralFramesInOneReadAreHandedOutInOrder) {
  FrameReader reader(FrameLimits{});
  std::vector<uint8_t> stream;
  std::vector<std::vector<uint8_t>> sent;
  for (uint64_t seq = 0; seq < 5; ++seq) {
    sent.push_back(encode(testing::sample_action_batch(seq, 3)));
    stream.insert(stream.end(), sent.back().begin(), sent.back().end());
  }
  EXPECT_EQ(feed(reader, stream, stream.size()), sent);
}

TEST(FrameReader, FrameLargerThanTheInitialBufferGrowsIt) {
  FrameReader reader(FrameLimits{}, 64);
  std::vector<uint8_t> stream = encode(testing::sample_hello());
  const std::vector<uint8_t> big = encode(testing::sample_step_batch(1, 512, 64));
  stream.insert(stream.end(), big.begin(), big.end());
  const auto frames = feed(reader, stream, 1000);
  ASSERT_EQ(frames.size(), 2u);
  EXPECT_EQ(frames[1], big);
}

TEST(FrameReader, OversizedFrameIsReportedFromItsHeaderAlone) {
  FrameLimits limits;
  limits.max_frame_bytes = 4096;
  FrameReader reader(limits);
  const std::vector<uint8_t> big = encode(testing::sample_step_batch(1, 512, 64));
  std::memcpy(reader.write_ptr(), big.data(), 8);
  reader.commit(8);
  const FrameReader::Next next = reader.next();
  EXPECT_EQ(next.status, Status::kInvalid);
  EXPECT_NE(next.error.find("max_frame_bytes"), std::string::npos) << next.error;
}

// A header may claim a frame of up to max_frame_bytes; the buffer must grow
// with what actually arrives, or a peer makes the learner allocate (and zero)
// the claim for the price of 8 bytes.
TEST(FrameReader, AClaimedHugeFrameCostsOnlyTheBytesThatArrive) {
  FrameReader reader(FrameLimits{}, 4096);
  const uint32_t header[2] = {0, (uint32_t{64} << 20) / 8 - 1};  // one segment: 64 MiB - 8 bytes
  std::memcpy(reader.write_ptr(), header, sizeof header);
  reader.commit(sizeof header);
  size_t received = sizeof header;
  while (received < 20000) {
    ASSERT_EQ(reader.next().status, Status::kNeedMore);
    ASSERT_GT(reader.writable(), 0u);
    const size_t n = std::min<size_t>(reader.writable(), 1000);
    std::memset(reader.write_ptr(), 0, n);
    reader.commit(n);
    received += n;
    EXPECT_LE(reader.capacity(), 2 * received + 4096) << "after " << received << " bytes";
  }
  EXPECT_LT(reader.capacity(), size_t{64} << 10);
}

TEST(FrameReader, RaisedLimitsApplyToTheNextFrame) {
  FrameLimits small;
  small.max_frame_bytes = 1024;
  FrameReader reader(small, 256);
  const std::vector<uint8_t> hello = encode(testing::sample_hello());
  const std::vector<uint8_t> big = encode(testing::sample_step_batch(1, 64, 64));
  ASSERT_GT(big.size(), small.max_frame_bytes);
  ASSERT_EQ(feed(reader, hello, hello.size()).size(), 1u);
  reader.set_limits(FrameLimits{}, 4096);
  const auto frames = feed(reader, big, 100);
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(frames[0], big);
}

}  // namespace
}  // namespace moonseed::rpc
