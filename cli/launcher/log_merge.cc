// `moonseed log merge`: one new log of every record of its inputs, in wall-time order.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "base/text.h"
#include "cli/launcher/log_args.h"
#include "explog/reader.h"
#include "explog/writer.h"

namespace moonseed::cli::log_cmd {
namespace {

namespace ex = explog;
namespace fs = std::filesystem;

// The first way `b` differs from `a` in what a merged log needs to be the same; "" when none.
std::string first_difference(const ex::LogSchema& a, const ex::LogSchema& b) {
  const size_t n = std::min(a.columns.size(), b.columns.size());
  for (size_t i = 0; i < n; ++i) {
    const ex::ColumnSpec& x = a.columns[i];
    const ex::ColumnSpec& y = b.columns[i];
    const std::string which = "column " + std::to_string(i) + " ";
    if (x.name != y.name) return which + "is named " + x.name + " vs " + y.name;
    if (x.dtype != y.dtype) {
      return which + x.name + " has dtype " + ex::dtype_name(x.dtype) + " vs " + ex::dtype_name(y.dtype);
    }
    if (x.shape != y.shape)
      return which + x.name + " has shape " + base::shape_text(x.shape, ",") + " vs " + base::shape_text(y.shape, ",");
  }
  if (a.columns.size() != b.columns.size()) {
    return std::to_string(a.columns.size()) + " columns vs " + std::to_string(b.columns.size());
  }
  if (a.spec != b.spec) return "spec " + a.spec + " vs " + b.spec;
  return "";
}

}  // namespace

int merge(const CommandLine& cl) {
  if (cl.paths.size() < 2) throw UsageError("expected OUT_DIR and at least one log to merge");
  const std::string out_dir = cl.paths[0];
  std::vector<std::unique_ptr<ex::LogReader>> readers;
  std::vector<const ex::LogReader*> inputs;
  for (size_t i = 1; i < cl.paths.size(); ++i) {
    readers.push_back(std::make_unique<ex::LogReader>(log_location(cl.paths[i])));
    inputs.push_back(readers.back().get());
    warn_about(readers.back()->problems());
  }
  ex::LogSchema schema = readers[0]->schema();
  std::vector<std::string> run_ids = {schema.run_id};
  for (size_t i = 1; i < readers.size(); ++i) {
    const std::string diff = first_difference(schema, readers[i]->schema());
    if (!diff.empty()) {
      throw std::runtime_error("cannot merge " + cl.paths[i + 1] + " with " + cl.paths[1] + ": " + diff);
    }
    const std::string& id = readers[i]->schema().run_id;
    bool seen = false;
    for (const std::string& r : run_ids) seen = seen || r == id;
    if (!seen) run_ids.push_back(id);
  }
  for (size_t i = 1; i < run_ids.size(); ++i) schema.run_id += "+" + run_ids[i];

  std::error_code ec;
  if (fs::is_directory(out_dir, ec)) {
    for (const auto& entry : fs::directory_iterator(out_dir, ec)) {
      if (entry.path().filename().string().find(".mslog") != std::string::npos) {
        throw std::runtime_error(out_dir + " already holds an experience log (" +
                                 entry.path().filename().string() + "); merge writes a new one");
      }
    }
  }
  ex::WriterOptions options;
  options.directory = out_dir;
  options.full_queue = ex::FullQueuePolicy::kBackpressure;
  ex::LogWriter writer(schema, options);
  ex::MergedCursor cursor(inputs);
  uint64_t merged = 0;
  while (std::optional<ex::Record> r = cursor.next()) {
    writer.append(std::move(*r));
    ++merged;
  }
  writer.close();
  const ex::WriterStats stats = writer.stats();
  if (!stats.error.empty()) throw std::runtime_error("writing " + out_dir + " failed: " + stats.error);
  if (stats.dropped + stats.lost > 0) {  // neither without an error: kept as a guard
    throw std::runtime_error("writing " + out_dir + " lost " + std::to_string(stats.dropped + stats.lost) +
                             " records");
  }
  const bool unreadable = report_unreadable(cursor.problems());
  std::printf("merged %llu records from %zu logs into %s (%llu segments, %llu bytes)\n",
              static_cast<unsigned long long>(merged), readers.size(), out_dir.c_str(),
              static_cast<unsigned long long>(stats.segments),
              static_cast<unsigned long long>(stats.bytes_disk));
  return unreadable ? 1 : 0;
}
}  // namespace moonseed::cli::log_cmd
