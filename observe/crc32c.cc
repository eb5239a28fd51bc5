#include "observe/crc32c.h"

#include "explog/format.h"

namespace moonseed::observe {

// The experience log's CRC-32C (SSE4.2 where the CPU has it, else a table).
uint32_t crc32c(std::string_view data) { return explog::crc32c(data.data(), data.size()); }

uint32_t mask_crc(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + 0xa282ead8u; }

}  // namespace moonseed::observe
