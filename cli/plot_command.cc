// `moonseed plot RUN_DIR|RUNS_DIR... [-o FILE.png|FILE.svg] [--metric NAME]...
// [--x frames|time] [--no-group]`: learning curves as an image file, drawn by
// Debian's gnuplot (docs/plot.md). The runs are read by curves/; the script
// goes to gnuplot through a pipe, data inline, and the image is written under
// a temporary name, then renamed over FILE.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "base/log.h"
#include "base/text.h"
#include "cli/commands.h"
#include "cli/tool_process.h"
#include "curves/runs.h"

namespace moonseed::cli {
namespace {

namespace cv = moonseed::curves;

const char* const kPlotUsage =
    "usage: moonseed plot RUN_DIR|RUNS_DIR... [-o FILE.png|FILE.svg] [--metric NAME]...\n"
    "                     [--x frames|time] [--no-group]\n"
    "\n"
    "Draws learning curves from runs' metrics.jsonl with gnuplot (Debian: gnuplot-nox).\n"
    "A directory without a metrics.jsonl is searched for run directories below it.\n"
    "\n"
    "  -o FILE          the image: .png or .svg (default curves.png)\n"
    "  --metric NAME    a metric to draw, one chart each, stacked in one image (repeatable;\n"
    "                   default return_mean, and eval_return_mean when a run has it)\n"
    "  --x frames|time  the x axis: env frames (default) or wall time time_s\n"
    "  --no-group       one line per run; by default runs that differ only by their seed\n"
    "                   are one line (their mean) with a band from their min to their max\n";

struct Options {
  std::vector<std::string> paths;
  std::string output = "curves.png";
  std::vector<std::string> metrics;
  cv::XAxis x = cv::XAxis::kFrames;
  bool group = true;
};

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

// One line of a chart: its data block and how to draw it.
struct Line {
  std::string label;
  std::string data;  // rows "x y" or "x mean low high"
  bool band = false;
};

std::string series_data(const cv::Series& s) {
  std::string out;
  for (const auto& p : s) out += base::number_text(p.x) + " " + base::number_text(p.y) + "\n";
  return out;
}

std::vector<Line> chart_lines(const std::vector<cv::Run>& runs, const std::string& metric, const Options& o) {
  std::vector<Line> lines;
  auto single = [&](size_t i) {
    const cv::Series s = cv::series(runs[i], metric, o.x);
    if (s.empty()) {
      base::log_warning("run " + runs[i].dir + " has no " + metric + " with a " + cv::x_key(o.x) +
                        " in any row: left out of its chart");
      return;
    }
    lines.push_back({runs[i].id, series_data(s), false});
  };
  std::vector<cv::Group> groups;
  if (o.group) {
    groups = cv::group_runs(runs);
  } else {
    for (size_t i = 0; i < runs.size(); ++i) groups.push_back({runs[i].id, {i}});
  }
  for (const auto& g : groups) {
    std::vector<size_t> members;
    std::vector<cv::Series> series;
    for (const size_t i : g.runs) {
      if (!cv::has_metric(runs[i], metric)) {
        base::log_warning("run " + runs[i].dir + " has no metric " + metric + ": left out of its chart");
        continue;
      }
      cv::Series s = cv::series(runs[i], metric, o.x);
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
    Line line{g.label, "", true};
    for (size_t k = 0; k < b.x.size(); ++k) {
      line.data += base::number_text(b.x[k]) + " " + base::number_text(b.mean[k]) + " " + base::number_text(b.low[k]) +
                   " " + base::number_text(b.high[k]) + "\n";
    }
    lines.push_back(std::move(line));
  }
  return lines;
}

std::string gnuplot_script(const std::vector<std::pair<std::string, std::vector<Line>>>& charts, const Options& o,
                           const std::string& temp) {
  const bool svg = ends_with(o.output, ".svg");
  const int height = 420 * static_cast<int>(charts.size());
  std::string s = std::string("set terminal ") + (svg ? "svg" : "pngcairo") + " size 900," + std::to_string(height) +
                  " noenhanced font 'sans,10'" + (svg ? " background 'white'" : "") + "\n";
  s += "set output " + gp_quote(temp) + "\n";
  for (size_t c = 0; c < charts.size(); ++c) {
    for (size_t l = 0; l < charts[c].second.size(); ++l) {
      s += "$d" + std::to_string(c) + "_" + std::to_string(l) + " << EOD\n" + charts[c].second[l].data + "EOD\n";
    }
  }
  if (charts.size() > 1) s += "set multiplot layout " + std::to_string(charts.size()) + ",1\n";
  s += "set grid\nset key below\nset xlabel " + gp_quote(o.x == cv::XAxis::kFrames ? "frames" : "time_s (s)") + "\n";
  for (size_t c = 0; c < charts.size(); ++c) {
    s += "set title " + gp_quote(charts[c].first) + "\nset ylabel " + gp_quote(charts[c].first) + "\nplot ";
    const auto& lines = charts[c].second;
    for (size_t l = 0; l < lines.size(); ++l) {
      const std::string data = "$d" + std::to_string(c) + "_" + std::to_string(l);
      const std::string color = " lc " + std::to_string(l + 1);
      if (l > 0) s += ", ";
      if (lines[l].band) {
        s += data + " using 1:3:4 with filledcurves fs transparent solid 0.25 noborder" + color + " notitle, ";
      }
      s += data + " using 1:2 with lines lw 2" + color + " title " + gp_quote(lines[l].label);
    }
    s += "\n";
  }
  if (charts.size() > 1) s += "unset multiplot\n";
  s += "set output\n";
  return s;
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
  auto is_present = [&](const std::string& m) {
    for (const auto& p : present) {
      if (p == m) return true;
    }
    return false;
  };
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
  std::vector<std::pair<std::string, std::vector<Line>>> charts;
  size_t line_count = 0;
  for (const auto& m : metrics) {
    charts.emplace_back(m, chart_lines(runs, m, o));
    if (charts.back().second.empty()) throw std::runtime_error("no run has a value of " + m + " to draw");
    line_count += charts.back().second.size();
  }

  const std::string temp = o.output + ".partial";
  const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw std::runtime_error("cannot write " + o.output + ": " + std::strerror(errno));
  ::close(fd);
  try {
    run_gnuplot(gnuplot_script(charts, o, temp));
  } catch (...) {
    ::unlink(temp.c_str());
    throw;
  }
  if (::rename(temp.c_str(), o.output.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    ::unlink(temp.c_str());
    throw std::runtime_error("cannot write " + o.output + ": " + why);
  }
  std::printf("moonseed plot: wrote %s (%zu run%s, %zu chart%s, %zu line%s)\n", o.output.c_str(), runs.size(),
              runs.size() == 1 ? "" : "s", charts.size(), charts.size() == 1 ? "" : "s", line_count,
              line_count == 1 ? "" : "s");
  return 0;
}

}  // namespace moonseed::cli
