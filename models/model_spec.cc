#include "models/model_spec.h"

#include <algorithm>

#include "base/text.h"

namespace moonseed::models {
namespace {

constexpr int64_t kMaxWidth = 65536;  // out
constexpr int64_t kMaxWindow = 256;   // kernel, stride, padding

bool takes_out(const std::string& kind) {
  return kind == "linear" || kind == "lstm" || kind == "impala_block" || kind == "conv2d";
}
bool takes_window(const std::string& kind) { return kind == "conv2d" || kind == "maxpool2d"; }

std::string in_range(const char* what, int64_t value, int64_t min, int64_t max) {
  if (value >= min && value <= max) return "";
  return std::string("needs ") + what + " in [" + std::to_string(min) + ", " + std::to_string(max) +
         "], got " + std::to_string(value);
}

}  // namespace

std::string LayerSpec::describe() const {
  const bool sized = takes_out(kind);
  const bool windowed = takes_window(kind);
  if (!sized && !windowed) return kind;
  std::string text = kind + "(";
  if (sized) text += std::to_string(out) + (windowed ? ", " : "");
  if (windowed) {
    text += "kernel " + std::to_string(kernel) + ", stride " + std::to_string(stride);
    if (padding != 0) text += ", padding " + std::to_string(padding);
  }
  return text + ")";
}

std::vector<std::string> LayerSpec::fields_of(const std::string& kind) {
  std::vector<std::string> fields;
  if (takes_out(kind)) fields.push_back("out");
  if (takes_window(kind)) fields.insert(fields.end(), {"kernel", "stride", "padding"});
  return fields;
}

int64_t LayerSpec::field(const std::string& name) const {
  return name == "out" ? out : name == "kernel" ? kernel : name == "stride" ? stride : padding;
}

const std::vector<std::string>& declared_layer_kinds() {
  static const std::vector<std::string> kinds = {"linear", "conv2d", "maxpool2d", "impala_block", "lstm",
                                                 "channels_first", "flatten", "relu", "tanh", "elu"};
  return kinds;
}

std::string layer_problem(const LayerSpec& l) {
  const std::vector<std::string>& kinds = declared_layer_kinds();
  if (std::find(kinds.begin(), kinds.end(), l.kind) == kinds.end()) {
    const std::string close = base::closest_name(l.kind, kinds);
    return "unknown layer kind " + base::lua_quote(l.kind) +
           (close.empty() ? "" : "; did you mean " + base::lua_quote(close) + "?") + " (known: " +
           base::join(kinds) + ")";
  }
  std::string problem;
  if (takes_out(l.kind)) {
    problem = in_range("out", l.out, 1, kMaxWidth);
  } else if (l.out != 0) {
    problem = "takes no out";
  }
  if (problem.empty() && takes_window(l.kind)) {
    problem = in_range("kernel", l.kernel, 1, kMaxWindow);
    if (problem.empty()) problem = in_range("stride", l.stride, 1, kMaxWindow);
    if (problem.empty()) problem = in_range("padding", l.padding, 0, kMaxWindow);
  } else if (problem.empty() && (l.kernel != 0 || l.stride != 1 || l.padding != 0)) {
    problem = "takes no kernel, stride or padding";
  }
  return problem;
}

std::string layer_list_problem(const LayerList& layers) {
  for (size_t i = 0; i < layers.size(); ++i) {
    std::string problem = layer_problem(layers[i]);
    if (problem.empty() && layers[i].kind == "lstm" && i + 1 != layers.size()) {
      problem = "an lstm must be the last layer (the heads read its output)";
    }
    if (!problem.empty()) {
      return "element " + std::to_string(i + 1) + " (" + layers[i].kind + "): " + problem;
    }
  }
  return "";
}

}  // namespace moonseed::models
