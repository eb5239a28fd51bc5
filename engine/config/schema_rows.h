// How schema rows (engine/config/schema.h FieldSchema) are written: one helper per field type,
// given the field's dotted path and how to reach its member, so that reading, writing, checking
// and documenting a field all go through one accessor. schema.cc writes the core rows with them,
// and each algorithm's folder its section's (engine/config/section_registry.h).
//
//   number(MOONSEED_FIELD(optimizer.lr), 0, 1, kHot, "learning rate", true)
//   integer(MOONSEED_SECTION_FIELD(R2d2Config, burn_in), 0, 100000, kRestart, "steps ...")
#pragma once

#include <functional>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "engine/config/experiment_config.h"
#include "engine/config/schema.h"

namespace moonseed::engine::schema_rows {

inline constexpr double kInf = std::numeric_limits<double>::infinity();
inline constexpr ReloadClass kHot = ReloadClass::kHot;
inline constexpr ReloadClass kBoundary = ReloadClass::kBoundary;
inline constexpr ReloadClass kRestart = ReloadClass::kRestart;

// A field of the section S (section_registry.h): path "S::kName.member", read through
// config.section<S>().
#define MOONSEED_SECTION_FIELD(S, member) \
  std::string(S::kName) + "." #member, [](auto& c) -> auto& { return c.template section<S>().member; }

// The path string and the member expression come from one token sequence, so
// a field's dotted path can never drift from the member it reads.
#define MOONSEED_FIELD(member) #member, [](auto& c) -> auto& { return c.member; }

inline FieldSchema base(const std::string& path, FieldType type, double min, double max, ReloadClass reload,
                 const char* doc) {
  FieldSchema f;
  f.path = path;
  f.type = type;
  f.min = min;
  f.max = max;
  f.reload = reload;
  f.doc = doc;
  return f;
}

template <typename Access>
FieldSchema number(const std::string& path, Access access, double min, double max, ReloadClass reload,
                   const char* doc, bool min_exclusive = false) {
  FieldSchema f = base(path, FieldType::kNumber, min, max, reload, doc);
  f.min_exclusive = min_exclusive;
  f.get = [access](const ExperimentConfig& c) { return FieldValue(static_cast<double>(access(c))); };
  f.set = [access](ExperimentConfig& c, const FieldValue& v) { access(c) = std::get<double>(v); };
  f.number = [access](ExperimentConfig& c) -> double* { return &access(c); };
  return f;
}

template <typename Access>
FieldSchema integer(const std::string& path, Access access, double min, double max, ReloadClass reload,
                    const char* doc) {
  FieldSchema f = base(path, FieldType::kInteger, min, max, reload, doc);
  f.get = [access](const ExperimentConfig& c) { return FieldValue(static_cast<int64_t>(access(c))); };
  f.set = [access](ExperimentConfig& c, const FieldValue& v) {
    using Member = std::remove_reference_t<decltype(access(c))>;
    access(c) = static_cast<Member>(std::get<int64_t>(v));
  };
  return f;
}

template <typename Access>
FieldSchema string(const std::string& path, Access access, std::vector<std::string> allowed,
                   ReloadClass reload, const char* doc) {
  FieldSchema f = base(path, FieldType::kString, 0, 0, reload, doc);
  f.allowed = std::move(allowed);
  f.get = [access](const ExperimentConfig& c) { return FieldValue(access(c)); };
  f.set = [access](ExperimentConfig& c, const FieldValue& v) { access(c) = std::get<std::string>(v); };
  return f;
}

template <typename Access>
FieldSchema boolean(const std::string& path, Access access, ReloadClass reload, const char* doc) {
  FieldSchema f = base(path, FieldType::kBool, 0, 0, reload, doc);
  f.get = [access](const ExperimentConfig& c) { return FieldValue(static_cast<bool>(access(c))); };
  f.set = [access](ExperimentConfig& c, const FieldValue& v) { access(c) = std::get<bool>(v); };
  return f;
}

template <typename Access>
FieldSchema integer_list(const std::string& path, Access access, double min, double max,
                         ReloadClass reload, const char* doc) {
  FieldSchema f = base(path, FieldType::kIntegerList, min, max, reload, doc);
  f.get = [access](const ExperimentConfig& c) {
    return FieldValue(std::vector<int64_t>(access(c).begin(), access(c).end()));
  };
  f.set = [access](ExperimentConfig& c, const FieldValue& v) {
    const auto& list = std::get<std::vector<int64_t>>(v);
    access(c).assign(list.begin(), list.end());
  };
  return f;
}

template <typename Access>
FieldSchema number_map(const std::string& path, Access access, ReloadClass reload, const char* doc) {
  FieldSchema f = base(path, FieldType::kNumberMap, -kInf, kInf, reload, doc);
  f.get = [access](const ExperimentConfig& c) { return FieldValue(NumberMap(access(c))); };
  f.set = [access](ExperimentConfig& c, const FieldValue& v) { access(c) = std::get<NumberMap>(v); };
  return f;
}

template <typename Access>
FieldSchema layer_list(const std::string& path, Access access, ReloadClass reload, const char* doc) {
  FieldSchema f = base(path, FieldType::kLayerList, 0, 0, reload, doc);
  f.get = [access](const ExperimentConfig& c) { return FieldValue(access(c)); };
  f.set = [access](ExperimentConfig& c, const FieldValue& v) { access(c) = std::get<LayerList>(v); };
  return f;
}

template <typename Access>
FieldSchema wrapper_list(const std::string& path, Access access, ReloadClass reload, const char* doc) {
  FieldSchema f = base(path, FieldType::kWrapperList, 0, 0, reload, doc);
  f.get = [access](const ExperimentConfig& c) { return FieldValue(access(c)); };
  f.set = [access](ExperimentConfig& c, const FieldValue& v) { access(c) = std::get<WrapperList>(v); };
  f.rule_doc = "kinds " + envs::wrapper_kind_names() + "; at most " + std::to_string(envs::kMaxWrappers);
  f.rule = [](const FieldValue& v) { return envs::wrapper_list_problem(std::get<WrapperList>(v), ""); };
  return f;
}

inline FieldSchema with_rule(FieldSchema f, std::string rule_doc,
                      std::function<std::string(const FieldValue&)> rule) {
  f.rule_doc = std::move(rule_doc);
  f.rule = std::move(rule);
  return f;
}

}  // namespace moonseed::engine::schema_rows
