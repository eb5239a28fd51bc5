#include "cli/engine/run_control.h"

#include <cmath>
#include <sstream>
#include <stdexcept>

#include "base/log.h"
#include "base/text.h"
#include "cli/engine/run_report.h"
#include "engine/config/schedule_text.h"
#include "engine/config/schedule.h"
#include "engine/config/diff.h"
#include "scripts/api/lua_schedules.h"
#include "engine/config/schema.h"
#include "engine/config/values.h"

namespace moonseed::cli {
namespace {

const char* kCommands =
    "help | status | get [FIELD] | set FIELD VALUE | reload | pause | resume | checkpoint | "
    "evaluate [N] [greedy|sample] | stop";

std::string number(double v) { return std::isfinite(v) ? engine::format_number(v) : "null"; }

std::string trimmed(const std::string& s) {
  const size_t a = s.find_first_not_of(" \t");
  if (a == std::string::npos) return "";
  const size_t b = s.find_last_not_of(" \t");
  return s.substr(a, b - a + 1);
}

// A field's value as JSON; a scheduled field as its description.
std::string field_json(const engine::FieldSchema& field, const engine::ExperimentConfig& cfg) {
  if (const engine::Schedule* s = engine::find_schedule(cfg, field.path)) {
    return base::json_quote(engine::schedule_text(*s));
  }
  return engine::json_value(field.get(cfg));
}

// `status`'s "local_actors": one object per local slot.
std::string slots_json(const std::vector<SlotState>& slots) {
  std::string out = "[";
  for (const SlotState& s : slots) {
    engine::MetricsRow slot;
    slot.add("id", s.id).add("state", state_name(s.state)).add("pid", s.pid).add("deaths", s.deaths)
        .add("deaths_in_window", s.deaths_in_window).add("hung", s.hung);
    if (s.state == SlotState::State::kBackingOff) slot.add("restart_in_s", s.restart_in_s);
    if (!s.last_death.empty()) slot.add("last_death", s.last_death);
    if (s.memory_bytes >= 0) slot.add("memory_mb", static_cast<double>(s.memory_bytes) / (1 << 20));
    out += (out.size() > 1 ? ", " : "") + slot.to_json();
  }
  return out + "]";
}

}  // namespace

std::string control_ok(const std::string& result_json) { return "{\"ok\": true, \"result\": " + result_json + "}"; }

std::string control_error(const std::string& message) {
  return "{\"ok\": false, \"error\": " + base::json_quote(message) + "}";
}

std::string RunControl::handle(const std::string& request) {
  const std::string line = trimmed(request);
  const size_t space = line.find(' ');
  const std::string command = line.substr(0, space);
  const std::string args = space == std::string::npos ? "" : trimmed(line.substr(space + 1));
  try {
    return dispatch(command, args);
  } catch (const std::exception& e) {
    return control_error(command + ": " + e.what());
  }
}

std::string RunControl::dispatch(const std::string& command, const std::string& args) {
  if (command == "help" || command.empty()) return control_ok(base::json_quote(kCommands));
  if (command == "status") return control_ok(status());
  if (command == "get") return control_ok(get(args));
  if ((command == "set" || command == "reload") && c_.rank > 0) {
    return control_error(command + ": this is rank " + std::to_string(c_.rank) +
                         " of a learner group; change the config on rank 0 (its run directory), which applies it "
                         "on every rank at the same training step");
  }
  if (command == "set") {
    const size_t space = args.find(' ');
    if (space == std::string::npos) return control_error("set: expected FIELD VALUE, e.g. set optimizer.lr 3e-4");
    const std::string path = args.substr(0, space);
    const std::string value = trimmed(args.substr(space + 1));
    return reloaded(c_.reload.reload(c_.cfg, c_.elapsed_s(), c_.progress, {path + "=" + value}, "control"));
  }
  if (command == "reload") return reloaded(c_.reload.reload(c_.cfg, c_.elapsed_s(), c_.progress, {}, "control"));
  if (command == "pause" || command == "resume") {
    c_.learner.set_paused(command == "pause");
    base::log_info(std::string("training ") + (command == "pause" ? "paused" : "resumed") + " (control)");
    return control_ok(status());
  }
  if (command == "checkpoint") return control_ok(checkpoint());
  if (command == "evaluate") return control_ok(evaluate(args));
  if (command == "stop") {
    if (c_.stop_reason.empty()) c_.stop_reason = "stopped from the control socket";
    return control_ok("\"stopping\"");
  }
  return control_error("unknown command '" + command + "'; commands: " + kCommands);
}

std::string RunControl::status() {
  // On rank 0 of a group, once a log tick has read the ranks' reports: the group's counters.
  const bool group = c_.group != nullptr && !c_.group->empty();
  const engine::LearnerStats s = group ? c_.group->with_group_counters(c_.learner.stats()) : c_.learner.stats();
  const double elapsed = c_.elapsed_s();
  engine::MetricsRow row;
  row.add("run_dir", c_.dir.path()).add("name", c_.cfg.name).add("env", c_.cfg.env.id)
      .add("elapsed_s", elapsed);
  add_counters(row, s, c_.cfg.topology.eval_envs_per_actor > 0);
  if (group) {
    const GroupView& view = c_.group->view();
    row.add("fps", view.fps).add("learners", view.world_size)
        .add("learners_reporting", static_cast<double>(view.ranks.size()))
        .add_json("ranks", c_.group->ranks_json(elapsed, GroupStatus::stale_after_s(c_.cfg.log.interval_s)));
  }
  // Both versions: a `set` is in config_version at once, in applied_config_version after the next step.
  row.add("config_version", static_cast<double>(s.config_version))
      .add("applied_config_version", static_cast<double>(s.applied_config_version))
      .add_json("paused", s.paused ? "true" : "false").add("actors_expected", c_.cfg.topology.actors);
  const engine::ActorList actors = c_.learner.actor_list(ActorRates::kMaxListed);
  row.add_json("actor_list", rates_.json(actors)).add("actors_not_listed", static_cast<double>(actors.not_listed));
  if (local_actors_ != nullptr) {
    const std::vector<SlotState> slots = local_actors_->slots();
    const SlotCounts counts = count_slots(slots);
    row.add("actors_backing_off", counts.backing_off).add("actors_parked", counts.parked)
        .add("actor_deaths", counts.deaths).add_json("local_actors", slots_json(slots));
  }
  return row.to_json();
}

void RunControl::sample_actors() { rates_.sample(c_.learner.actor_list(ActorRates::kMaxListed), c_.elapsed_s()); }

std::string RunControl::get(const std::string& path) {
  if (path.empty()) {
    std::string out = "{";
    for (const engine::FieldSchema& f : engine::config_schema()) {
      out += (out.size() > 1 ? ", " : "") + base::json_quote(f.path) + ": " + field_json(f, c_.cfg);
    }
    return out + "}";
  }
  const engine::FieldSchema* field = engine::find_field(path);
  if (field == nullptr) {
    const std::string close = engine::did_you_mean(path);
    throw std::invalid_argument("unknown field " + path + (close.empty() ? "" : "; did you mean '" + close + "'?"));
  }
  return field_json(*field, c_.cfg);
}

std::string RunControl::checkpoint() { return base::json_quote(c_.checkpoint()); }

std::string RunControl::evaluate(const std::string& args) {
  std::istringstream in(args);
  std::string word;
  int episodes = 10;
  bool greedy = true;
  while (in >> word) {
    if (word == "greedy" || word == "sample") {
      greedy = word == "greedy";
    } else {
      size_t used = 0;
      int n = 0;
      try {
        n = std::stoi(word, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used != word.size()) throw std::invalid_argument("expected [N] [greedy|sample], got '" + args + "'");
      episodes = n;
    }
  }
  // Seeds far from the actors' (small numbers derived from the run seed).
  const uint64_t seed = 1000000007ull + c_.cfg.seed;
  const engine::Evaluation e = c_.learner.evaluate(episodes, seed, greedy);
  double sum = 0, length = 0;
  std::string returns = "[";
  for (size_t i = 0; i < e.returns.size(); ++i) {
    sum += e.returns[i];
    length += static_cast<double>(e.lengths[i]);
    returns += (i ? ", " : "") + number(e.returns[i]);
  }
  const double n = static_cast<double>(e.returns.size());
  return "{\"episodes\": " + std::to_string(e.returns.size()) + ", \"policy\": \"" + (greedy ? "greedy" : "sample") +
         "\", \"return_mean\": " + number(sum / n) + ", \"length_mean\": " + number(length / n) +
         ", \"returns\": " + returns + "]}";
}

std::string RunControl::reloaded(const HotReload::Outcome& outcome) {
  using Kind = HotReload::Outcome::Kind;
  if (outcome.kind == Kind::kApplied || outcome.kind == Kind::kUnchanged) return control_ok(outcome.json);
  return control_error(outcome.message);
}

}  // namespace moonseed::cli
