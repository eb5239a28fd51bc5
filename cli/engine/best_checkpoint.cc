#include "cli/engine/best_checkpoint.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <system_error>

#include "base/log.h"
#include "base/text.h"
#include "engine/run/checkpoint_manifest.h"

namespace moonseed::cli {
namespace {

namespace fs = std::filesystem;

// The number after "key": in one line of JSON best.json's writer wrote; NaN when absent.
double number_field(const std::string& json, const std::string& key) {
  const std::string marker = "\"" + key + "\": ";
  const size_t at = json.find(marker);
  if (at == std::string::npos) return std::nan("");
  const char* begin = json.c_str() + at + marker.size();
  char* end = nullptr;
  const double value = std::strtod(begin, &end);
  return end == begin ? std::nan("") : value;
}

// Writes `text` to PATH through PATH.partial and a rename.
void write_atomically(const std::string& path, const std::string& text) {
  const std::string partial = path + ".partial";
  {
    std::ofstream out(partial, std::ios::trunc);
    out << text;
    out.flush();
    if (!out) {
      std::error_code ec;
      fs::remove(partial, ec);
      throw std::runtime_error("cannot write " + partial);
    }
  }
  std::error_code ec;
  fs::rename(partial, path, ec);
  if (ec) throw std::runtime_error("cannot rename " + partial + " to " + path + ": " + ec.message());
}

}  // namespace

std::string best_checkpoint_path(const std::string& run_dir) { return run_dir + "/best.pt"; }

BestCheckpoint::BestCheckpoint(std::string run_dir, bool eval_envs)
    : run_dir_(std::move(run_dir)), metric_(eval_envs ? "eval_return_mean" : "return_mean") {
  const std::string json_path = run_dir_ + "/best.json";
  std::error_code ec;
  if (!fs::is_regular_file(json_path, ec)) return;
  std::ifstream in(json_path);
  std::stringstream text;
  text << in.rdbuf();
  const double value = number_field(text.str(), "value");
  if (std::isnan(value) || text.str().find("\"metric\": \"" + metric_ + "\"") == std::string::npos) {
    base::log_warning(json_path + " holds no value of " + metric_ + "; the next checkpoint starts best.pt afresh");
    return;
  }
  value_ = value;
}

bool BestCheckpoint::consider(const std::string& checkpoint_path, double value, int64_t frames) {
  if (std::isnan(value) || (!std::isnan(value_) && value <= value_)) return false;
  const std::string best = best_checkpoint_path(run_dir_);
  const std::string partial = best + ".partial";
  // The old best.pt's manifest goes first, so that it never describes the new best.pt.
  engine::unseal_checkpoint(best);
  std::error_code ec;
  fs::remove(partial, ec);
  fs::create_hard_link(checkpoint_path, partial, ec);
  if (ec) {  // another file system, or links refused: a copy
    ec.clear();
    fs::copy_file(checkpoint_path, partial, fs::copy_options::overwrite_existing, ec);
  }
  if (!ec) fs::rename(partial, best, ec);
  if (ec) {
    std::error_code ignored;
    fs::remove(partial, ignored);
    throw std::runtime_error("cannot keep " + checkpoint_path + " as " + best + ": " + ec.message());
  }
  // Sealed last, as a checkpoint is; one left unsealed (a full disk) loads unverified.
  try {
    engine::seal_checkpoint(best, {});
  } catch (const std::exception& e) {
    base::log_warning(std::string(e.what()) + "; best.pt is kept without its manifest (`--checkpoint best` "
                      "loads it unverified)");
  }
  value_ = value;
  write_atomically(run_dir_ + "/best.json",
                   "{\"metric\": " + base::json_quote(metric_) + ", \"value\": " + base::number_text(value) +
                       ", \"frames\": " + std::to_string(frames) + ", \"checkpoint\": " +
                       base::json_quote(fs::path(checkpoint_path).filename().string()) + "}\n");
  return true;
}

}  // namespace moonseed::cli
