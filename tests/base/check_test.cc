#include "base/check.h"

#include <gtest/gtest.h>

#include "tests/error_text.h"

namespace moonseed::base {
namespace {

using test::error_text;

TEST(RequireIndex, AcceptsEveryIndexInsideTheRange) {
  for (int64_t i = 0; i < 4; ++i) EXPECT_NO_THROW(require_index(i, 4, "slot"));
}

TEST(RequireIndex, NamesTheIndexAndTheRangeWhenOutside) {
  EXPECT_EQ(error_text([] { require_index(4, 4, "RewardShaper::shape: slot"); }),
            "RewardShaper::shape: slot 4 outside [0, 4)");
  EXPECT_EQ(error_text([] { require_index(-1, 2, "env"); }), "env -1 outside [0, 2)");
  EXPECT_EQ(error_text([] { require_index(0, 0, "row"); }), "row 0 outside [0, 0)");
}

TEST(RequireIndex, JoinsASubjectGivenInPartsIncludingNumbers) {
  const char* what = "shape";
  EXPECT_EQ(error_text([&] { require_index(5, 3, "RewardShaper::", what, ": slot"); }),
            "RewardShaper::shape: slot 5 outside [0, 3)");
  EXPECT_EQ(error_text([] { require_index(7, 2, "key ", size_t{4}, ": slot"); }), "key 4: slot 7 outside [0, 2)");
}

TEST(RequireIndex, ThrowsTheRequestedErrorType) {
  EXPECT_THROW(require_index(3, 2, "i"), std::invalid_argument);
  EXPECT_THROW(require_index<std::out_of_range>(3, 2, "i"), std::out_of_range);
}

}  // namespace
}  // namespace moonseed::base
