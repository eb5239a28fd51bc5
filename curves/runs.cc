#include "curves/runs.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>

#include "base/log.h"
#include "base/text.h"

namespace moonseed::curves {
namespace {

namespace fs = std::filesystem;

bool is_run(const fs::path& dir) {
  std::error_code ec;
  return fs::is_regular_file(dir / "metrics.jsonl", ec);
}

void find_below(const fs::path& dir, std::vector<std::string>& found) {
  std::error_code ec;
  std::vector<fs::path> subdirs;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    std::error_code type_ec;
    if (entry.is_directory(type_ec)) subdirs.push_back(entry.path());
  }
  std::sort(subdirs.begin(), subdirs.end());
  for (const auto& sub : subdirs) {
    if (is_run(sub)) {
      found.push_back(sub.string());
    } else {
      find_below(sub, found);
    }
  }
}

// The value of a top-level `  key = value,` line of config.lua, or "".
std::string top_level_value(const std::string& line, const std::string& key) {
  const std::string prefix = "  " + key + " = ";
  if (line.rfind(prefix, 0) != 0) return "";
  std::string value = line.substr(prefix.size());
  if (!value.empty() && value.back() == ',') value.pop_back();
  return value;
}

// A Lua string literal as base::lua_quote writes it, read back.
std::string lua_unquote(const std::string& literal) {
  if (literal.size() < 2 || literal.front() != '"' || literal.back() != '"') return literal;
  std::string out;
  for (size_t i = 1; i + 1 < literal.size(); ++i) {
    if (literal[i] != '\\' || i + 2 >= literal.size()) {
      out += literal[i];
      continue;
    }
    const char e = literal[++i];
    if (e == 'n') {
      out += '\n';
    } else if (e == 'r') {
      out += '\r';
    } else if (e == 't') {
      out += '\t';
    } else if (e >= '0' && e <= '9') {
      int code = e - '0';
      for (int k = 0; k < 2 && i + 2 < literal.size() && literal[i + 1] >= '0' && literal[i + 1] <= '9'; ++k) {
        code = code * 10 + (literal[++i] - '0');
      }
      out += static_cast<char>(code);
    } else {
      out += e;
    }
  }
  return out;
}

void read_config(Run& run) {
  std::ifstream in(run.dir + "/config.lua");
  if (!in) {
    base::log_warning("run " + run.dir + " has no config.lua: it is named " + run.id + " and grouped with no other run");
    return;
  }
  std::string line;
  std::string key;
  bool in_env = false;  // inside `  env = {`, whose `    id = "..."` names the env
  while (std::getline(in, line)) {
    if (line == "  env = {") in_env = true;
    if (in_env && line == "  },") in_env = false;
    if (in_env && line.rfind("    id = ", 0) == 0) {
      std::string id = line.substr(9);
      if (!id.empty() && id.back() == ',') id.pop_back();
      run.env = lua_unquote(id);
    }
    const std::string name = top_level_value(line, "name");
    if (!name.empty()) run.name = lua_unquote(name);
    const std::string seed = top_level_value(line, "seed");
    if (!seed.empty()) {
      try {
        run.seed = std::stoll(seed);
      } catch (const std::exception&) {
      }
      continue;
    }
    if (!top_level_value(line, "runs_dir").empty()) continue;
    key += line;
    key += '\n';
  }
  run.config_key = key;
}

}  // namespace

const char* x_key(XAxis x) { return x == XAxis::kFrames ? "frames" : "time_s"; }

std::vector<std::string> find_run_dirs(const std::vector<std::string>& paths) {
  std::vector<std::string> found;
  for (const auto& path : paths) {
    std::error_code ec;
    if (!fs::exists(path, ec)) throw std::runtime_error(path + ": no such directory");
    if (!fs::is_directory(path, ec)) throw std::runtime_error(path + ": not a directory (give a run directory or a directory of runs)");
    if (is_run(path)) {
      found.push_back(path);
      continue;
    }
    const size_t before = found.size();
    find_below(path, found);
    // With one path, the error below says it; with several, this names the one that had none.
    if (found.size() == before && paths.size() > 1) base::log_warning("no run directory (one with a metrics.jsonl) under " + path);
  }
  if (found.empty()) {
    throw std::runtime_error("no run directory (one with a metrics.jsonl) in " + base::join(paths));
  }
  return found;
}

Run read_run_config(const std::string& dir) {
  Run run;
  run.dir = dir;
  std::string trimmed = dir;
  while (trimmed.size() > 1 && trimmed.back() == '/') trimmed.pop_back();
  run.id = fs::path(trimmed).filename().string();
  run.name = run.id;
  read_config(run);
  return run;
}

Run read_run(const std::string& dir) {
  std::ifstream in(dir + "/metrics.jsonl");
  if (!in) throw std::runtime_error("cannot read " + dir + "/metrics.jsonl");
  Run run = read_run_config(dir);
  std::string line;
  size_t line_number = 0;
  size_t skipped = 0;
  size_t first_skipped = 0;
  while (std::getline(in, line)) {
    ++line_number;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    std::optional<MetricsRow> row = parse_metrics_row(line);
    if (!row) {
      if (skipped++ == 0) first_skipped = line_number;
      continue;
    }
    if (is_point(*row)) run.rows.push_back(std::move(*row));
  }
  if (skipped > 0) {
    base::log_warning(dir + "/metrics.jsonl: skipped " + std::to_string(skipped) + " line" + (skipped == 1 ? "" : "s") +
                      " that " + (skipped == 1 ? "is" : "are") + " not a whole JSON object (from line " +
                      std::to_string(first_skipped) + ")");
  }
  return run;
}

std::vector<std::string> metric_names(const std::vector<Run>& runs) {
  std::set<std::string> names;
  for (const auto& run : runs) {
    for (const auto& row : run.rows) {
      for (const auto& [key, value] : row.numbers) names.insert(key);
    }
  }
  return {names.begin(), names.end()};
}

bool has_metric(const Run& run, const std::string& metric) {
  for (const auto& row : run.rows) {
    if (row.numbers.count(metric)) return true;
  }
  return false;
}

Series series(const Run& run, const std::string& metric, XAxis x) {
  Series out;
  const std::string xk = x_key(x);
  for (const auto& row : run.rows) {
    const auto xi = row.numbers.find(xk);
    const auto yi = row.numbers.find(metric);
    if (xi == row.numbers.end() || yi == row.numbers.end()) continue;
    while (!out.empty() && out.back().x >= xi->second) out.pop_back();
    out.push_back({xi->second, yi->second});
  }
  return out;
}

std::vector<Group> group_runs(const std::vector<Run>& runs) {
  std::vector<const Run*> all;
  all.reserve(runs.size());
  for (const Run& run : runs) all.push_back(&run);
  return group_runs(all);
}

std::vector<Group> group_runs(const std::vector<const Run*>& runs) {
  std::vector<Group> groups;
  std::map<std::string, size_t> by_key;
  for (size_t i = 0; i < runs.size(); ++i) {
    const std::string& key = runs[i]->config_key;
    if (!key.empty()) {
      const auto it = by_key.find(key);
      if (it != by_key.end()) {
        groups[it->second].runs.push_back(i);
        continue;
      }
      by_key[key] = groups.size();
    }
    groups.push_back({runs[i]->name, {i}});
  }
  std::map<std::string, int> seen;
  for (auto& group : groups) {
    const int n = ++seen[group.label];
    if (n > 1) group.label += " #" + std::to_string(n);
    if (group.runs.size() > 1) {
      // "seeds" only when every run has a seed of its own: repeats of one seed are runs.
      std::set<int64_t> seeds;
      for (const size_t r : group.runs) {
        if (runs[r]->seed) seeds.insert(*runs[r]->seed);
      }
      const bool own_seeds = seeds.size() == group.runs.size();
      group.label += " (" + std::to_string(group.runs.size()) + (own_seeds ? " seeds)" : " runs)");
    }
  }
  return groups;
}

double interpolate(const Series& s, double x) {
  const auto after = std::upper_bound(s.begin(), s.end(), x, [](double v, const Point& p) { return v < p.x; });
  if (after == s.begin()) return s.front().y;
  if (after == s.end()) return s.back().y;
  const Point& a = *(after - 1);
  const Point& b = *after;
  if (a.x == x) return a.y;
  return a.y + (b.y - a.y) * (x - a.x) / (b.x - a.x);
}

Band band(const std::vector<Series>& members, size_t max_points) {
  Band out;
  if (members.empty()) return out;
  double lo = -std::numeric_limits<double>::infinity();
  double hi = std::numeric_limits<double>::infinity();
  for (const auto& s : members) {
    if (s.empty()) return out;
    lo = std::max(lo, s.front().x);
    hi = std::min(hi, s.back().x);
  }
  if (lo > hi) return out;
  std::vector<double> grid;
  for (const auto& s : members) {
    for (const auto& p : s) {
      if (p.x >= lo && p.x <= hi) grid.push_back(p.x);
    }
  }
  std::sort(grid.begin(), grid.end());
  grid.erase(std::unique(grid.begin(), grid.end()), grid.end());
  if (grid.size() > max_points && max_points >= 2) {
    grid.resize(max_points);
    for (size_t i = 0; i < max_points; ++i) grid[i] = lo + (hi - lo) * static_cast<double>(i) / static_cast<double>(max_points - 1);
  }
  for (const double x : grid) {
    double sum = 0;
    double low = std::numeric_limits<double>::infinity();
    double high = -std::numeric_limits<double>::infinity();
    for (const auto& s : members) {
      const double y = interpolate(s, x);
      sum += y;
      low = std::min(low, y);
      high = std::max(high, y);
    }
    out.x.push_back(x);
    out.mean.push_back(sum / static_cast<double>(members.size()));
    out.low.push_back(low);
    out.high.push_back(high);
  }
  return out;
}

}  // namespace moonseed::curves
