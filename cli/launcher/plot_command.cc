// `moonseed plot RUN_DIR|RUNS_DIR... [-o FILE.png|FILE.svg] [--metric NAME]...
// [--x frames|time] [--no-group] [--title T] [--smooth N] [--size WxH] [--csv FILE]`:
// learning curves as an image file, drawn by Debian's gnuplot (docs/plot.md).
// The runs are read by curves/; what the figure shows (panels per metric and
// env, ticks, labels, smoothing) is decided here and in curves/figure.h, then
// the script goes to gnuplot through a pipe, data inline, and the image is
// written under a temporary name, then renamed over FILE. --csv writes the
// same series, as drawn.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "base/log.h"
#include "base/text.h"
#include "cli/common/commands.h"
#include "cli/common/tool_process.h"
#include "curves/figure.h"
#include "curves/runs.h"

namespace moonseed::cli {
namespace {

namespace cv = moonseed::curves;

const char* const kPlotUsage =
    "usage: moonseed plot RUN_DIR|RUNS_DIR... [-o FILE.png|FILE.svg] [--metric NAME]...\n"
    "                     [--x frames|time] [--no-group] [--title TEXT] [--smooth N]\n"
    "                     [--size WxH] [--csv FILE]\n"
    "\n"
    "Draws learning curves from runs' metrics.jsonl with gnuplot (Debian: gnuplot-nox).\n"
    "A directory without a metrics.jsonl is searched for run directories below it.\n"
    "One panel per metric and env: runs of different envs are drawn side by side.\n"
    "\n"
    "  -o FILE          the image: .png or .svg (default curves.png)\n"
    "  --metric NAME    a metric to draw, one row of panels each (repeatable; default\n"
    "                   return_mean, and eval_return_mean when a run has it)\n"
    "  --x frames|time  the x axis: env frames (default) or wall time time_s\n"
    "  --no-group       one line per run; by default runs that differ only by their seed\n"
    "                   are one line (their mean) with a band from their min to their max\n"
    "  --title TEXT     a title above the panels\n"
    "  --smooth N       each point the mean of it and the N-1 rows before it (default 1)\n"
    "  --size WxH       the image's size in pixels (default 900 wide, 420 high per row)\n"
    "  --csv FILE       also write the series drawn (smoothed as drawn) as CSV\n";

struct Options {
  std::vector<std::string> paths;
  std::string output = "curves.png";
  std::vector<std::string> metrics;
  cv::XAxis x = cv::XAxis::kFrames;
  bool group = true;
  std::string title;
  int smooth = 1;
  int width = 0;   // 0: from the grid
  int height = 0;
  std::string csv;
};

int parse_int(const std::string& option, const std::string& text, int low, int high) {
  size_t used = 0;
  long v = 0;
  try {
    v = std::stol(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size() || v < low || v > high) {
    throw std::runtime_error(option + " takes a whole number from " + std::to_string(low) + " to " +
                             std::to_string(high) + ", not '" + text + "'");
  }
  return static_cast<int>(v);
}

Options parse_options(const Args& args) {
  Options o;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&]() -> const std::string& {
      if (i + 1 >= args.size()) throw std::runtime_error(a + " needs a value\n" + kPlotUsage);
      return args[++i];
    };
    if (a == "-o" || a == "--output") {
      o.output = value();
    } else if (a == "--metric") {
      o.metrics.push_back(value());
    } else if (a == "--x") {
      const std::string& x = value();
      if (x == "frames") {
        o.x = cv::XAxis::kFrames;
      } else if (x == "time") {
        o.x = cv::XAxis::kTime;
      } else {
        throw std::runtime_error("--x takes frames or time, not '" + x + "'");
      }
    } else if (a == "--no-group") {
      o.group = false;
    } else if (a == "--title") {
      o.title = value();
    } else if (a == "--smooth") {
      o.smooth = parse_int(a, value(), 1, 100000);
    } else if (a == "--size") {
      const std::string& size = value();
      const size_t x = size.find('x');
      if (x == std::string::npos) throw std::runtime_error("--size takes WIDTHxHEIGHT in pixels, e.g. 1200x800, not '" + size + "'");
      o.width = parse_int("--size's width", size.substr(0, x), 200, 10000);
      o.height = parse_int("--size's height", size.substr(x + 1), 150, 10000);
    } else if (a == "--csv") {
      o.csv = value();
    } else if (!a.empty() && a[0] == '-') {
      throw std::runtime_error("unknown option " + a + "\n" + kPlotUsage);
    } else {
      o.paths.push_back(a);
    }
  }
  if (o.paths.empty()) throw std::runtime_error(std::string("name at least one run directory\n") + kPlotUsage);
  return o;
}

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// A gnuplot single-quoted string: only ' needs escaping, as ''.
std::string gp_quote(const std::string& s) {
  std::string out = "'";
  for (const char c : s) out += c == '\'' ? std::string("''") : std::string(1, c);
  return out + "'";
}

// One line of a panel, as drawn: points (x, y) or, for a group of seeds,
// (x, mean, low, high).
struct Line {
  std::string label;
  bool band = false;
  std::vector<std::array<double, 4>> points;
};

// One panel: a metric of the runs of one env.
struct Panel {
  std::string metric;
  std::string env;  // the runs' env.id ("" when unknown)
  std::vector<Line> lines;
  bool env_in_title = false;  // the figure has runs of several envs
};

// A single run's label: its experiment's name and seed, "cartpole_vtrace (seed 2)".
std::string run_label(const cv::Run& run) {
  return run.name + (run.seed ? " (seed " + std::to_string(*run.seed) + ")" : std::string());
}

Line single_line(const cv::Run& run, const cv::Series& s) {
  Line line{run_label(run), false, {}};
  for (const auto& p : s) line.points.push_back({p.x, p.y, p.y, p.y});
  return line;
}

// The lines of `metric` for the runs `members` (indexes into `runs`): a line per run, or per
// group of seeds with its band; each series smoothed before the seeds are combined.
std::vector<Line> panel_lines(const std::vector<cv::Run>& runs, const std::vector<size_t>& members_of_panel,
                              const std::string& metric, const Options& o) {
  std::vector<Line> lines;
  auto series_of = [&](size_t i) { return cv::smooth(cv::series(runs[i], metric, o.x), o.smooth); };
  auto single = [&](size_t i) {
    const cv::Series s = series_of(i);
    if (s.empty()) {
      base::log_warning("run " + runs[i].dir + " has no " + metric + " with a " + cv::x_key(o.x) +
                        " in any row: left out of its chart");
      return;
    }
    lines.push_back(single_line(runs[i], s));
  };
  std::vector<const cv::Run*> subset;
  for (const size_t i : members_of_panel) subset.push_back(&runs[i]);
  std::vector<cv::Group> groups;
  if (o.group) {
    groups = cv::group_runs(subset);
  } else {
    for (size_t k = 0; k < subset.size(); ++k) groups.push_back({run_label(runs[members_of_panel[k]]), {k}});
  }
  for (const auto& g : groups) {
    std::vector<size_t> members;
    std::vector<cv::Series> series;
    for (const size_t k : g.runs) {
      const size_t i = members_of_panel[k];
      if (!cv::has_metric(runs[i], metric)) {
        base::log_warning("run " + runs[i].dir + " has no metric " + metric + ": left out of its chart");
        continue;
      }
      cv::Series s = series_of(i);
      if (s.empty()) {
        single(i);  // says why it is left out
        continue;
      }
      members.push_back(i);
      series.push_back(std::move(s));
    }
    if (members.size() == 1) single(members[0]);
    if (members.size() <= 1) continue;
    const cv::Band b = cv::band(series);
    if (b.x.empty()) {
      base::log_warning("the runs of " + g.label + " do not overlap on " + cv::x_key(o.x) + " for " + metric +
                        ": drawn one by one");
      for (const size_t i : members) single(i);
      continue;
    }
    Line line{g.label, true, {}};
    for (size_t k = 0; k < b.x.size(); ++k) line.points.push_back({b.x[k], b.mean[k], b.low[k], b.high[k]});
    lines.push_back(std::move(line));
  }
  // Two lines never share a label: repeats of one name and seed are told apart.
  std::map<std::string, int> seen;
  for (Line& line : lines) {
    if (const int n = ++seen[line.label]; n > 1) line.label += " #" + std::to_string(n);
  }
  return lines;
}

// The x range and its ticks, one for every panel so that they compare: from 0 (frames and
// time start there) to the last point of any.
cv::Ticks x_ticks(const std::vector<Panel>& panels, double unit) {
  double high = 0;
  for (const Panel& panel : panels) {
    for (const Line& line : panel.lines) {
      for (const auto& p : line.points) high = std::max(high, p[0] / unit);
    }
  }
  return cv::nice_ticks(0, high > 0 ? high : 1, 6, /*tight=*/true);
}

cv::Ticks y_ticks(const Panel& panel) {
  double low = 0, high = 0;
  bool any = false;
  for (const Line& line : panel.lines) {
    for (const auto& p : line.points) {
      low = any ? std::min(low, p[2]) : p[2];
      high = any ? std::max(high, p[3]) : p[3];
      any = true;
    }
  }
  return cv::nice_ticks(low, high, 6, /*tight=*/false);
}

std::string tics(const cv::Ticks& t) {
  std::string out = "(";
  for (size_t k = 0; k < t.at.size(); ++k) {
    out += (k ? ", " : "") + gp_quote(t.labels[k]) + " " + base::number_text(t.at[k]);
  }
  return out + ")";
}

struct Layout {
  cv::Grid grid;
  std::vector<int> skip_after;  // per panel: empty places to skip after it (the rest of its metric's row)
};

// One row (or more, past 3 envs) per metric, the envs side by side.
Layout layout_of(const std::vector<Panel>& panels) {
  std::vector<std::pair<std::string, int>> per_metric;  // in order
  for (const Panel& p : panels) {
    if (per_metric.empty() || per_metric.back().first != p.metric) per_metric.emplace_back(p.metric, 0);
    ++per_metric.back().second;
  }
  int widest = 1;
  for (const auto& m : per_metric) widest = std::max(widest, m.second);
  Layout layout;
  layout.grid.cols = cv::grid_for(1, widest).cols;
  layout.grid.rows = 0;
  for (const auto& m : per_metric) {
    const int rows = (m.second + layout.grid.cols - 1) / layout.grid.cols;
    layout.grid.rows += rows;
    for (int k = 0; k < m.second; ++k) {
      layout.skip_after.push_back(k + 1 == m.second ? rows * layout.grid.cols - m.second : 0);
    }
  }
  return layout;
}

std::string gnuplot_script(const std::vector<Panel>& panels, const Options& o, const std::string& temp, int width,
                           int height, const Layout& layout) {
  const bool svg = ends_with(o.output, ".svg");
  std::string s = std::string("set terminal ") + (svg ? "svg" : "pngcairo") + " size " + std::to_string(width) + "," +
                  std::to_string(height) + " noenhanced font 'sans,11'" + (svg ? " background 'white'" : "") + "\n";
  s += "set output " + gp_quote(temp) + "\n";
  for (size_t c = 0; c < panels.size(); ++c) {
    for (size_t l = 0; l < panels[c].lines.size(); ++l) {
      s += "$d" + std::to_string(c) + "_" + std::to_string(l) + " << EOD\n";
      for (const auto& p : panels[c].lines[l].points) {
        s += base::number_text(p[0]) + " " + base::number_text(p[1]) + " " + base::number_text(p[2]) + " " +
             base::number_text(p[3]) + "\n";
      }
      s += "EOD\n";
    }
  }
  s += "set multiplot layout " + std::to_string(layout.grid.rows) + "," + std::to_string(layout.grid.cols) +
       (o.title.empty() ? "" : " title " + gp_quote(o.title) + " font ',14'") + "\n";
  // Room on the right for the last x label; the legend under each panel.
  s += "set grid\nset key below\nset rmargin 4\n";
  // One colour per label across the panels: a run or group is the same colour everywhere.
  std::map<std::string, int> colour;
  for (const Panel& panel : panels) {
    for (const Line& line : panel.lines) colour.emplace(line.label, static_cast<int>(colour.size()) + 1);
  }
  double max_time = 0;
  for (const Panel& panel : panels) {
    for (const Line& line : panel.lines) max_time = std::max(max_time, line.points.empty() ? 0 : line.points.back()[0]);
  }
  const cv::TimeUnit unit = o.x == cv::XAxis::kTime ? cv::time_unit(max_time) : cv::TimeUnit{1, ""};
  const std::string x_label = o.x == cv::XAxis::kFrames ? "env frames" : "wall time (" + unit.name + ")";
  const std::string smoothed = o.smooth > 1 ? ", smoothed over " + std::to_string(o.smooth) + " rows" : "";
  const cv::Ticks xt = x_ticks(panels, unit.seconds);
  for (size_t c = 0; c < panels.size(); ++c) {
    const Panel& panel = panels[c];
    const cv::MetricLabel label = cv::metric_label(panel.metric);
    const cv::Ticks yt = y_ticks(panel);
    s += "set title " + gp_quote((panel.env_in_title ? panel.env + ": " : "") + label.title + smoothed) + "\n";
    s += "set xlabel " + gp_quote(x_label) + "\nset ylabel " + gp_quote(label.axis) + "\n";
    s += "set xrange [" + base::number_text(xt.low) + ":" + base::number_text(xt.high) + "]\nset xtics " + tics(xt) + "\n";
    s += "set yrange [" + base::number_text(yt.low) + ":" + base::number_text(yt.high) + "]\nset ytics " + tics(yt) + "\n";
    s += "plot ";
    const std::string x = o.x == cv::XAxis::kTime ? "($1/" + base::number_text(unit.seconds) + ")" : "1";
    for (size_t l = 0; l < panel.lines.size(); ++l) {
      const Line& line = panel.lines[l];
      const std::string data = "$d" + std::to_string(c) + "_" + std::to_string(l);
      const std::string lc = " lc " + std::to_string(colour.at(line.label));
      if (l > 0) s += ", ";
      if (line.band) s += data + " using " + x + ":3:4 with filledcurves fs transparent solid 0.25 noborder" + lc + " notitle, ";
      s += data + " using " + x + ":2 with lines lw 2" + lc + " title " + gp_quote(line.label);
    }
    s += "\n";
    for (int k = 0; k < layout.skip_after[c]; ++k) s += "set multiplot next\n";
  }
  s += "unset multiplot\nset output\n";
  return s;
}

// A CSV field: quoted when it holds a comma, a quote or a line break.
std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\n\r") == std::string::npos) return text;
  std::string out = "\"";
  for (const char c : text) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

// The series drawn, one row per point: metric, env, line, x (frames or seconds), y, and the
// band's low and high for a group of seeds (empty for a single run).
std::string csv_of(const std::vector<Panel>& panels, const Options& o) {
  std::string out = std::string("metric,env,line,") + cv::x_key(o.x) + ",y,low,high\n";
  for (const Panel& panel : panels) {
    for (const Line& line : panel.lines) {
      const std::string prefix = csv_field(panel.metric) + "," + csv_field(panel.env) + "," + csv_field(line.label) + ",";
      for (const auto& p : line.points) {
        out += prefix + base::number_text(p[0]) + "," + base::number_text(p[1]) + "," +
               (line.band ? base::number_text(p[2]) + "," + base::number_text(p[3]) : std::string(",")) + "\n";
      }
    }
  }
  return out;
}

// Writes `text` to `path` through a temporary file renamed over it.
void write_whole_file(const std::string& path, const std::string& text) {
  const std::string temp = path + ".partial";
  FILE* f = std::fopen(temp.c_str(), "w");
  if (f == nullptr) throw std::runtime_error("cannot write " + path + ": " + std::strerror(errno));
  const bool written = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  const int saved = errno;
  if (std::fclose(f) != 0 || !written || ::rename(temp.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(written ? errno : saved);
    ::unlink(temp.c_str());
    throw std::runtime_error("cannot write " + path + ": " + why);
  }
}

// Runs gnuplot on `script`; throws with its stderr when it fails.
void run_gnuplot(const std::string& script) {
  ToolProcess gnuplot("gnuplot", {}, "gnuplot-nox");
  const bool all_read = gnuplot.write(script.data(), script.size());  // false: it ended early, as its status says
  const int status = gnuplot.finish();
  const std::string errors = gnuplot.messages();
  if (!ToolProcess::succeeded(status) || !all_read) {
    throw std::runtime_error("gnuplot failed" + (errors.empty() ? std::string() : ":\n" + errors));
  }
  if (!errors.empty()) base::log_warning("gnuplot: " + errors);
}

}  // namespace

int plot_command(const Args& args) {
  if (wants_help(args)) {
    std::fputs(kPlotUsage, stdout);
    return 0;
  }
  const Options o = parse_options(args);
  if (!ends_with(o.output, ".png") && !ends_with(o.output, ".svg")) {
    throw std::runtime_error("-o " + o.output + ": the image must end in .png or .svg");
  }
  std::vector<cv::Run> runs;
  for (const auto& dir : cv::find_run_dirs(o.paths)) runs.push_back(cv::read_run(dir));
  const std::vector<std::string> present = cv::metric_names(runs);
  auto is_present = [&](const std::string& m) { return std::find(present.begin(), present.end(), m) != present.end(); };
  std::vector<std::string> metrics = o.metrics;
  if (metrics.empty()) {
    metrics.push_back("return_mean");
    if (is_present("eval_return_mean")) metrics.push_back("eval_return_mean");
  }
  for (const auto& m : metrics) {
    if (is_present(m)) continue;
    const std::string close = base::closest_name(m, present);
    throw std::runtime_error("no run has the metric '" + m + "'" + (close.empty() ? "" : " (did you mean " + close + "?)") +
                             "; the runs have: " + (present.empty() ? "no metrics at all" : base::join(present)));
  }
  // The envs in order of first appearance: CartPole's 500 and Catch's 1 never share an axis.
  std::vector<std::string> envs;
  std::vector<std::vector<size_t>> runs_of_env;
  for (size_t i = 0; i < runs.size(); ++i) {
    const auto it = std::find(envs.begin(), envs.end(), runs[i].env);
    if (it == envs.end()) {
      envs.push_back(runs[i].env);
      runs_of_env.push_back({i});
    } else {
      runs_of_env[static_cast<size_t>(it - envs.begin())].push_back(i);
    }
  }
  std::vector<Panel> panels;
  size_t line_count = 0;
  for (const auto& m : metrics) {
    size_t lines_of_metric = 0;
    for (size_t e = 0; e < envs.size(); ++e) {
      Panel panel{m, envs[e], panel_lines(runs, runs_of_env[e], m, o), envs.size() > 1};
      if (panel.lines.empty()) continue;  // no run of this env has the metric: said above
      lines_of_metric += panel.lines.size();
      panels.push_back(std::move(panel));
    }
    if (lines_of_metric == 0) throw std::runtime_error("no run has a value of " + m + " to draw");
    line_count += lines_of_metric;
  }
  const Layout layout = layout_of(panels);
  const int width = o.width > 0 ? o.width : (layout.grid.cols == 1 ? 900 : 600 * layout.grid.cols);
  const int height = o.height > 0 ? o.height : 420 * layout.grid.rows + (o.title.empty() ? 0 : 40);

  const std::string temp = o.output + ".partial";
  const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw std::runtime_error("cannot write " + o.output + ": " + std::strerror(errno));
  ::close(fd);
  try {
    run_gnuplot(gnuplot_script(panels, o, temp, width, height, layout));
  } catch (...) {
    ::unlink(temp.c_str());
    throw;
  }
  if (::rename(temp.c_str(), o.output.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    ::unlink(temp.c_str());
    throw std::runtime_error("cannot write " + o.output + ": " + why);
  }
  if (!o.csv.empty()) write_whole_file(o.csv, csv_of(panels, o));
  std::printf("moonseed plot: wrote %s (%zu run%s, %zu chart%s, %zu line%s)%s\n", o.output.c_str(), runs.size(),
              runs.size() == 1 ? "" : "s", panels.size(), panels.size() == 1 ? "" : "s", line_count,
              line_count == 1 ? "" : "s", o.csv.empty() ? "" : (" and " + o.csv).c_str());
  return 0;
}

}  // namespace moonseed::cli
