// What the dashboard answers (Server::route): who may ask (the Host check on
// loopback, the token and its throttle beyond), the page's files, and the
// JSON API over the run directories (docs/dashboard.md).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <httplib.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "base/secret.h"
#include "base/text.h"
#include "dashboard/assets.h"
#include "dashboard/http_server.h"
#include "dashboard/server.h"
#include "rpc/guards.h"

namespace moonseed::dashboard {
namespace {

constexpr const char* kCookie = "moonseed_token";

const char* content_type(const std::string& name) {
  const auto ends_with = [&](const char* ext) {
    const size_t n = std::strlen(ext);
    return name.size() >= n && name.compare(name.size() - n, n, ext) == 0;
  };
  if (ends_with(".html")) return "text/html; charset=utf-8";
  if (ends_with(".js")) return "text/javascript; charset=utf-8";
  if (ends_with(".css")) return "text/css; charset=utf-8";
  return "application/octet-stream";
}

// Up to `max_bytes` of `path` from byte `from`; "" past its end. Sets `size` to the file's size.
std::string read_part(const std::string& path, size_t from, size_t max_bytes, size_t& size) {
  size = 0;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "";
  struct stat st {};
  std::string out;
  if (::fstat(fd, &st) == 0 && static_cast<size_t>(st.st_size) > from) {
    size = static_cast<size_t>(st.st_size);
    out.resize(std::min(max_bytes, size - from));
    size_t got = 0;
    while (got < out.size()) {
      const ssize_t n = ::pread(fd, out.data() + got, out.size() - got, static_cast<off_t>(from + got));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      got += static_cast<size_t>(n);
    }
    out.resize(got);
  } else if (::fstat(fd, &st) == 0) {
    size = static_cast<size_t>(st.st_size);
  }
  ::close(fd);
  return out;
}

// A request parameter as a non-negative integer no larger than `max`; false when absent or not one.
bool param_index(const httplib::Request& req, const char* name, size_t max, size_t& out) {
  if (!req.has_param(name)) return false;
  const std::string text = req.get_param_value(name);
  if (text.empty() || text.size() > 18) return false;
  size_t value = 0;
  for (const char c : text) {
    if (c < '0' || c > '9') return false;
    value = value * 10 + static_cast<size_t>(c - '0');
  }
  if (value > max) return false;
  out = value;
  return true;
}

void bad_request(httplib::Response& res, const std::string& why) {
  res.status = 400;
  res.set_content("400 bad request: " + why + "\n", "text/plain; charset=utf-8");
}

// The token a request carries: ?token=, "Authorization: Bearer", or the cookie.
std::string given_token(const httplib::Request& req) {
  if (req.has_param("token")) return req.get_param_value("token");
  const std::string auth = req.get_header_value("Authorization");
  if (auth.rfind("Bearer ", 0) == 0) return auth.substr(7);
  const std::string cookies = req.get_header_value("Cookie");
  const std::string key = std::string(kCookie) + "=";
  size_t at = 0;
  while (at < cookies.size()) {
    while (at < cookies.size() && (cookies[at] == ' ' || cookies[at] == ';')) ++at;
    const size_t end = std::min(cookies.find(';', at), cookies.size());
    if (cookies.compare(at, key.size(), key) == 0) return cookies.substr(at + key.size(), end - at - key.size());
    at = end;
  }
  return "";
}

// The Host header names this host: `localhost`, a literal IPv4 loopback
// address (127.a.b.c, four decimal parts), [::1], or one of `names` (the
// configured dashboard.hosts, any case), then nothing or :PORT. A name that
// only starts like one (127.attacker.example) is another host's: a page of
// that name could reach this dashboard through DNS rebinding.
bool host_header_names_this_host(const std::string& host_header, const std::vector<std::string>& names) {
  std::string host = host_header, port;
  if (!host.empty() && host[0] == '[') {
    const size_t close = host.find(']');
    if (close == std::string::npos) return false;
    port = host.substr(close + 1);
    host = host.substr(0, close + 1);
  } else if (const size_t colon = host.find(':'); colon != std::string::npos) {
    port = host.substr(colon);
    host = host.substr(0, colon);
  }
  if (!port.empty()) {
    const bool digits = port.size() >= 2 && port.size() <= 6 && port[0] == ':' &&
                        std::all_of(port.begin() + 1, port.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (!digits) return false;
  }
  if (host == "localhost" || host == "[::1]") return true;
  const auto same = [&](const std::string& name) {
    return name.size() == host.size() && std::equal(name.begin(), name.end(), host.begin(), [](char a, char b) {
             return std::tolower(static_cast<unsigned char>(a)) == std::tolower(static_cast<unsigned char>(b));
           });
  };
  if (std::any_of(names.begin(), names.end(), same)) return true;
  in_addr address{};
  return ::inet_pton(AF_INET, host.c_str(), &address) == 1 && (ntohl(address.s_addr) >> 24) == 127;
}

std::string run_name(const std::string& dir) {
  std::string d = dir;
  while (d.size() > 1 && d.back() == '/') d.pop_back();
  const size_t slash = d.rfind('/');
  return slash == std::string::npos ? d : d.substr(slash + 1);
}

// "[1, 2.5, ...]": numbers that read back exactly.
std::string json_numbers(const std::vector<double>& values) {
  std::string out = "[";
  for (size_t i = 0; i < values.size(); ++i) out += (i ? ", " : "") + base::number_text(values[i]);
  return out + "]";
}

// The JSON object lines of `chunk` (whole lines) as a JSON list's items, and
// for each whether it is a point (curves::is_point). A line that is not one
// whole JSON object (a file edited or damaged by hand) is left out of both, so
// the reply stays valid JSON.
struct RowsReply {
  std::string rows;    // "row,\nrow"
  std::string points;  // "[true, false]"
};
RowsReply rows_of(const std::string& chunk) {
  RowsReply out;
  out.points = "[";
  for (size_t at = 0; at < chunk.size();) {
    const size_t end = chunk.find('\n', at);
    const std::string_view line = std::string_view(chunk).substr(at, end - at);
    at = end + 1;
    const std::optional<curves::MetricsRow> row = curves::parse_metrics_row(line);
    if (!row) continue;
    const bool first = out.points.size() == 1;
    out.rows.append(first ? "" : ",\n").append(line);
    out.points += std::string(first ? "" : ", ") + (curves::is_point(*row) ? "true" : "false");
  }
  out.points += "]";
  return out;
}

}  // namespace

void Server::route() {
  using httplib::Request;
  using httplib::Response;
  http_->set_pre_routing_handler([this](const Request& req, Response& res) {
    if (!require_token_) {
      if (host_header_names_this_host(req.get_header_value("Host"), options_.hosts)) {
        return httplib::Server::HandlerResponse::Unhandled;
      }
      res.status = 403;
      res.set_content("403 forbidden: this dashboard answers only requests addressed to this host (its loopback "
                      "addresses, localhost, or a name in dashboard.hosts)\n",
                      "text/plain");
      return httplib::Server::HandlerResponse::Handled;
    }
    const std::string given = given_token(req);
    const auto unauthorized = [&] {
      res.status = 401;
      res.set_content("401 unauthorized: open the dashboard with ?token=THE_RUN'S_AUTH_TOKEN\n", "text/plain");
      return httplib::Server::HandlerResponse::Handled;
    };
    if (given.empty()) return unauthorized();  // no guess: nothing to count
    const auto now = std::chrono::steady_clock::now();
    const rpc::detail::AuthCheck check = auth_throttle_->check(req.remote_addr, now);
    if (check.verdict != rpc::detail::AuthCheck::Verdict::kCheck) {
      auth_throttle_->note_refused(req.remote_addr, now);
      const int64_t seconds = std::max<int64_t>(1, (check.wait.count() + 999) / 1000);
      res.status = 429;
      res.set_header("Retry-After", std::to_string(seconds));
      res.set_content("429 too many requests: too many wrong tokens; try again in " + std::to_string(seconds) +
                          " s\n",
                      "text/plain");
      return httplib::Server::HandlerResponse::Handled;
    }
    if (!base::secret_matches(token_, given)) {
      auth_throttle_->failed(req.remote_addr, now);
      return unauthorized();
    }
    if (check.from_budget) auth_throttle_->give_back();
    auth_throttle_->succeeded(req.remote_addr);
    if (req.has_param("token")) {
      res.set_header("Set-Cookie", std::string(kCookie) + "=" + given + "; Path=/; HttpOnly; SameSite=Strict");
    }
    return httplib::Server::HandlerResponse::Unhandled;
  });
  http_->set_exception_handler([](const Request&, Response& res, std::exception_ptr) {
    res.status = 500;
    res.set_content("500 internal error\n", "text/plain");
  });
  http_->Get(R"(/([A-Za-z0-9_.-]*))", [](const Request& req, Response& res) {
    const std::string name = req.matches[1].str().empty() ? "index.html" : req.matches[1].str();
    for (const Asset& a : assets()) {
      if (name == a.name) {
        res.set_content(reinterpret_cast<const char*>(a.data), a.size, content_type(name));
        return;
      }
    }
    res.status = 404;
    res.set_content("404 not found\n", "text/plain");
  });
  http_->Get("/api/runs", [this](const Request&, Response& res) {
    std::string out = "[";
    for (size_t i = 0; i < run_dirs_.size(); ++i) {
      out += (i ? ", " : "") + std::string("{\"run\": ") + std::to_string(i) +
             ", \"name\": " + base::json_quote(run_name(run_dirs_[i])) + ", \"group\": " +
             std::to_string(group_of_[i]) + ", \"group_label\": " + base::json_quote(groups_[group_of_[i]].label) +
             "}";
    }
    res.set_content(out + "]", "application/json");
  });
  http_->Get("/api/rows", [this](const Request& req, Response& res) {
    size_t run = 0;
    size_t from = 0;
    if (!param_index(req, "run", run_dirs_.empty() ? 0 : run_dirs_.size() - 1, run) || run_dirs_.empty()) {
      return bad_request(res, "run= must be the index of a run (GET /api/runs)");
    }
    if (!param_index(req, "from", SIZE_MAX / 2, from)) return bad_request(res, "from= must be a byte offset");
    size_t size = 0;
    std::string chunk = read_part(run_dirs_[run] + "/metrics.jsonl", from, kMaxChunkBytes, size);
    // Whole lines only; a line longer than a whole chunk is skipped.
    const size_t last = chunk.rfind('\n');
    size_t next = from;
    if (last != std::string::npos) {
      chunk.resize(last + 1);
      next = from + chunk.size();
    } else {
      if (chunk.size() == kMaxChunkBytes) next = from + chunk.size();
      chunk.clear();
    }
    const RowsReply reply = rows_of(chunk);
    res.set_content("{\"from\": " + std::to_string(from) + ", \"next\": " + std::to_string(next) +
                        ", \"size\": " + std::to_string(size) + ", \"rows\": [" + reply.rows +
                        "], \"points\": " + reply.points + "}",
                    "application/json");
  });
  http_->Get("/api/band", [this](const Request& req, Response& res) {
    size_t group = 0;
    if (groups_.empty() || !param_index(req, "group", groups_.size() - 1, group)) {
      return bad_request(res, "group= must be the index of a group (GET /api/runs)");
    }
    const std::string metric = req.get_param_value("metric");
    if (metric.empty() || metric.size() > kMaxMetricName) return bad_request(res, "metric= must name a metric");
    const std::string x = req.has_param("x") ? req.get_param_value("x") : "frames";
    if (x != "frames" && x != "time_s") return bad_request(res, "x= must be frames or time_s");
    const curves::XAxis axis = x == "frames" ? curves::XAxis::kFrames : curves::XAxis::kTime;
    // Read now: a run of the group may still be writing.
    std::vector<size_t> members;
    std::vector<curves::Series> series;
    for (const size_t run : groups_[group].runs) {
      curves::Series s;
      try {
        s = curves::series(curves::read_run(run_dirs_[run]), metric, axis);
      } catch (const std::exception&) {
        continue;  // its metrics.jsonl cannot be read (any more): left out, as a run without the metric
      }
      if (s.empty()) continue;
      members.push_back(run);
      series.push_back(std::move(s));
    }
    const curves::Band band = curves::band(series, kMaxBandPoints);
    std::string runs;
    for (const size_t run : members) runs += (runs.empty() ? "" : ", ") + std::to_string(run);
    res.set_content("{\"group\": " + std::to_string(group) + ", \"label\": " + base::json_quote(groups_[group].label) +
                        ", \"metric\": " + base::json_quote(metric) + ", \"x_axis\": " + base::json_quote(x) +
                        ", \"runs\": [" + runs + "], \"x\": " + json_numbers(band.x) +
                        ", \"mean\": " + json_numbers(band.mean) + ", \"low\": " + json_numbers(band.low) +
                        ", \"high\": " + json_numbers(band.high) + "}",
                    "application/json");
  });
  http_->Get("/api/config", [this](const Request& req, Response& res) {
    size_t run = 0;
    if (run_dirs_.empty() || !param_index(req, "run", run_dirs_.size() - 1, run)) {
      return bad_request(res, "run= must be the index of a run (GET /api/runs)");
    }
    size_t size = 0;
    res.set_content(read_part(run_dirs_[run] + "/config.lua", 0, kMaxConfigBytes, size), "text/plain; charset=utf-8");
  });
  http_->Get("/api/status", [this](const Request&, Response& res) { res.set_content(status(), "application/json"); });
}

}  // namespace moonseed::dashboard
