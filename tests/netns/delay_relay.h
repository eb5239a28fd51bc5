// Starting tests/netns/delay_relay (the relay that adds latency) and reading
// back the port it listens on. Header-only; no state; the relay process
// belongs to the caller's ChildProcess.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include "tests/e2e/process.h"

namespace moonseed::testing {

// The relay's command line: listen on `listen` (IP:PORT, port 0 picks one),
// relay to `target` (IP:PORT), holding each chunk `delay_ms` one way.
inline std::vector<std::string> delay_relay_args(const std::string& listen, const std::string& target,
                                                 double delay_ms, long max_buffered_bytes = 1 << 20) {
  return {MOONSEED_DELAY_RELAY, listen, target, std::to_string(delay_ms), std::to_string(max_buffered_bytes)};
}

// The port of the relay whose output goes to `log`, once it listens within
// `timeout_s`; -1 otherwise.
inline int relay_port(const std::string& log, double timeout_s) {
  int port = -1;
  eventually(timeout_s, [&] {
    const std::string text = read_file(log);
    const std::string said = "delay_relay: listening on ";
    const size_t at = text.find(said);
    if (at == std::string::npos) return false;
    const size_t colon = text.find(':', at + said.size());
    if (colon == std::string::npos) return false;
    return std::sscanf(text.c_str() + colon + 1, "%d", &port) == 1;
  });
  return port;
}

}  // namespace moonseed::testing
