// The "actor_list" of a `moonseed ctl RUN status` reply, read back for tests.
#pragma once

#include <cmath>
#include <limits>
#include <regex>
#include <string>
#include <vector>

namespace moonseed::testing {

struct ListedActor {
  int id = -1;
  bool connected = false;
  std::string host;
  double pid = 0, frames = 0, connections = 0;
  double fps = 0, connected_s = 0;  // NaN for null
};

// Every actor in `status` (the JSON `ctl status` prints), in its order.
inline std::vector<ListedActor> listed_actors(const std::string& status) {
  const auto number = [](const std::string& text) {
    return text == "null" ? std::numeric_limits<double>::quiet_NaN() : std::stod(text);
  };
  static const std::regex entry(
      "\\{\"id\": ([0-9]+), \"connected\": (true|false), \"host\": \"([^\"]*)\", \"pid\": ([0-9]+), \"frames\": "
      "([0-9]+), \"fps\": ([0-9.e+-]+|null), \"connections\": ([0-9]+), \"connected_s\": ([0-9.e+-]+|null)\\}");
  std::vector<ListedActor> out;
  const size_t list = status.find("\"actor_list\": [");
  if (list == std::string::npos) return out;
  const std::string rest = status.substr(list, status.find(']', list) - list);
  for (auto it = std::sregex_iterator(rest.begin(), rest.end(), entry); it != std::sregex_iterator(); ++it) {
    const std::smatch& m = *it;
    ListedActor a;
    a.id = std::stoi(m[1].str());
    a.connected = m[2].str() == "true";
    a.host = m[3].str();
    a.pid = number(m[4].str());
    a.frames = number(m[5].str());
    a.fps = number(m[6].str());
    a.connections = number(m[7].str());
    a.connected_s = number(m[8].str());
    out.push_back(a);
  }
  return out;
}

}  // namespace moonseed::testing
