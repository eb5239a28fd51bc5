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
  EXPECT_EQ(number_text(1e-5), "0.00001");
  EXPECT_EQ(number_text(2.5e-4), "0.00025");
  for (double v : {0.1 + 0.2, 1.0 / 3.0, 6e-4, 3.141592653589793, -7.25e-300}) {
    EXPECT_EQ(std::strtod(number_text(v).c_str(), nullptr), v) << number_text(v);
  }
}

TEST(NumberText, ReadableLayoutFixedPointInARangeScientificOutside) {
  EXPECT_EQ(number_text(-500.0), "-500");  // was "-5e+02" in `moonseed log ls`
  EXPECT_EQ(number_text(21.5), "21.5");
  EXPECT_EQ(number_text(0.000123), "0.000123");
  EXPECT_EQ(number_text(1500000000.0), "1500000000");  // whole: every digit
  EXPECT_EQ(number_text(1500000000.5), "1.5000000005e+09");
  EXPECT_EQ(number_text(1.5e20), "1.5e+20");
  EXPECT_EQ(number_text(9007199254740992.0), "9007199254740992");  // 2^53: config ranges print it
  EXPECT_EQ(number_text(1e16), "1e+16");
  EXPECT_EQ(number_text(2.5e-7), "2.5e-07");
  EXPECT_EQ(number_text(123456.5), "123456.5");
  EXPECT_EQ(number_text(-0.0), "-0");
}

TEST(NumberText, FloatsUseTheFewestDigitsThatReadBackAsTheFloat) {
  EXPECT_EQ(float_text(0.1f), "0.1");
  EXPECT_EQ(float_text(-500.0f), "-500");
  EXPECT_EQ(float_text(1e-7f), "1e-07");
  EXPECT_EQ(float_text(1.0f / 3.0f), "0.33333334");
  for (float v : {1.0f / 3.0f, 3.14159274f, -2.5e-30f, 16777216.0f}) {
    EXPECT_EQ(std::strtof(float_text(v).c_str(), nullptr), v) << float_text(v);
  }
}

TEST(NumberText, RoundedToSignificantDigitsForPeople) {
  EXPECT_EQ(number_text(21.533333333333335, 4), "21.53");
  EXPECT_EQ(number_text(-500.0, 4), "-500");
  EXPECT_EQ(number_text(0.000123456, 3), "0.000123");
  EXPECT_EQ(number_text(12345.6, 4), "12346");  // integer digits are never rounded away
  EXPECT_EQ(number_text(1.5e9 + 0.5, 4), "1.5e+09");
  EXPECT_EQ(number_text(1234567891.25, 4), "1.235e+09");
  EXPECT_EQ(number_text(9.99996, 4), "10");
  EXPECT_EQ(number_text(0.5, 4), "0.5");
  EXPECT_EQ(number_text(std::numeric_limits<double>::quiet_NaN(), 4), "nan");
}

TEST(NumberText, EveryLayoutReadsBackExactly) {
  for (double v : {1e-300, 9.999999e-6, 1e-5, 0.1 + 0.2, 99999.99999, 999999999.5, 1e9 + 0.25, 1e15, 1e16, 1.7976931348623157e308}) {
    for (double s : {v, -v}) EXPECT_EQ(std::strtod(number_text(s).c_str(), nullptr), s) << number_text(s);
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

TEST(Printable, ControlCharactersAndDeleteBecomeHexEscapesAndTheRestStays) {
  EXPECT_EQ(base::printable("plain host-01.lan"), "plain host-01.lan");
  EXPECT_EQ(base::printable(std::string("a\nb\r\tc\x1b[31m\x7f") + '\0' + "d"), "a\\x0ab\\x0d\\x09c\\x1b[31m\\x7f\\x00d");
  EXPECT_EQ(base::printable("caf\xc3\xa9"), "caf\xc3\xa9");  // UTF-8 as it is
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
