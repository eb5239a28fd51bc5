#include "engine/group/group_options.h"

#include <cctype>
#include <stdexcept>

namespace moonseed::engine {

Rendezvous parse_rendezvous(const std::string& text) {
  Rendezvous r;
  if (text.rfind("file:", 0) == 0 && text.size() > 5) {
    r.path = text.substr(5);
    return r;
  }
  const std::string expected = "rendezvous \"" + text + "\": expected tcp:HOST:PORT (e.g. tcp:node001:29500)";
  if (text.rfind("tcp:", 0) != 0) throw std::invalid_argument(expected);
  const size_t colon = text.rfind(':');
  if (colon <= 4 || colon + 1 >= text.size()) throw std::invalid_argument(expected);
  r.tcp = true;
  r.host = text.substr(4, colon - 4);
  if (r.host.size() > 2 && r.host.front() == '[' && r.host.back() == ']') r.host = r.host.substr(1, r.host.size() - 2);
  for (size_t i = colon + 1; i < text.size(); ++i) {
    if (!std::isdigit(static_cast<unsigned char>(text[i])) || r.port > 65535) throw std::invalid_argument(expected);
    r.port = r.port * 10 + (text[i] - '0');
  }
  if (r.port < 1 || r.port > 65535) throw std::invalid_argument(expected + ": the port must be in 1..65535");
  return r;
}

bool loopback_host(const std::string& host) {
  return host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}

}  // namespace moonseed::engine
