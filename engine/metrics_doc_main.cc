// Rewrites the table of the algorithms' own metrics in docs/metrics.md from their registrations
// (engine/learner/agent_registry.h with_algorithm_metrics; target metrics_docs).
#include <cstdio>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "engine/learner/agent_registry.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s docs/metrics.md\n", argv[0]);
    return 2;
  }
  std::stringstream page;
  page << std::ifstream(argv[1], std::ios::binary).rdbuf();
  std::string text;
  try {
    text = moonseed::engine::with_algorithm_metrics(page.str());
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "%s: %s: %s\n", argv[0], argv[1], e.what());
    return 1;
  }
  std::ofstream out(argv[1], std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  if (!out) {
    std::fprintf(stderr, "%s: cannot write %s\n", argv[0], argv[1]);
    return 1;
  }
  return 0;
}
