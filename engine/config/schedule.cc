#include "engine/config/schedule.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "base/constants.h"
#include "base/text.h"
#include "engine/config/experiment_config.h"
#include "engine/config/schema.h"

namespace moonseed::engine {
namespace {

using base::kPi;

size_t points_required(Schedule::Kind kind) {
  switch (kind) {
    case Schedule::Kind::kConstant: return 1;
    case Schedule::Kind::kLinear:
    case Schedule::Kind::kCosine: return 2;
    case Schedule::Kind::kStep:
    case Schedule::Kind::kPiecewise: return 0;  // any number from 1
  }
  return 0;
}

}  // namespace

double Schedule::at(double x) const {
  if (points.empty()) throw std::logic_error("Schedule::at: a schedule without points");
  if (x <= points.front().first) return points.front().second;
  if (x >= points.back().first) return points.back().second;
  // The first point beyond x; x lies in [previous point, it).
  const auto next = std::upper_bound(points.begin(), points.end(), x,
                                     [](double v, const std::pair<double, double>& p) { return v < p.first; });
  const auto& [x0, y0] = *(next - 1);
  const auto& [x1, y1] = *next;
  const double t = (x - x0) / (x1 - x0);
  switch (kind) {
    case Kind::kConstant:
    case Kind::kStep:
      return y0;
    case Kind::kLinear:
    case Kind::kPiecewise:
      return y0 + t * (y1 - y0);
    case Kind::kCosine:
      return y1 + (y0 - y1) * 0.5 * (1 + std::cos(kPi * t));
  }
  return y0;
}

bool Schedule::operator==(const Schedule& other) const {
  return kind == other.kind && axis == other.axis && points == other.points;
}

bool ScheduledField::operator==(const ScheduledField& other) const {
  return path == other.path && schedule == other.schedule;
}

std::string schedule_problem(const Schedule& s) {
  const size_t required = points_required(s.kind);
  if (s.points.empty()) return "a schedule needs at least one point";
  if (required != 0 && s.points.size() != required) {
    return std::string("a ") + kind_name(s.kind) + " schedule has " + std::to_string(required) +
           (required == 1 ? " point" : " points") + ", got " + std::to_string(s.points.size());
  }
  const bool progress = s.axis == Schedule::Axis::kProgress;
  for (size_t k = 0; k < s.points.size(); ++k) {
    const auto& [x, y] = s.points[k];
    const std::string which = "point " + std::to_string(k + 1);
    if (!std::isfinite(x) || !std::isfinite(y)) {
      return which + " is not finite: (" + base::number_text(x) + ", " + base::number_text(y) + ")";
    }
    if (x < 0 || (progress && x > 1)) {
      return which + ": x = " + base::number_text(x) + " is outside " + (progress ? "[0, 1] (progress)" : ">= 0 (frames)");
    }
    if (k > 0 && !(s.points[k - 1].first < x)) {
      return "points must have strictly increasing x: " + which + " (x = " + base::number_text(x) +
             ") follows x = " + base::number_text(s.points[k - 1].first);
    }
  }
  return "";
}

const char* kind_name(Schedule::Kind kind) {
  switch (kind) {
    case Schedule::Kind::kConstant: return "constant";
    case Schedule::Kind::kLinear: return "linear";
    case Schedule::Kind::kCosine: return "cosine";
    case Schedule::Kind::kStep: return "step";
    case Schedule::Kind::kPiecewise: return "piecewise";
  }
  return "?";
}

const char* axis_name(Schedule::Axis axis) {
  return axis == Schedule::Axis::kFrames ? "frames" : "progress";
}

double* schedulable_field(ExperimentConfig& config, const std::string& path) {
  const FieldSchema* field = find_field(path);
  if (field == nullptr || field->reload != ReloadClass::kHot || !field->number) return nullptr;
  return field->number(config);
}

const Schedule* find_schedule(const ExperimentConfig& config, const std::string& path) {
  for (const ScheduledField& s : config.schedules) {
    if (s.path == path) return &s.schedule;
  }
  return nullptr;
}

void apply_schedules(ExperimentConfig& config, double frames) {
  for (const ScheduledField& s : config.schedules) {
    double* field = schedulable_field(config, s.path);
    if (field == nullptr) {
      throw std::invalid_argument("apply_schedules: " + s.path + " cannot follow a schedule");
    }
    double x = frames;
    if (s.schedule.axis == Schedule::Axis::kProgress) {
      if (config.stop.frames <= 0) {
        throw std::invalid_argument("apply_schedules: " + s.path +
                                    " follows progress but stop.frames is " + std::to_string(config.stop.frames));
      }
      x = frames / static_cast<double>(config.stop.frames);
    }
    *field = s.schedule.at(x);
  }
}

}  // namespace moonseed::engine
