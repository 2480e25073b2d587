#include <gtest/gtest.h>

#include "compiler/diag/Diagnostics.h"

TEST(Diag, Placeholder) {
  EXPECT_GT(mbs::diag_kind_count(), 0u);
}
