// Records with known contents for the experience log tests: record i of the
// "known" schema has values computed from i alone, so a reader in another
// process (or in Python: tests/explog/explog_python_test.py repeats these
// formulas) can check every field without a copy of what was written.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "explog/format.h"

namespace moonseed::explog::testing {

// One column of every dtype, scalar and shaped.
inline LogSchema known_schema(const std::string& codec = "lz4") {
  LogSchema s;
  s.run_id = "run-known";
  s.spec = R"({"observation": {"shape": [2, 3], "dtype": "uint8"}, "action": {"n": 4}})";
  s.codec = codec;
  s.columns = {{"obs", DType::kU8, {2, 3}},
               {"action", DType::kI32, {}},
               {"count", DType::kI64, {2}},
               {"logp", DType::kF32, {}},
               {"reward", DType::kF64, {}}};
  return s;
}

inline RecordMeta known_meta(int64_t i) {
  RecordMeta m;
  m.actor_id = static_cast<int32_t>(i % 3);
  m.env_id = static_cast<int32_t>(100 + i);
  m.episode_id = i / 2 - 5;
  m.first_step = i * 10;
  m.steps = static_cast<int32_t>(i % 5);  // 0 steps included
  m.flags = static_cast<uint8_t>(i % 16);
  m.wall_time_ns = 1000000000000 + i * 1000;
  m.learner_step = i * 7;
  m.config_version = 0xFFFFFFFF00000000ull + static_cast<uint64_t>(i);
  return m;
}

template <typename T>
void put(std::vector<uint8_t>& out, T value) {  // little-endian hosts only (x86, arm64)
  uint8_t bytes[sizeof(T)];
  std::memcpy(bytes, &value, sizeof(T));
  out.insert(out.end(), bytes, bytes + sizeof(T));
}

inline Record known_record(int64_t i) {
  Record r;
  r.meta = known_meta(i);
  r.columns.resize(5);
  for (int64_t t = 0; t < r.meta.steps; ++t) {
    for (int64_t e = 0; e < 6; ++e) r.columns[0].push_back(static_cast<uint8_t>((i * 31 + t * 7 + e) % 256));
    put<int32_t>(r.columns[1], static_cast<int32_t>(i * 100 + t - 50));
    const int64_t sign = i % 2 == 0 ? 1 : -1;
    for (int64_t e = 0; e < 2; ++e) put<int64_t>(r.columns[2], sign * ((i << 40) + t * 2 + e));
    put<float>(r.columns[3], -0.5f * static_cast<float>(i) - 0.25f * static_cast<float>(t));
    put<double>(r.columns[4], static_cast<double>(i) + static_cast<double>(t) / 8.0);
  }
  return r;
}

}  // namespace moonseed::explog::testing
