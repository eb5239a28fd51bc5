#include "base/text.h"

#include <cmath>
#include <cstdlib>
#include <limits>

#include <gtest/gtest.h>

namespace moonseed::base {
namespace {

TEST(NumberText, WholeNumbersHaveNoFraction) {
  EXPECT_EQ(number_text(3), "3");
  EXPECT_EQ(number_text(-20), "-20");
  EXPECT_EQ(number_text(0), "0");
  EXPECT_EQ(number_text(1e14), "100000000000000");
}

TEST(NumberText, FractionsAreTheShortestTextThatReadsBackExactly) {
  EXPECT_EQ(number_text(0.1), "0.1");
  EXPECT_EQ(number_text(1e-5), "1e-05");
  EXPECT_EQ(number_text(2.5e-4), "0.00025");
  for (double v : {0.1 + 0.2, 1.0 / 3.0, 6e-4, 3.141592653589793, -7.25e-300}) {
    EXPECT_EQ(std::strtod(number_text(v).c_str(), nullptr), v) << number_text(v);
  }
}

TEST(NumberText, NonFiniteValuesAreNamed) {
  EXPECT_EQ(number_text(std::numeric_limits<double>::quiet_NaN()), "nan");
  EXPECT_EQ(number_text(std::numeric_limits<double>::infinity()), "inf");
  EXPECT_EQ(number_text(-std::numeric_limits<double>::infinity()), "-inf");
}

TEST(JsonQuote, EscapesQuotesBackslashesAndControlCharacters) {
  EXPECT_EQ(json_quote("plain"), "\"plain\"");
  EXPECT_EQ(json_quote("a\"b\\c"), "\"a\\\"b\\\\c\"");
  EXPECT_EQ(json_quote("l1\nl2\r\t"), "\"l1\\nl2\\r\\t\"");
  EXPECT_EQ(json_quote(std::string("\x01\x1f", 2)), "\"\\u0001\\u001f\"");
  EXPECT_EQ(json_quote("caf\xc3\xa9"), "\"caf\xc3\xa9\"");  // UTF-8 passes through
}

TEST(LuaQuote, EscapesControlCharactersAndDeleteAsDecimal) {
  EXPECT_EQ(lua_quote("it's \"x\""), "\"it's \\\"x\\\"\"");
  EXPECT_EQ(lua_quote("a\nb\\"), "\"a\\nb\\\\\"");
  EXPECT_EQ(lua_quote(std::string("\x00\x7f", 2)), "\"\\000\\127\"");
}

TEST(ShapeText, ListsTheDimensions) {
  EXPECT_EQ(shape_text({4, 84, 84}), "[4, 84, 84]");
  EXPECT_EQ(shape_text({7}), "[7]");
  EXPECT_EQ(shape_text({}), "[]");
}

TEST(Join, PutsTheSeparatorBetweenItemsOnly) {
  EXPECT_EQ(join({"a", "b", "c"}), "a, b, c");
  EXPECT_EQ(join({"a"}, " | "), "a");
  EXPECT_EQ(join({}, ","), "");
}

TEST(EditDistance, CountsInsertionsDeletionsSubstitutionsAndSwaps) {
  EXPECT_EQ(edit_distance("lr", "lr"), 0u);
  EXPECT_EQ(edit_distance("lrr", "lr"), 1u);
  EXPECT_EQ(edit_distance("gamam", "gamma"), 1u);  // adjacent transposition
  EXPECT_EQ(edit_distance("", "abc"), 3u);
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);
}

TEST(ClosestName, SuggestsATypoOrAPrefixAndNothingFarAway) {
  const std::vector<std::string> names = {"optimizer", "topology", "inference"};
  EXPECT_EQ(closest_name("optimzer", names), "optimizer");
  EXPECT_EQ(closest_name("topo", names), "topology");
  EXPECT_EQ(closest_name("zebra", names), "");
  EXPECT_EQ(closest_name("x", names), "");
}

}  // namespace
}  // namespace moonseed::base
