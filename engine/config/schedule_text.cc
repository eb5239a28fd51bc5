#include "engine/config/schedule_text.h"

#include "engine/config/values.h"

namespace moonseed::engine {
namespace {

std::string point_text(const std::pair<double, double>& p) {
  return "(" + format_number(p.first) + ", " + format_number(p.second) + ")";
}

}  // namespace

std::string schedule_refusal(const FieldSchema& field) {
  ExperimentConfig scratch;
  if (schedulable_field(scratch, field.path) != nullptr) return "";
  if (field.type != FieldType::kNumber) {
    const std::string type = type_name(field.type);
    return "cannot follow a schedule: it is not a number field (it is " +
           std::string(type[0] == 'i' ? "an " : "a ") + type + ")";
  }
  if (field.reload == ReloadClass::kRestart) {
    return "cannot follow a schedule: it is restart-only (a running experiment cannot change it); give it a number";
  }
  return std::string("cannot follow a schedule: it is not a hot field (reload class ") + reload_name(field.reload) +
         "); give it a number";
}

std::string schedule_literal(const Schedule& s) {
  std::string out = std::string("{schedule = \"") + kind_name(s.kind) + "\", axis = \"" +
                    axis_name(s.axis) + "\", points = {";
  for (size_t k = 0; k < s.points.size(); ++k) {
    out += (k ? ", {" : "{") + format_number(s.points[k].first) + ", " + format_number(s.points[k].second) + "}";
  }
  return out + "}}";
}

std::string schedule_text(const Schedule& s) {
  std::string out = std::string(kind_name(s.kind)) + " over " + axis_name(s.axis) + ": ";
  if (s.points.size() <= 4) {
    for (size_t k = 0; k < s.points.size(); ++k) out += (k ? " -> " : "") + point_text(s.points[k]);
    return out;
  }
  return out + point_text(s.points.front()) + " -> ... -> " + point_text(s.points.back()) + " (" +
         std::to_string(s.points.size()) + " points)";
}

std::string field_literal(const FieldSchema& field, const ExperimentConfig& config) {
  if (const Schedule* s = find_schedule(config, field.path)) return schedule_literal(*s);
  return lua_literal(field.get(config));
}

}  // namespace moonseed::engine
