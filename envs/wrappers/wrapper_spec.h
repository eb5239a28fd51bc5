// Env wrappers as an experiment declares them (env.wrappers), as plain values: a kind and its
// named numeric parameters, the rules they must pass, and the text form the learner sends its
// actors in the Welcome. What the wrappers do is envs/wrappers/wrappers.h (docs/env-wrappers.md).
//
// Kinds, their parameters and defaults (wrapper_kinds() is the one table):
//   frame_stack     n = 4               the last n observations along the last axis, oldest first
//   action_repeat   k = 4, max_pool = -1  each action k times; max_pool: 1 = the observation is the
//                                         elementwise max of the last two frames, 0 = the last frame,
//                                         -1 = 1 for uint8 boxes of rank >= 2 (pixels), else 0
//   time_limit      max_steps (required)  truncates an episode after max_steps of its steps
//   clip_reward     low = -1, high = 1    rewards clipped to [low, high]
//   sticky_actions  p = 0.25              with probability p the previous action is repeated
//   scale_obs       scale = 1/255, offset = 0   observation * scale + offset, as float32
//
// No LibTorch, no envs: engine/config holds a WrapperList in ExperimentConfig::env.
// Pure values and functions; thread-safe.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace moonseed::envs {

struct WrapperParam {
  const char* name;
  double default_value;
  double min;
  double max;
  bool integer;
  bool required;  // no default: the experiment must give it
};

struct WrapperKind {
  const char* name;
  std::vector<WrapperParam> params;  // in the order positional arguments fill them
};

// Every kind, in the order of the table above.
const std::vector<WrapperKind>& wrapper_kinds();
// nullptr for an unknown kind.
const WrapperKind* find_wrapper_kind(const std::string& kind);
// "frame_stack, action_repeat, ...".
std::string wrapper_kind_names();

// One declared wrapper: its kind and every parameter of that kind, in the kind's order
// (make_wrapper fills the defaults), so that equal wrappers compare equal.
struct WrapperSpec {
  std::string kind;
  std::vector<std::pair<std::string, double>> params;

  // The value of a parameter by name; std::logic_error when the kind has none of that name.
  double param(const std::string& name) const;
  // "frame_stack(n = 4)".
  std::string describe() const;
  bool operator==(const WrapperSpec& o) const { return kind == o.kind && params == o.params; }
  bool operator!=(const WrapperSpec& o) const { return !(*this == o); }
};

using WrapperList = std::vector<WrapperSpec>;

// At most this many wrappers in a list (the text form is bounded by it too).
inline constexpr size_t kMaxWrappers = 32;

// Builds `kind` from the parameters given by name, filling the defaults. "" or what is wrong:
// an unknown kind or parameter, a missing required one, a parameter given twice. Values are
// checked by wrapper_problem, not here.
std::string make_wrapper(const std::string& kind, const std::vector<std::pair<std::string, double>>& given,
                         WrapperSpec* out);

// "" when the wrapper's kind is known, it has exactly its kind's parameters and each is in
// range; else what is wrong, e.g. "n must be an integer in [1, 64], got 0".
std::string wrapper_problem(const WrapperSpec& wrapper);

// The first problem of the list, naming the wrapper by its place (1-based, as Lua counts):
// "env.wrappers[2] (frame_stack): n must be an integer in [1, 64], got 0"; "" when fine. With an
// empty path: "wrapper 2 (frame_stack): ...".
std::string wrapper_list_problem(const WrapperList& wrappers, const std::string& path = "env.wrappers");

// The text form carried in the Welcome: wrappers separated by ';', each its kind then
// name=value pairs separated by spaces: "frame_stack n=4;time_limit max_steps=100". "" = none.
std::string wrapper_list_text(const WrapperList& wrappers);

// Reads wrapper_list_text's form. Bounded: at most kMaxWrappers wrappers, 4096 characters, every
// wrapper as make_wrapper and wrapper_problem accept it. Throws std::invalid_argument saying
// what is wrong (a peer's hostile text gets a message, never a crash).
WrapperList parse_wrapper_list(const std::string& text);

}  // namespace moonseed::envs
