#include "scripts/api/source_locator.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/scripts/temp_dir.h"

namespace moonseed::scripts {
namespace {

using testing::TempDir;

std::vector<std::string> names(const std::vector<SourceLocator::Token>& tokens) {
  std::vector<std::string> out;
  for (const auto& t : tokens) {
    if (t.kind == SourceLocator::Token::kName) out.push_back(t.text);
  }
  return out;
}

TEST(SourceLocator, TokenizerSkipsCommentsAndStringContents) {
  const auto tokens = SourceLocator::tokenize(
      "-- a = 1\nlocal s = \"b = 2\" --[[ c = 3 ]] d = [==[ e = 4 ]==]\n");
  EXPECT_EQ(names(tokens), (std::vector<std::string>{"local", "s", "d"}));
}

TEST(SourceLocator, TokensKnowTheBytesTheyWereReadFrom) {
  const std::string source = "f = function(a) return \"x\" .. [[y]] end -- c\n";
  for (const SourceLocator::Token& t : SourceLocator::tokenize(source)) {
    const std::string bytes = source.substr(t.begin, t.end - t.begin);
    if (t.kind == SourceLocator::Token::kString) {
      EXPECT_TRUE(bytes == "\"x\"" || bytes == "[[y]]") << bytes;
    } else {
      EXPECT_EQ(bytes, t.text);
    }
  }
}

TEST(SourceLocator, TokenizerCountsLinesInsideLongCommentsAndStrings) {
  const auto tokens = SourceLocator::tokenize("--[[\n\n]] x = [[\n]] 'a\\\nb' y\r\nz");
  ASSERT_EQ(names(tokens), (std::vector<std::string>{"x", "y", "z"}));
  EXPECT_EQ(tokens[0].line, 3);
  EXPECT_EQ(tokens.back().line, 6);
}

class SourceLocatorFile : public ::testing::Test {
 protected:
  std::string write(const std::string& text) { return dir_.write("exp.lua", text); }
  TempDir dir_;
  SourceLocator locator_;
};

TEST_F(SourceLocatorFile, FindsAKeyOfTheReturnedTableAndTheKeysOfItsSections) {
  const std::string path = write(
      "local ms = require 'moonseed'\n"       // 1
      "return ms.experiment {\n"              // 2
      "  model = { kind = 'mlp' },\n"         // 3
      "  optimizer = {\n"                     // 4
      "    -- kind = 'commented out',\n"      // 5
      "    kind = 'adam',\n"                  // 6
      "  },\n"                                // 7
      "}\n");
  const auto root = locator_.returned_constructor(path);
  ASSERT_TRUE(root.has_value());
  EXPECT_EQ(locator_.line_of(*root), 2);
  const auto optimizer = locator_.find_key(*root, "optimizer");
  ASSERT_TRUE(optimizer.has_value());
  EXPECT_EQ(optimizer->line, 4);
  ASSERT_TRUE(optimizer->value.has_value());
  const auto kind = locator_.find_key(*optimizer->value, "kind");
  ASSERT_TRUE(kind.has_value());
  EXPECT_EQ(kind->line, 6);
}

TEST_F(SourceLocatorFile, IgnoresKeysOfNestedConstructorsAndFunctionBodies) {
  const std::string path = write(
      "return {\n"                                  // 1
      "  env = { lr = 1 },\n"                       // 2
      "  f = function() local lr = 2 end,\n"        // 3
      "  lr = 3,\n"                                 // 4
      "}\n");
  const auto root = locator_.returned_constructor(path);
  ASSERT_TRUE(root.has_value());
  const auto lr = locator_.find_key(*root, "lr");
  ASSERT_TRUE(lr.has_value());
  EXPECT_EQ(lr->line, 4);
}

TEST_F(SourceLocatorFile, FindsBracketedStringKeysAndHelperCallValues) {
  const std::string path = write(
      "local t = {\n"                                   // 1
      "  [\"odd key\"] = 1,\n"                          // 2
      "  model = ms.mlp({\n"                            // 3
      "    hidden = {64},\n"                            // 4
      "  }),\n"                                         // 5
      "}\n"
      "return t\n");
  const auto t = locator_.constructor_at_line(path, 1);
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(locator_.find_key(*t, "odd key")->line, 2);
  const auto model = locator_.find_key(*t, "model");
  ASSERT_TRUE(model.has_value() && model->value.has_value());
  EXPECT_EQ(locator_.find_key(*model->value, "hidden")->line, 4);
  EXPECT_FALSE(locator_.returned_constructor(path).has_value()) << "`return t` is not a constructor";
}

TEST_F(SourceLocatorFile, ReportsNothingForAKeyBuiltByCode) {
  const std::string path = write("local t = { a = 1 }\nt.b = 2\nreturn t\n");
  const auto t = locator_.constructor_at_line(path, 1);
  ASSERT_TRUE(t.has_value());
  EXPECT_FALSE(locator_.find_key(*t, "b").has_value());
}

TEST_F(SourceLocatorFile, AnchorsAHelperLineAtTheCallArgumentNotAnEarlierTable) {
  const std::string path = write("local x = {1}; local m = ms.mlp { hidden = {8} }\n");
  const auto m = locator_.constructor_at_line(path, 1);
  ASSERT_TRUE(m.has_value());
  EXPECT_TRUE(locator_.find_key(*m, "hidden").has_value());
}

}  // namespace
}  // namespace moonseed::scripts
