#include "scripts/loader/sha256.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace moonseed::scripts {
namespace {

__extension__ typedef unsigned __int128 Wide;

// The first 32 bits of the fractional part of prime^(1/root): FIPS 180-4
// defines the constants this way (4.2.2 with root 3, 5.3.3 with root 2).
// Computing them exactly with integers spares 72 hand-typed hex words: x is
// the largest integer with x^root <= prime * 2^(32*root), and its low 32 bits
// are the fraction's.
uint32_t fraction_bits_of_root(uint32_t prime, int root) {
  const Wide target = static_cast<Wide>(prime) << (32 * root);
  auto power = [root](uint64_t x) {
    Wide p = 1;
    for (int i = 0; i < root; ++i) p *= x;
    return p;
  };
  uint64_t x = static_cast<uint64_t>(std::ldexp(std::pow(static_cast<double>(prime), 1.0 / root), 32));
  while (power(x) > target) --x;
  while (power(x + 1) <= target) ++x;
  return static_cast<uint32_t>(x);
}

struct Constants {
  std::array<uint32_t, 64> k;
  std::array<uint32_t, 8> initial;
};

const Constants& constants() {
  static const Constants c = [] {
    Constants out{};
    std::array<uint32_t, 64> primes{};
    size_t n = 0;
    for (uint32_t candidate = 2; n < primes.size(); ++candidate) {
      bool prime = true;
      for (size_t i = 0; i < n && primes[i] * primes[i] <= candidate; ++i) {
        if (candidate % primes[i] == 0) prime = false;
      }
      if (prime) primes[n++] = candidate;
    }
    for (size_t i = 0; i < 64; ++i) out.k[i] = fraction_bits_of_root(primes[i], 3);
    for (size_t i = 0; i < 8; ++i) out.initial[i] = fraction_bits_of_root(primes[i], 2);
    return out;
  }();
  return c;
}

uint32_t rotate_right(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

void require_open(bool finished) {
  if (finished) throw std::logic_error("Sha256: the digest was already taken; start a new Sha256");
}

}  // namespace

Sha256::Sha256() : state_(constants().initial) {}

void Sha256::update(const void* data, size_t size) {
  require_open(finished_);
  const uint8_t* bytes = static_cast<const uint8_t*>(data);
  length_ += size;
  while (size > 0) {
    if (block_size_ == 0 && size >= block_.size()) {
      compress(bytes);
      bytes += block_.size();
      size -= block_.size();
      continue;
    }
    const size_t take = std::min(size, block_.size() - block_size_);
    std::copy(bytes, bytes + take, block_.begin() + static_cast<std::ptrdiff_t>(block_size_));
    block_size_ += take;
    bytes += take;
    size -= take;
    if (block_size_ == block_.size()) {
      compress(block_.data());
      block_size_ = 0;
    }
  }
}

Sha256::Digest Sha256::finish() {
  require_open(finished_);
  // Padding (5.1.1): a 1 bit, zeros up to 56 mod 64 bytes, the bit length big-endian.
  const uint64_t bits = length_ * 8;
  const uint8_t one = 0x80;
  update(&one, 1);
  const uint8_t zero = 0;
  while (block_size_ != 56) update(&zero, 1);
  uint8_t length_bytes[8];
  for (int i = 0; i < 8; ++i) length_bytes[i] = static_cast<uint8_t>(bits >> (56 - 8 * i));
  update(length_bytes, 8);
  finished_ = true;
  Digest digest;
  for (size_t i = 0; i < 8; ++i) {
    for (size_t b = 0; b < 4; ++b) digest[4 * i + b] = static_cast<uint8_t>(state_[i] >> (24 - 8 * b));
  }
  return digest;
}

// One block of the hash computation (6.2.2).
void Sha256::compress(const uint8_t* block) {
  const std::array<uint32_t, 64>& k = constants().k;
  uint32_t w[64];
  for (int t = 0; t < 16; ++t) {
    w[t] = static_cast<uint32_t>(block[4 * t]) << 24 | static_cast<uint32_t>(block[4 * t + 1]) << 16 |
           static_cast<uint32_t>(block[4 * t + 2]) << 8 | static_cast<uint32_t>(block[4 * t + 3]);
  }
  for (int t = 16; t < 64; ++t) {
    const uint32_t s0 = rotate_right(w[t - 15], 7) ^ rotate_right(w[t - 15], 18) ^ (w[t - 15] >> 3);
    const uint32_t s1 = rotate_right(w[t - 2], 17) ^ rotate_right(w[t - 2], 19) ^ (w[t - 2] >> 10);
    w[t] = s1 + w[t - 7] + s0 + w[t - 16];
  }
  uint32_t a = state_[0], b = state_[1], c = state_[2], d = state_[3];
  uint32_t e = state_[4], f = state_[5], g = state_[6], h = state_[7];
  for (int t = 0; t < 64; ++t) {
    const uint32_t sigma1 = rotate_right(e, 6) ^ rotate_right(e, 11) ^ rotate_right(e, 25);
    const uint32_t choose = (e & f) ^ (~e & g);
    const uint32_t t1 = h + sigma1 + choose + k[t] + w[t];
    const uint32_t sigma0 = rotate_right(a, 2) ^ rotate_right(a, 13) ^ rotate_right(a, 22);
    const uint32_t majority = (a & b) ^ (a & c) ^ (b & c);
    const uint32_t t2 = sigma0 + majority;
    h = g;
    g = f;
    f = e;
    e = d + t1;
    d = c;
    c = b;
    b = a;
    a = t1 + t2;
  }
  state_[0] += a;
  state_[1] += b;
  state_[2] += c;
  state_[3] += d;
  state_[4] += e;
  state_[5] += f;
  state_[6] += g;
  state_[7] += h;
}

std::string to_hex(const Sha256::Digest& digest) {
  static const char kHex[] = "0123456789abcdef";
  std::string text;
  text.reserve(2 * digest.size());
  for (uint8_t byte : digest) {
    text += kHex[byte >> 4];
    text += kHex[byte & 0xf];
  }
  return text;
}

std::string sha256_hex(std::string_view bytes) {
  Sha256 hasher;
  hasher.update(bytes);
  return to_hex(hasher.finish());
}

}  // namespace moonseed::scripts
