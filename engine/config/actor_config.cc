#include "engine/config/actor_config.h"

#include <cerrno>
#include <climits>
#include <cstdlib>

namespace moonseed::engine {
namespace {

constexpr const char* kHeader = "moonseed-actor-config 1\n";
constexpr const char* kSource = "reward_shaping.source";
constexpr const char* kChunkName = "reward_shaping.chunk_name";
constexpr const char* kFirstLine = "reward_shaping.first_line";

void put(std::string& out, const char* name, const std::string& value) {
  out += name;
  out += ' ';
  out += std::to_string(value.size());
  out += '\n';
  out += value;
  out += '\n';
}

// A decimal integer that is the whole of `text`, within [min, max].
bool parse_integer(const std::string& text, long long min, long long max, long long* out) {
  if (text.empty() || text.size() > 19) return false;
  for (size_t i = 0; i < text.size(); ++i) {
    const bool sign = i == 0 && text[i] == '-' && text.size() > 1;
    if (!sign && (text[i] < '0' || text[i] > '9')) return false;
  }
  errno = 0;
  const long long v = std::strtoll(text.c_str(), nullptr, 10);
  if (errno != 0 || v < min || v > max) return false;
  *out = v;
  return true;
}

}  // namespace

ActorConfig actor_config_of(const ExperimentConfig& config) {
  ActorConfig actor;
  actor.reward_shaping = config.reward_shaping;
  return actor;
}

std::string encode_actor_config(const ActorConfig& config) {
  std::string out = kHeader;
  const RewardShapingConfig& shaping = config.reward_shaping;
  if (!shaping.source.empty()) {
    put(out, kSource, shaping.source);
    put(out, kChunkName, shaping.chunk_name);
    put(out, kFirstLine, std::to_string(shaping.first_line));
  }
  return out;
}

std::optional<ActorConfig> decode_actor_config(const std::string& payload, std::string* error) {
  ActorConfig config;
  if (payload.empty()) return config;
  auto fail = [&](const std::string& why) -> std::optional<ActorConfig> {
    if (error) *error = "malformed actor config payload: " + why;
    return std::nullopt;
  };
  const std::string header = kHeader;
  if (payload.compare(0, header.size(), header) != 0) return fail("it does not start with \"moonseed-actor-config 1\"");
  size_t at = header.size();
  while (at < payload.size()) {
    const size_t eol = payload.find('\n', at);
    if (eol == std::string::npos) return fail("a record header has no end of line");
    const std::string line = payload.substr(at, eol - at);
    const size_t space = line.find(' ');
    long long length = 0;
    if (space == std::string::npos || !parse_integer(line.substr(space + 1), 0, LLONG_MAX, &length)) {
      return fail("bad record header '" + line.substr(0, 80) + "'");
    }
    const std::string name = line.substr(0, space);
    at = eol + 1;
    if (static_cast<unsigned long long>(length) > payload.size() - at ||
        payload.size() - at - static_cast<size_t>(length) < 1 || payload[at + static_cast<size_t>(length)] != '\n') {
      return fail("record " + name + " of " + std::to_string(length) + " bytes overruns the payload");
    }
    const std::string value = payload.substr(at, static_cast<size_t>(length));
    at += static_cast<size_t>(length) + 1;
    if (name == kSource) {
      config.reward_shaping.source = value;
    } else if (name == kChunkName) {
      config.reward_shaping.chunk_name = value;
    } else if (name == kFirstLine) {
      long long line_number = 0;
      if (!parse_integer(value, 1, INT_MAX, &line_number)) return fail("bad first line '" + value.substr(0, 20) + "'");
      config.reward_shaping.first_line = static_cast<int>(line_number);
    }
    // Other names: fields of a newer learner, skipped.
  }
  return config;
}

}  // namespace moonseed::engine
