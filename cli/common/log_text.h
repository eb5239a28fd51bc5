// Text for `moonseed log` (cli/log_*.cc): wall times as UTC text and
// back, JSON strings, floats with the fewest digits that read back exactly,
// and experience-log column values as JSON.
//
// Contract: parse_* return nullopt for text they do not accept (the caller
// names the option); nothing here throws except std::bad_alloc.
// Values are read little-endian, as the log stores them (the hosts Moonseed
// runs on, x86-64 and arm64, are little-endian).
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "explog/format.h"

namespace moonseed::cli {

// A decimal integer in [min, max], nothing else (no spaces, no suffix).
std::optional<int64_t> parse_integer(const std::string& text, int64_t min, int64_t max);

// Nanoseconds since the Unix epoch, from either that integer or a UTC time
// YYYY-MM-DDTHH:MM:SS[.fraction of up to 9 digits][Z].
std::optional<int64_t> parse_wall_time(const std::string& text);

// 2026-11-23T14:47:49.123456789Z (always 9 fraction digits, so it parses back exactly).
std::string format_wall_time(int64_t ns);

// `s` quoted and escaped as a JSON string (UTF-8 passes through).
std::string json_string(const std::string& s);

// "true" or "false".
const char* json_bool(bool b);

// base::number_text: the fewest digits that read back as exactly `v`, fixed
// point in a readable range ("0.1", "-500", "-0", "1e+20"); NaN and infinities as Python's json module writes them: NaN,
// Infinity, -Infinity.
std::string shortest_text(float v);
std::string shortest_text(double v);

// Appends one step's values of `column` (column.step_bytes() bytes at `data`)
// as JSON: a number for a scalar column, nested arrays of the per-step shape
// otherwise. Integers are exact.
void append_step_json(std::string& out, const explog::ColumnSpec& column, const uint8_t* data);

}  // namespace moonseed::cli
