#include "models/export.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "base/text.h"
#include "models/obs_scale.h"

namespace moonseed::models {
namespace {

// A double as a TorchScript float literal that reads back as the same double.
std::string float_literal(double v) {
  std::string text = base::number_text(v);
  if (text.find_first_of(".e") == std::string::npos) text += ".0";
  return text;
}

std::string int_list(const std::vector<int64_t>& values) { return base::shape_text(values); }

int64_t product(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

// The TorchScript source of a module's methods and the net parameters they
// read, registered on the module under their C++ names with '_' for '.'.
class Script {
 public:
  explicit Script(const torch::nn::Module& net) {
    for (const auto& p : net.named_parameters()) params_.emplace(p.key(), p.value());
  }

  // "self.NAME" for the net's parameter `name`.
  std::string param(const std::string& name) {
    if (params_.count(name) == 0) throw std::logic_error("export: the net has no parameter " + name);
    used_.insert(name);
    std::string attribute = name;
    for (char& c : attribute) c = c == '.' ? '_' : c;
    return "self." + attribute;
  }

  void def(const std::string& signature) { source_ += "def " + signature + ":\n"; }
  void line(const std::string& text) { source_ += "    " + text + "\n"; }

  // `var` through the declared layers (models/torso.h), whose modules are
  // named PREFIX0., PREFIX1., ...; `shape` is one sample's shape before them.
  // Returns the shape after them.
  std::vector<int64_t> layers(const std::string& var, const std::vector<LayerSpec>& layers, const std::string& prefix,
                              std::vector<int64_t> shape) {
    for (size_t i = 0; i < layers.size(); ++i) {
      const LayerSpec& l = layers[i];
      const std::string p = prefix + std::to_string(i) + ".";
      if (l.kind == "linear") {
        line(var + " = torch.linear(" + var + ", " + param(p + "weight") + ", " + param(p + "bias") + ")");
        shape = {l.out};
      } else if (l.kind == "conv2d") {
        line(var + " = " + conv(var, p, l.stride, l.padding));
        shape = {l.out, (shape[1] + 2 * l.padding - l.kernel) / l.stride + 1,
                 (shape[2] + 2 * l.padding - l.kernel) / l.stride + 1};
      } else if (l.kind == "maxpool2d") {
        line(var + " = " + max_pool(var, l.kernel, l.stride, l.padding));
        shape = {shape[0], (shape[1] + 2 * l.padding - l.kernel) / l.stride + 1,
                 (shape[2] + 2 * l.padding - l.kernel) / l.stride + 1};
      } else if (l.kind == "impala_block") {
        line(var + " = " + max_pool(conv(var, p + "conv.", 1, 1), 3, 2, 1));
        for (const char* res : {"res1.", "res2."}) {
          const std::string inner = conv("torch.relu(" + var + ")", p + res + "conv1.", 1, 1);
          line(var + " = " + var + " + " + conv("torch.relu(" + inner + ")", p + res + "conv2.", 1, 1));
        }
        shape = {l.out, (shape[1] + 2 - 3) / 2 + 1, (shape[2] + 2 - 3) / 2 + 1};
      } else if (l.kind == "channels_first") {
        line(var + " = " + var + ".permute([0, 3, 1, 2]).contiguous()");
        shape = {shape[2], shape[0], shape[1]};
      } else if (l.kind == "flatten") {
        line(var + " = " + var + ".flatten(1)");
        shape = {product(shape)};
      } else if (l.kind == "relu" || l.kind == "tanh") {
        line(var + " = torch." + l.kind + "(" + var + ")");
      } else if (l.kind == "elu") {
        line(var + " = torch.elu(" + var + ", 1.0)");
      } else {
        throw std::logic_error("export: layer kind " + l.kind + " has no TorchScript form");
      }
    }
    return shape;
  }

  // A dueling or plain head: linear (-> relu -> linear), modules PREFIX0., PREFIX2.
  std::string head(const std::string& input, const std::string& prefix, int64_t hidden) {
    std::string x = input;
    if (hidden > 0) x = "torch.relu(" + linear(x, prefix + "0.") + ")";
    return linear(x, prefix + (hidden > 0 ? "2." : "0."));
  }

  std::string linear(const std::string& x, const std::string& prefix) {
    return "torch.linear(" + x + ", " + param(prefix + "weight") + ", " + param(prefix + "bias") + ")";
  }

  // The module with every net parameter it reads; throws std::logic_error when
  // the net has one the source does not read (the export would be wrong).
  torch::jit::Module build(const std::string& name, const std::string& spec_json) {
    std::string unused;
    for (const auto& [key, value] : params_) {
      if (used_.count(key) == 0) unused += (unused.empty() ? "" : ", ") + key;
    }
    if (!unused.empty()) throw std::logic_error("export: the net's parameters " + unused + " have no place in " + name);
    torch::jit::Module module(name);
    for (const std::string& key : used_) {
      const std::string attribute = param(key).substr(5);
      module.register_parameter(attribute, params_.at(key).detach().clone().to(torch::kCPU), false);
    }
    module.register_attribute("moonseed_spec", c10::StringType::get(), spec_json);
    module.define(source_);
    module.eval();
    return module;
  }

 private:
  std::string conv(const std::string& x, const std::string& prefix, int64_t stride, int64_t padding) {
    return "torch.conv2d(" + x + ", " + param(prefix + "weight") + ", " + param(prefix + "bias") + ", " +
           int_list({stride, stride}) + ", " + int_list({padding, padding}) + ")";
  }
  static std::string max_pool(const std::string& x, int64_t kernel, int64_t stride, int64_t padding) {
    return "torch.max_pool2d(" + x + ", " + int_list({kernel, kernel}) + ", " + int_list({stride, stride}) + ", " +
           int_list({padding, padding}) + ")";
  }

  std::map<std::string, torch::Tensor> params_;
  std::set<std::string> used_;
  std::string source_;
};

// Observations as the nets read them: uint8 scaled into [0, 1], floats as float32.
std::string preprocessed(const std::string& obs, const envs::Space& observation) {
  if (observation.dtype != envs::DType::kUInt8) return obs + ".float()";
  return obs + ".float() * " + float_literal(uint8_obs_scale(observation));
}

std::string bound_list(const std::vector<float>& values) {
  std::string text = "[";
  for (size_t i = 0; i < values.size(); ++i) {
    text += i ? ", " : "";
    text += std::isfinite(values[i]) ? base::float_text(values[i]) : "null";
  }
  return text + "]";
}

std::string space_json(const envs::Space& space) {
  if (space.kind == envs::SpaceKind::kDiscrete) {
    return "{\"kind\": \"discrete\", \"n\": " + std::to_string(space.n) + ", \"dtype\": \"int64\"}";
  }
  return std::string("{\"kind\": \"box\", \"dtype\": \"") +
         (space.dtype == envs::DType::kUInt8 ? "uint8" : "float32") + "\", \"shape\": " +
         base::shape_text(space.shape) + ", \"low\": " + bound_list(space.low) + ", \"high\": " +
         bound_list(space.high) + "}";
}

std::string string_list(const std::vector<std::string>& items) {
  std::vector<std::string> quoted;
  for (const std::string& item : items) quoted.push_back(base::json_quote(item));
  return "[" + base::join(quoted) + "]";
}

std::string layer_list(const std::vector<LayerSpec>& layers) {
  std::vector<std::string> described;
  for (const LayerSpec& l : layers) described.push_back(l.describe());
  return string_list(described);
}

std::string wrapper_list_json(const envs::WrapperList& wrappers) {
  std::vector<std::string> items;
  for (const envs::WrapperSpec& w : wrappers) {
    std::string item = "{\"kind\": " + base::json_quote(w.kind);
    for (const auto& [name, value] : w.params) item += ", " + base::json_quote(name) + ": " + base::number_text(value);
    items.push_back(item + "}");
  }
  return "[" + base::join(items) + "]";
}

// The spec JSON; `model` is the algorithm's model object, `inputs` and
// `outputs` name forward's arguments and results.
// The algorithm a policy net's spec names: the one that trained it.
std::string policy_algo(const ExportOrigin& origin) { return origin.algo.empty() ? "vtrace" : origin.algo; }

std::string spec_json(const std::string& algo, const envs::EnvSpec& env, const std::string& model,
                      const std::vector<std::string>& inputs, const std::vector<std::string>& outputs,
                      const ExportOrigin& origin) {
  const envs::Space& obs = env.observation;
  const std::string scaling =
      obs.dtype == envs::DType::kUInt8
          ? "{\"uint8_scale\": " + base::number_text(uint8_obs_scale(obs)) +
                ", \"text\": \"uint8 observations are converted to float32 and multiplied by uint8_scale\"}"
          : "{\"uint8_scale\": null, \"text\": \"observations are converted to float32\"}";
  return "{\n  \"format\": 1,\n  \"algo\": " + base::json_quote(algo) + ",\n  \"env_id\": " +
         base::json_quote(env.id) + ",\n  \"max_episode_steps\": " + std::to_string(env.max_episode_steps) +
         ",\n  \"env_wrappers\": " + wrapper_list_json(origin.env_wrappers) +
         ",\n  \"observation\": " + space_json(obs) + ",\n  \"action\": " + space_json(env.action) +
         ",\n  \"preprocessing\": " + scaling + ",\n  \"model\": " + model + ",\n  \"inputs\": " +
         string_list(inputs) + ",\n  \"outputs\": " + string_list(outputs) + ",\n  \"run_id\": " +
         base::json_quote(origin.run_id) + ",\n  \"checkpoint\": " + base::json_quote(origin.checkpoint) +
         ",\n  \"checkpoint_step\": " + std::to_string(origin.step) + "\n}\n";
}

// initial_state(batch) -> zeros (h, c) of `lstm` units each.
void initial_state_method(Script& s, int64_t lstm) {
  const std::string n = std::to_string(lstm);
  s.def("initial_state(self, batch: int) -> Tuple[Tensor, Tensor]");
  s.line("return (torch.zeros([batch, " + n + "]), torch.zeros([batch, " + n + "]))");
}

// h, c = one step of the net's LSTM cell ("lstm.*" parameters) on x from `state`.
void lstm_cell_line(Script& s) {
  s.line("h, c = torch.lstm_cell(x, [state[0], state[1]], " + s.param("lstm.weight_ih") + ", " +
         s.param("lstm.weight_hh") + ", " + s.param("lstm.bias_ih") + ", " + s.param("lstm.bias_hh") + ")");
}

// A recurrent policy: torso, LSTM cell, both heads on its output (models/policy_net.h).
Exported export_recurrent_policy(const PolicyNetImpl& net, const ModelSpec& model, const envs::EnvSpec& env,
                                 const ExportOrigin& origin) {
  const RecurrentSplit split = split_recurrent(model_layers(model));
  const std::string lstm = std::to_string(split.lstm_size);
  Script s(net);
  initial_state_method(s, split.lstm_size);
  s.def("forward(self, obs: Tensor, prev_action: Tensor, prev_reward: Tensor, state: Tuple[Tensor, Tensor]) -> "
        "Tuple[Tensor, Tensor, Tuple[Tensor, Tensor]]");
  s.line("n = obs.size(0)");
  s.line("x = " + preprocessed("obs.reshape([n, " + std::to_string(net.observation_size()) + "])", env.observation));
  if (!split.torso.empty()) {
    std::vector<int64_t> batch_shape = {-1};
    batch_shape.insert(batch_shape.end(), env.observation.shape.begin(), env.observation.shape.end());
    s.line("x = x.reshape(" + int_list(batch_shape) + ")");
    const std::vector<int64_t> out = s.layers("x", split.torso, "policy_layers.layers.", env.observation.shape);
    s.line("x = x.reshape([n, " + std::to_string(product(out)) + "])");
  }
  const std::string actions = std::to_string(net.action_size());
  if (net.discrete()) {
    s.line("a = (prev_action.long().reshape([n, 1]) == torch.arange(" + actions +
           ", device=prev_action.device)).to(x.dtype)");
  } else {
    s.line("a = prev_action.reshape([n, " + actions + "]).to(x.dtype)");
  }
  s.line("x = torch.cat([x, a, prev_reward.to(x.dtype).reshape([n, 1])], 1)");
  lstm_cell_line(s);
  s.line("out = " + s.linear("h", "policy_head."));
  s.line("value = " + s.linear("h", "value_head.") + ".squeeze(-1)");
  s.line("return (out, value, (h, c))");
  if (!net.discrete()) s.param("log_std");
  const std::string model_json = "{\"kind\": " + base::json_quote(model.kind) +
                                 ", \"layers\": " + layer_list(model_layers(model)) + ", \"lstm\": " + lstm + "}";
  Exported exported;
  exported.spec_json = spec_json(policy_algo(origin), env, model_json, {"obs", "prev_action", "prev_reward", "state"},
                                 {net.discrete() ? "logits" : "mean", "value", "state"}, origin);
  exported.module = s.build("MoonseedRecurrentPolicy", exported.spec_json);
  return exported;
}

}  // namespace

Exported export_policy_net(const PolicyNetImpl& net, const ModelSpec& model, const envs::EnvSpec& env,
                           const ExportOrigin& origin) {
  if (net.recurrent()) return export_recurrent_policy(net, model, env, origin);
  const bool discrete = net.discrete();
  const bool declared = model.kind != "mlp";
  const std::vector<LayerSpec> layers = model_layers(model);
  const bool has_hidden = declared || !model.hidden.empty();
  const std::vector<int64_t>& obs_shape = env.observation.shape;

  Script s(net);
  s.def("forward(self, obs: Tensor) -> Tuple[Tensor, Tensor]");
  s.line("n = obs.size(0)");
  s.line("x = " + preprocessed("obs.reshape([n, " + std::to_string(net.observation_size()) + "])", env.observation));
  if (declared) {
    std::vector<int64_t> batch_shape = {-1};
    batch_shape.insert(batch_shape.end(), obs_shape.begin(), obs_shape.end());
    s.line("x = x.reshape(" + int_list(batch_shape) + ")");
  }
  const std::vector<int64_t> input = declared ? obs_shape : std::vector<int64_t>{net.observation_size()};
  // One torso: "policy" or "value", over x into `var`.
  const auto torso = [&](const std::string& var, const std::string& which) {
    s.line(var + " = x");
    if (!has_hidden) return;
    const std::vector<int64_t> out =
        s.layers(var, layers, which + (declared ? "_layers.layers." : "_torso."), input);
    if (declared) s.line(var + " = " + var + ".reshape([" + var + ".size(0), " + std::to_string(product(out)) + "])");
  };
  torso("p", "policy");
  if (model.shared_torso || !has_hidden) {
    s.line("v = p");
  } else {
    torso("v", "value");
  }
  s.line("out = " + s.linear("p", "policy_head."));
  s.line("value = " + s.linear("v", "value_head.") + ".squeeze(-1)");
  s.line("return (out, value)");
  if (!discrete) s.param("log_std");

  std::string model_json = "{\"kind\": " + base::json_quote(model.kind) + ", \"layers\": " + layer_list(layers) +
                           ", \"shared_torso\": " + (model.shared_torso ? "true" : "false") + "}";
  const std::vector<std::string> outputs = {discrete ? "logits" : "mean", "value"};
  Exported exported;
  exported.spec_json = spec_json(policy_algo(origin), env, model_json, {"obs"}, outputs, origin);
  exported.module = s.build("MoonseedPolicy", exported.spec_json);
  return exported;
}

Exported export_q_net(const QNetImpl& net, const envs::EnvSpec& env, const ExportOrigin& origin) {
  const QNetSpec& q = net.spec();
  const std::string lstm = std::to_string(q.lstm);
  Script s(net);
  initial_state_method(s, q.lstm);
  s.def("forward(self, obs: Tensor, prev_action: Tensor, prev_reward: Tensor, state: Tuple[Tensor, Tensor]) -> "
        "Tuple[Tensor, Tuple[Tensor, Tensor]]");
  s.line("x = " + preprocessed("obs", env.observation));
  if (q.torso.empty()) {
    s.line("x = x.reshape([x.size(0), -1])");
  } else {
    const std::vector<int64_t> out = s.layers("x", q.torso, "torso.layers.", env.observation.shape);
    s.line("x = x.reshape([x.size(0), " + std::to_string(product(out)) + "])");
  }
  if (q.prev_action_reward) {
    s.line("one_hot = (prev_action.long().unsqueeze(1) == torch.arange(" +
           std::to_string(net.num_actions()) + ", device=prev_action.device)).to(x.dtype)");
    s.line("x = torch.cat([x, one_hot, prev_reward.to(x.dtype).unsqueeze(1)], 1)");
  }
  if (q.lstm > 0) {
    lstm_cell_line(s);
    s.line("x = h");
    s.line("new_state = (h, c)");
  } else {
    s.line("new_state = state");
  }
  if (q.dueling) {
    s.line("value = " + s.head("x", "value_head.", q.head_hidden) + ".squeeze(-1)");
    s.line("advantage = " + s.head("x", "advantage_head.", q.head_hidden));
    s.line("q = value.unsqueeze(-1) + advantage - advantage.mean(-1, True)");
  } else {
    s.line("q = " + s.head("x", "q_head.", q.head_hidden));
  }
  s.line("return (q, new_state)");

  const std::string model_json = std::string("{\"layers\": ") + layer_list(q.torso) + ", \"lstm\": " + lstm +
                                 ", \"head_hidden\": " + std::to_string(q.head_hidden) +
                                 ", \"dueling\": " + (q.dueling ? "true" : "false") +
                                 ", \"prev_action_reward\": " + (q.prev_action_reward ? "true" : "false") + "}";
  Exported exported;
  exported.spec_json = spec_json("r2d2", env, model_json, {"obs", "prev_action", "prev_reward", "state"},
                                 {"q_values", "state"}, origin);
  exported.module = s.build("MoonseedQNet", exported.spec_json);
  return exported;
}

void save_exported(const Exported& exported, const std::string& path) {
  std::ostringstream bytes;
  exported.module.save(bytes, {{kSpecFile, exported.spec_json}});
  const std::string data = bytes.str();
  const std::string partial = path + ".partial";
  const auto fail = [&](const std::string& doing, int error, bool remove) {
    if (remove) ::unlink(partial.c_str());
    return std::runtime_error("cannot " + doing + ": " + std::strerror(error));
  };
  const int fd = ::open(partial.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw fail("create " + partial, errno, false);
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int error = n < 0 ? errno : ENOSPC;
      ::close(fd);
      throw fail("write " + partial, error, true);
    }
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0) {
    const int error = errno;
    ::close(fd);
    throw fail("fsync " + partial, error, true);
  }
  if (::close(fd) != 0) throw fail("close " + partial, errno, true);
  if (::rename(partial.c_str(), path.c_str()) != 0) throw fail("rename " + partial + " to " + path, errno, true);
}

}  // namespace moonseed::models
