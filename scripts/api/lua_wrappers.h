// Declared env wrappers (envs/wrappers/wrapper_spec.h) on the script side: reading an
// `env.wrappers` list from a script and pushing one back to Lua. Their rules are
// envs::wrapper_problem's, their text forms engine/config/values.h's.
//
// In a script a wrapper list is a Lua list whose elements are
//   - tables {kind = "frame_stack", n = 4}, what ms.wrap.frame_stack(4) builds
//     (scripts/lua/moonseed/init.lua) and what to_lua writes; the kind may also come first:
//     {"frame_stack", n = 4};
//   - strings for a wrapper with its defaults: "clip_reward".
// Parameters are numbers; true and false stand for 1 and 0 (action_repeat's max_pool).
//
// Failures are returned as values; nothing throws for a bad script.
// Thread-safety: the functions touch only their arguments.
#pragma once

#include <optional>
#include <string>

#include <lua.hpp>

#include "envs/wrappers/wrapper_spec.h"
#include "scripts/api/lua_dsl_list.h"

namespace moonseed::scripts {

// `wrappers` is set when the value is a well-formed list; else the fault says what is wrong and
// where (field "env.wrappers[2] (frame_stack)": the wrapper at fault).
struct WrapperListRead : DslListFault {
  std::optional<envs::WrapperList> wrappers;
};

// Reads the list at `index` for the field `path`. Leaves the stack as it was.
WrapperListRead read_wrapper_list(lua_State* L, int index, const std::string& path);

// Pushes the list as read_wrapper_list accepts it.
void push_wrapper_list(lua_State* L, const envs::WrapperList& wrappers);

}  // namespace moonseed::scripts
