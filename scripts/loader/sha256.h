// SHA-256 (FIPS 180-4) of byte strings: the digest a run directory records for
// every Lua file its config came from, so `sha256sum -c` can tell later whether
// a recipe on disk is still the one the run used.
//
// Written for provenance, not for secrets: no constant-time guarantees.
// A Sha256 is a value owned by its user; not thread-safe (one per thread),
// sha256_hex is a pure function and thread-safe.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace moonseed::scripts {

class Sha256 {
 public:
  using Digest = std::array<uint8_t, 32>;

  Sha256();
  // Appends bytes to the message. Throws std::logic_error after finish().
  void update(const void* data, size_t size);
  void update(std::string_view bytes) { update(bytes.data(), bytes.size()); }
  // Pads the message and returns its digest; the hasher is then spent
  // (update and finish throw std::logic_error).
  Digest finish();

 private:
  void compress(const uint8_t* block);

  std::array<uint32_t, 8> state_;
  std::array<uint8_t, 64> block_{};
  size_t block_size_ = 0;  // bytes waiting in block_
  uint64_t length_ = 0;    // message bytes so far
  bool finished_ = false;
};

// Lowercase hex of the digest of `bytes` (64 characters), as sha256sum prints it.
std::string sha256_hex(std::string_view bytes);
std::string to_hex(const Sha256::Digest& digest);

}  // namespace moonseed::scripts
