#include "cli/engine/actor_rates.h"

#include <cmath>
#include <limits>
#include <utility>

#include "engine/run/metrics_log.h"

namespace moonseed::cli {
namespace {

constexpr double kNoRate = std::numeric_limits<double>::quiet_NaN();

}  // namespace

void ActorRates::sample(const engine::ActorList& list, double t_s) {
  const double dt = t_s - last_t_s_;
  std::unordered_map<int32_t, Sample> now;
  now.reserve(list.actors.size());
  for (const engine::ActorStatus& a : list.actors) {
    Sample s{a.frames, a.connections, a.connected, kNoRate};
    const auto before = last_.find(a.id);
    if (a.connected && before != last_.end() && before->second.connected &&
        before->second.connections == a.connections && dt > 0) {
      s.fps = static_cast<double>(a.frames - before->second.frames) / dt;
    }
    now.emplace(a.id, s);
  }
  last_ = std::move(now);
  last_t_s_ = t_s;
}

double ActorRates::fps(const engine::ActorStatus& status) const {
  const auto it = last_.find(status.id);
  if (!status.connected || it == last_.end() || it->second.connections != status.connections) return kNoRate;
  return it->second.fps;
}

std::string ActorRates::json(const engine::ActorList& list) const {
  std::string out = "[";
  for (const engine::ActorStatus& a : list.actors) {
    engine::MetricsRow row;
    row.add("id", a.id)
        .add_json("connected", a.connected ? "true" : "false")
        .add("host", a.host)
        .add("pid", a.pid)
        .add("frames", static_cast<double>(a.frames))
        .add("fps", fps(a))
        .add("connections", static_cast<double>(a.connections))
        .add("connected_s", a.connected_s);
    out += (out.size() > 1 ? ", " : "") + row.to_json();
  }
  return out + "]";
}

}  // namespace moonseed::cli
