// Reads `reward_shaping` from an experiment script (docs/reward-shaping.md):
// the function value the script gave becomes the exact text of its
// definition, which actors in other processes compile (reward_shaper.h).
//
// How: Lua's debug info gives the function's file ("@path") and the lines of
// its `function` keyword and of its `end`; the file's tokens (the lexer of
// source_locator.h) give every `function` keyword on that first line whose
// matching `end` is on that last line. The one candidate (after comparing
// parameter counts when several share the lines) is the function. Its text
// runs from `function` to that `end`; a name (`local function shape(`) is
// dropped, so the text is an expression. The text is then compiled as the
// actors compile it, so a problem shows now rather than in every actor.
//
// Problems (returned, with the file:line to blame):
//   - the function has upvalues: it refers to locals defined outside it, which
//     do not exist in the actor process where only its own text runs;
//   - a C function, or a function compiled from a string rather than a file;
//   - a method (`function M:shape(`), or two definitions the lines cannot
//     tell apart (the message asks for the function on lines of its own).
//
// Thread-safety: uses `L` and reads files; call from the thread that owns `L`.
#pragma once

#include <string>

#include <lua.hpp>

#include "engine/config/experiment_config.h"

namespace moonseed::scripts {

struct ShapingRead {
  engine::RewardShapingConfig function;  // valid when `problem` is empty
  std::string file;                      // where the function was written, when known
  int line = 0;
  std::string problem;
};

// Reads the Lua function at `index` of L's stack (left unchanged). A function
// push_shaping_function made reads back as the config it was made from.
ShapingRead read_shaping_function(lua_State* L, int index);

// Pushes the function `config` holds, compiled from its text under its chunk
// name and lines (what ms.load_experiment returns as `reward_shaping`), and
// remembers that text in L's registry (weakly), so a script that returns the
// function gets exactly this config back. Raises a Lua error when the text
// does not compile.
void push_shaping_function(lua_State* L, const engine::RewardShapingConfig& config);

}  // namespace moonseed::scripts
