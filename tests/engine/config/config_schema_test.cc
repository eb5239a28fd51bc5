#include "engine/config/schema.h"

#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "engine/config/values.h"
#include "tests/engine/config/all_fields_config.h"

namespace moonseed::engine {
namespace {

TEST(ConfigSchema, ReadsAndWritesEveryFieldThatCanDifferFromItsDefault) {
  std::vector<std::string> expected;
  for (const FieldSchema& f : config_schema()) {
    // The only env every build has: it cannot differ from the default, and it reads no model
    // file and comes from no plugin or Python (env.model, env.plugin and env.python round trip in
    // tests/scripts/env_model_test.cc, env_plugin_test.cc and env_python_test.cc).
    if (f.path != "env.id" && f.path != "env.model" && f.path != "env.plugin" && f.path != "env.python" &&
        f.path != "env.python_path") {
      expected.push_back(f.path);
    }
  }
  expected.push_back(kRewardShapingPath);  // not a schema row: a function
  EXPECT_EQ(changed_fields(engine::ExperimentConfig{}, test::config_with_every_field_changed()), expected);
}

TEST(ConfigSchema, SetThenGetReturnsTheValueForEveryField) {
  const engine::ExperimentConfig source = test::config_with_every_field_changed();
  engine::ExperimentConfig target;
  for (const FieldSchema& f : config_schema()) f.set(target, f.get(source));
  EXPECT_EQ(changed_fields(source, target), std::vector<std::string>{kRewardShapingPath});
  target.reward_shaping = source.reward_shaping;  // a function: no FieldSchema
  EXPECT_TRUE(changed_fields(source, target).empty());
}

TEST(ConfigSchema, DefaultsPassTheirOwnChecks) {
  const engine::ExperimentConfig defaults;
  for (const FieldSchema& f : config_schema()) {
    EXPECT_EQ(check_value(f, f.get(defaults)), "") << f.path;
  }
}

TEST(ConfigSchema, GivesEveryFieldADocAndUniquePath) {
  std::set<std::string> paths;
  for (const FieldSchema& f : config_schema()) {
    EXPECT_FALSE(f.doc.empty()) << f.path;
    EXPECT_TRUE(paths.insert(f.path).second) << "duplicate " << f.path;
  }
}

TEST(ConfigSchema, ClassesLearningRateHotAndModelShapeRestart) {
  EXPECT_EQ(find_field("optimizer.lr")->reload, ReloadClass::kHot);
  EXPECT_EQ(find_field("model.hidden")->reload, ReloadClass::kRestart);
  EXPECT_EQ(find_field("learner.unroll")->reload, ReloadClass::kRestart);
  EXPECT_EQ(find_field("optimizer.kind")->reload, ReloadClass::kRestart);
}

TEST(DidYouMean, SuggestsTheClosestSiblingOfATypo) {
  EXPECT_EQ(did_you_mean("optimizer.lrr"), "optimizer.lr");
  EXPECT_EQ(did_you_mean("optimiser"), "optimizer");
  EXPECT_EQ(did_you_mean("model.hiden"), "model.hidden");
  EXPECT_EQ(did_you_mean("vtrace.entropy"), "vtrace.entropy_cost");
}

TEST(DidYouMean, SuggestsTheSectionOfAFieldWrittenAtTheWrongLevel) {
  EXPECT_EQ(did_you_mean("lr"), "optimizer.lr");
  EXPECT_EQ(did_you_mean("model.burn_in"), "r2d2.burn_in");
  const std::string gamma = did_you_mean("model.gamma");  // every algorithm's section has one
  EXPECT_TRUE(gamma == "vtrace.gamma" || gamma == "r2d2.gamma" || gamma == "appo.gamma") << gamma;
}

TEST(DidYouMean, SuggestsNothingForAnUnrelatedName) {
  EXPECT_EQ(did_you_mean("optimizer.banana"), "");
}

TEST(CheckValue, NamesTheRangeOfAnOutOfRangeNumber) {
  EXPECT_EQ(check_value(*find_field("vtrace.gamma"), 1.5), "expected a number in [0, 1], got 1.5");
  EXPECT_EQ(check_value(*find_field("optimizer.lr"), 0.0), "expected a number in (0, 1], got 0");
  EXPECT_EQ(check_value(*find_field("topology.actors"), int64_t{0}),
            "expected an integer in [1, 4096], got 0");
}

TEST(CheckValue, SuggestsTheClosestAllowedString) {
  EXPECT_EQ(check_value(*find_field("model.activation"), std::string("tahn")),
            "expected one of \"tanh\", \"relu\", got \"tahn\"; did you mean \"tanh\"?");
}

TEST(CheckValue, AppliesAFieldsOwnRule) {
  EXPECT_NE(check_value(*find_field("name"), std::string("a/b")).find("names the run directory"),
            std::string::npos);
  EXPECT_NE(check_value(*find_field("model.hidden"), std::vector<int64_t>{}).find("1 to 16"),
            std::string::npos);
  EXPECT_EQ(check_value(*find_field("model.hidden"), std::vector<int64_t>{64, 0}),
            "element 2: expected an integer in [1, 65536], got 0");
}

TEST(CheckValue, DashboardHostsAreHostNamesWithoutPortSchemeOrSpace) {
  const FieldSchema& hosts = *find_field("dashboard.hosts");
  EXPECT_EQ(check_value(hosts, std::string("")), "");
  EXPECT_EQ(check_value(hosts, std::string("myhost.lab")), "");
  EXPECT_EQ(check_value(hosts, std::string("myhost.lab, other-1.example,LOCAL")), "");
  for (const std::string bad : {"myhost.lab:8080", "http://myhost.lab", "my host", "myhost.lab/x", "-a.lab",
                                "a..lab", "myhost.lab,", "[::1]"}) {
    EXPECT_NE(check_value(hosts, bad).find("is not a host name (e.g. \"myhost.lab\""), std::string::npos) << bad;
  }
  EXPECT_NE(check_value(hosts, std::string("ok.lab, bad:1")).find("\"bad:1\" is not a host name"), std::string::npos);
}

TEST(ParseValue, ParsesTextByTheFieldsType) {
  EXPECT_EQ(parse_value(*find_field("optimizer.lr"), "3e-4"), FieldValue(3e-4));
  EXPECT_EQ(parse_value(*find_field("topology.actors"), "4"), FieldValue(int64_t{4}));
  EXPECT_EQ(parse_value(*find_field("log.progress"), "false"), FieldValue(false));
  EXPECT_EQ(parse_value(*find_field("optimizer.kind"), "rmsprop"), FieldValue(std::string("rmsprop")));
  EXPECT_EQ(parse_value(*find_field("model.hidden"), "{128, 64}"), FieldValue(std::vector<int64_t>{128, 64}));
  EXPECT_EQ(parse_value(*find_field("model.hidden"), "32"), FieldValue(std::vector<int64_t>{32}));
  EXPECT_EQ(parse_value(*find_field("env.options"), "b=2,a=1"), FieldValue(NumberMap{{"a", 1}, {"b", 2}}));
}

TEST(ParseValue, RejectsTextOfTheWrongType) {
  EXPECT_THROW(parse_value(*find_field("topology.actors"), "2.5"), std::invalid_argument);
  EXPECT_THROW(parse_value(*find_field("optimizer.lr"), "fast"), std::invalid_argument);
  EXPECT_THROW(parse_value(*find_field("optimizer.lr"), "1e-3x"), std::invalid_argument);
  EXPECT_THROW(parse_value(*find_field("log.progress"), "yes"), std::invalid_argument);
  EXPECT_THROW(parse_value(*find_field("model.hidden"), "64,x"), std::invalid_argument);
}

TEST(FormatNumber, WritesTheShortestTextThatReadsBackExactly) {
  EXPECT_EQ(format_number(0.001), "0.001");
  EXPECT_EQ(format_number(2.5e-4), "0.00025");
  EXPECT_EQ(format_number(475), "475");
  const double third = 0.1 * 3;
  EXPECT_EQ(std::stod(format_number(third)), third);
}

TEST(LuaLiteral, QuotesStringsAndKeysThatAreNotIdentifiers) {
  EXPECT_EQ(lua_literal(std::string("a\"b\n")), "\"a\\\"b\\n\"");
  EXPECT_EQ(lua_literal(NumberMap{{"end", 1}, {"max_episode_steps", 2}}),
            "{[\"end\"] = 1, max_episode_steps = 2}");
  EXPECT_EQ(lua_literal(std::vector<int64_t>{64, 64}), "{64, 64}");
}

TEST(SchemaMarkdown, HasOneRowPerFieldWithItsReloadClass) {
  const std::string md = schema_markdown();
  EXPECT_NE(md.find("| `optimizer.lr` | number | `0.0006` | (0, 1] | hot | learning rate |"), std::string::npos)
      << md;
  size_t rows = 0;
  for (size_t at = md.find("\n| `"); at != std::string::npos; at = md.find("\n| `", at + 1)) ++rows;
  EXPECT_EQ(rows, config_schema().size() + 1) << "and one for reward_shaping";
  EXPECT_NE(md.find("| `reward_shaping` | function | `nil` |"), std::string::npos);
}

TEST(SchemaMarkdown, MatchesTheCommittedDocsConfigMd) {
  const std::string path = std::string(MOONSEED_SOURCE_DIR) + "/docs/config.md";
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  EXPECT_EQ(text.str(), schema_markdown())
      << path << " is out of date with engine/config/schema.cc; regenerate it with\n"
      << "  cmake --build BUILD_DIR --target config_docs";
}

}  // namespace
}  // namespace moonseed::engine
