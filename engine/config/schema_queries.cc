// Questions asked of the config schema (engine/config/schema.h): a field by
// path, the names in a section, what an unknown path most likely meant, the
// names of types and reload classes, and which fields two configs differ in.
// The schema itself, one row per field, is in schema.cc.
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "base/text.h"
#include "engine/config/schema.h"
#include "engine/config/schedule.h"

namespace moonseed::engine {

const FieldSchema* find_field(const std::string& path) {
  for (const FieldSchema& f : config_schema()) {
    if (f.path == path) return &f;
  }
  return nullptr;
}

bool is_section(const std::string& path) {
  for (const FieldSchema& f : config_schema()) {
    if (f.path.size() > path.size() && f.path.compare(0, path.size(), path) == 0 &&
        f.path[path.size()] == '.') {
      return true;
    }
  }
  return false;
}

std::vector<std::string> names_in(const std::string& section) {
  const std::string prefix = section.empty() ? "" : section + ".";
  std::vector<std::string> names;
  for (const FieldSchema& f : config_schema()) {
    if (f.path.compare(0, prefix.size(), prefix) != 0) continue;
    const std::string rest = f.path.substr(prefix.size());
    const std::string name = rest.substr(0, rest.find('.'));
    bool seen = false;
    for (const std::string& n : names) seen = seen || n == name;
    if (!seen) names.push_back(name);
  }
  return names;
}

std::string did_you_mean(const std::string& unknown_path) {
  const size_t dot = unknown_path.rfind('.');
  const std::string parent = dot == std::string::npos ? "" : unknown_path.substr(0, dot);
  const std::string leaf = dot == std::string::npos ? unknown_path : unknown_path.substr(dot + 1);
  // A sibling with a close name: a typo.
  std::vector<std::string> siblings = names_in(parent);
  if (parent.empty()) siblings.push_back(kRewardShapingPath);
  std::string sibling = base::closest_name(leaf, siblings);
  if (!sibling.empty()) return parent.empty() ? sibling : parent + "." + sibling;
  // A name another library uses for a field of this section.
  static const std::pair<const char*, const char*> kOtherNames[] = {
      {"learning_rate", "lr"},        {"batch_size", "batch"},       {"num_actors", "actors"},
      {"num_envs", "envs_per_actor"}, {"discount", "gamma"},         {"ent_coef", "entropy_cost"},
      {"vf_coef", "baseline_cost"},   {"unroll_length", "unroll"}};
  for (const auto& [other, ours] : kOtherNames) {
    if (leaf == other && std::find(siblings.begin(), siblings.end(), ours) != siblings.end()) {
      return parent.empty() ? ours : parent + "." + ours;
    }
  }
  // The same name in another section: a field written at the wrong level.
  for (const FieldSchema& f : config_schema()) {
    const size_t f_dot = f.path.rfind('.');
    if (f.path.substr(f_dot == std::string::npos ? 0 : f_dot + 1) == leaf) return f.path;
  }
  return "";
}

std::string unknown_field_problem(const std::string& unknown_path) {
  const std::string suggestion = did_you_mean(unknown_path);
  if (!suggestion.empty()) return "unknown field; did you mean '" + suggestion + "'?";
  const size_t dot = unknown_path.rfind('.');
  std::string section = dot == std::string::npos ? "" : unknown_path.substr(0, dot);
  while (!section.empty() && !is_section(section)) {  // "optimzer.lr": the experiment has no optimzer
    const size_t up = section.rfind('.');
    section = up == std::string::npos ? "" : section.substr(0, up);
  }
  return "unknown field; " + (section.empty() ? std::string("the experiment") : section) +
         " has: " + base::join(names_in(section));
}

const char* type_name(FieldType type) {
  switch (type) {
    case FieldType::kNumber: return "number";
    case FieldType::kInteger: return "integer";
    case FieldType::kString: return "string";
    case FieldType::kBool: return "boolean";
    case FieldType::kIntegerList: return "list of integers";
    case FieldType::kNumberMap: return "map of numbers";
    case FieldType::kLayerList: return "list of layers";
    case FieldType::kWrapperList: return "list of wrappers";
  }
  return "?";
}

const char* reload_name(ReloadClass reload) {
  switch (reload) {
    case ReloadClass::kHot: return "hot";
    case ReloadClass::kBoundary: return "boundary";
    case ReloadClass::kRestart: return "restart";
  }
  return "?";
}

void copy_fields(const ExperimentConfig& from, ExperimentConfig& to, ReloadClass reload) {
  for (const FieldSchema& f : config_schema()) {
    if (f.reload == reload) f.set(to, f.get(from));
  }
  if (reload == ReloadClass::kHot) to.schedules = from.schedules;
}

std::vector<std::string> changed_fields(const ExperimentConfig& a,
                                        const ExperimentConfig& b) {
  std::vector<std::string> changed;
  for (const FieldSchema& f : config_schema()) {
    const Schedule* schedule_a = find_schedule(a, f.path);
    const Schedule* schedule_b = find_schedule(b, f.path);
    const bool same_schedule =
        schedule_a == nullptr ? schedule_b == nullptr : schedule_b != nullptr && *schedule_a == *schedule_b;
    if (f.get(a) != f.get(b) || !same_schedule) changed.push_back(f.path);
  }
  if (a.reward_shaping.source != b.reward_shaping.source) changed.push_back(kRewardShapingPath);
  return changed;
}

}  // namespace moonseed::engine
