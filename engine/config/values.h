// Checking, parsing and writing the values of config fields (schema.h):
// range checks with readable messages, command-line override parsing, Lua
// literals for config.lua and JSON for metrics.jsonl and the control socket.
//
// Pure functions; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "engine/config/schema.h"

namespace moonseed::engine {

// "(0, 1]", ">= 0", "one of: adam, rmsprop", "any", plus the field's rule_doc.
std::string range_text(const FieldSchema& field);

// "" when `value` has the field's type, is in range and passes the field's
// rule; else what is wrong: "expected a number in (0, 1], got 2".
std::string check_value(const FieldSchema& field, const FieldValue& value);

// Parses command-line override text by the field's type: "3e-4", "4",
// "adam", "true"/"false", "64,64" or "{64,64}", "a=1,b=2" or "{a=1,b=2}".
// Throws std::invalid_argument("expected ..., got '...'"). Range is not checked.
FieldValue parse_value(const FieldSchema& field, const std::string& text);

// The value as a Lua literal that reads back equal:
// 0.001, 20, "adam", true, {64, 64}, {max_episode_steps = 200}.
std::string lua_literal(const FieldValue& value);

// The shortest decimal text that reads back as the same double.
std::string format_number(double value);

// A list of declared layers as plain Lua tables, as read_layer_list
// (scripts/api/lua_layers.h) accepts: {{kind = "linear", out = 64}, "relu"}; and
// as JSON: [{"kind": "linear", "out": 64}, {"kind": "relu"}].
std::string layer_list_lua(const LayerList& layers);
std::string layer_list_json(const LayerList& layers);

// A list of env wrappers as plain Lua tables, as read_wrapper_list (scripts/api/lua_wrappers.h)
// accepts: {{kind = "frame_stack", n = 4}}; and as JSON: [{"kind": "frame_stack", "n": 4}].
std::string wrapper_list_lua(const WrapperList& wrappers);
std::string wrapper_list_json(const WrapperList& wrappers);

// A field value as JSON: numbers (null when not finite), strings, booleans,
// arrays of integers, objects of numbers, layer lists.
std::string json_value(const FieldValue& value);

}  // namespace moonseed::engine
