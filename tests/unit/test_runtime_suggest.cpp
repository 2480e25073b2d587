// The one distance behind every "did you mean" (runtime/io/Suggest.h).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "runtime/io/Suggest.h"

namespace mbs::rt {
namespace {

TEST(Suggest, EditDistanceCountsATranspositionOnce) {
  EXPECT_EQ(edit_distance("", ""), 0u);
  EXPECT_EQ(edit_distance("abc", ""), 3u);
  EXPECT_EQ(edit_distance("", "ab"), 2u);
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);  // the textbook Levenshtein example
  EXPECT_EQ(edit_distance("veloctiy", "velocity"), 1u);
  EXPECT_EQ(edit_distance("ab", "ba"), 1u);
  EXPECT_EQ(edit_distance("lambdaa", "lambda"), 1u);
  EXPECT_EQ(edit_distance("t_end", "t-end"), 1u);
}

TEST(Suggest, NearestNamesComeNearestFirst) {
  const std::vector<std::string> names = {"time", "x", "y", "lambda"};
  EXPECT_EQ(nearest_names("lambdaa", names, 2), (std::vector<std::string>{"lambda", "time"}));
  EXPECT_EQ(nearest_names("z", names, 10).size(), 4u);
  EXPECT_TRUE(nearest_names("z", {}, 3).empty());
}

}  // namespace
}  // namespace mbs::rt
