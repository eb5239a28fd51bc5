// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), the checksum of
// TFRecord files, and the "masked" form TFRecord stores.
//
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace moonseed::observe {

// The CRC-32C of `data`; crc32c("123456789") == 0xE3069283.
uint32_t crc32c(std::string_view data);

// TFRecord's masked CRC: ((crc >> 15) | (crc << 17)) + 0xa282ead8, so that a
// CRC of bytes that contain CRCs is not itself a plain CRC.
uint32_t mask_crc(uint32_t crc);
inline uint32_t masked_crc32c(std::string_view data) { return mask_crc(crc32c(data)); }

}  // namespace moonseed::observe
