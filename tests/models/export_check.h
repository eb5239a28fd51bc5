// What the export tests share: tensors written for Python as a TorchScript
// container (a module whose buffers are the tensors), and a run of
// tests/python/export_check.py, which loads exported modules with Debian's
// python3-torch and compares their outputs with the ones written here
// (MOONSEED_PYTHON and MOONSEED_SOURCE_DIR come from the test's CMake target).
#pragma once

#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <torch/script.h>

namespace moonseed::testing {

// DIR/data.pt: a module with each tensor as a buffer, read in Python with
// getattr(torch.jit.load(path), name).
inline void write_tensors(const std::string& path, const std::vector<std::pair<std::string, torch::Tensor>>& tensors) {
  torch::jit::Module data("ExportCheckData");
  for (const auto& [name, tensor] : tensors) data.register_buffer(name, tensor.detach().clone().contiguous());
  data.save(path);
}

struct CheckResult {
  int exit_code = -1;
  std::string output;
};

// Runs export_check.py on the case directories (each with policy.pt and data.pt).
inline CheckResult run_export_check(const std::vector<std::string>& dirs, const std::string& log) {
  std::string command = std::string(MOONSEED_PYTHON) + " " + MOONSEED_SOURCE_DIR + "/tests/python/export_check.py";
  for (const std::string& dir : dirs) command += " '" + dir + "'";
  command += " > '" + log + "' 2>&1";
  CheckResult result;
  const int status = std::system(command.c_str());
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream in(log);
  std::stringstream text;
  text << in.rdbuf();
  result.output = text.str();
  return result;
}

}  // namespace moonseed::testing
