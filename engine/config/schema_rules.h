// The rules of single config values that a range or a list of choices cannot
// say (FieldSchema::rule): each returns "" for a value it accepts, else what it
// expected. Pure functions over the value's variant; thread-safe. Internal to
// the schema (engine/config/schema.cc names them in its rows).
#pragma once

#include <string>

#include "engine/config/values.h"

namespace moonseed::engine {

// name: letters, digits, '_', '-', '.' (it names the run directory).
std::string directory_name_rule(const FieldValue& v);
// model.hidden: 1 to 16 layer sizes.
std::string layer_count_rule(const FieldValue& v);
std::string non_empty_rule(const FieldValue& v);
// env.python: "" or MODULE:FUNCTION with Python's dotted names.
std::string python_factory_rule(const FieldValue& v);
// topology.rendezvous: "", file:PATH (the ranks a run starts itself), or tcp:HOST:PORT.
std::string rendezvous_rule(const FieldValue& v);

}  // namespace moonseed::engine
