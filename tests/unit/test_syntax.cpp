#include <gtest/gtest.h>

#include "compiler/syntax/Parser.h"

TEST(Syntax, Placeholder) {
  EXPECT_EQ(mbs::kMaxNesting, 256);
}
