// rt::ResultTable: the rows of a run in memory (the REPL's last result). Interpolation is checked
// against a function it must reproduce exactly (a straight line between rows) and against the
// rows themselves; a written table reads back to the same numbers.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "runtime/io/ResultTable.h"

using mbs::rt::ResultTable;

namespace {

std::string tmp(const std::string& name) {
  return testing::TempDir() + std::to_string(::getpid()) + "_" + name;
}

}  // namespace

TEST(ResultTable, ColumnsByNameAndLinearInterpolation) {
  ResultTable t("time", {"a", "b"});
  // a = 2 t + 1 (reproduced exactly between rows), b = t^2 (the chord between rows)
  for (double x : {0.0, 0.5, 1.0, 2.0}) {
    const std::vector<double> v = {2 * x + 1, x * x};
    t.add_row(x, v);
  }
  EXPECT_EQ(t.rows(), 4);
  EXPECT_EQ(t.column("time"), 0);
  EXPECT_EQ(t.column("b"), 2);
  EXPECT_EQ(t.column("c"), -1);
  for (double x : {0.0, 0.1, 0.77, 1.5, 2.0}) EXPECT_DOUBLE_EQ(*t.interpolate(1, x), 2 * x + 1);
  EXPECT_DOUBLE_EQ(*t.interpolate(2, 1.5), 0.5 * (1.0 + 4.0));  // the chord from 1 to 2
  EXPECT_DOUBLE_EQ(*t.interpolate(2, 0.5), 0.25);               // a row itself
  EXPECT_DOUBLE_EQ(*t.interpolate(0, 0.3), 0.3);
  EXPECT_FALSE(t.interpolate(1, -0.01));
  EXPECT_FALSE(t.interpolate(1, 2.01));
}

TEST(ResultTable, ARepeatedTimeTakesTheLaterRow) {
  ResultTable t("time", {"x"});
  t.add_row(0.0, std::vector<double>{0.0});
  t.add_row(1.0, std::vector<double>{1.0});  // before an event
  t.add_row(1.0, std::vector<double>{5.0});  // after it
  t.add_row(2.0, std::vector<double>{6.0});
  EXPECT_DOUBLE_EQ(*t.interpolate(1, 1.0), 5.0);
  EXPECT_DOUBLE_EQ(*t.interpolate(1, 0.5), 0.5);
  EXPECT_DOUBLE_EQ(*t.interpolate(1, 1.5), 5.5);
}

TEST(ResultTable, WrittenTablesReadBackExactlyWithUndeterminedValues) {
  ResultTable t("load", {"x", "f"});
  const double nan = std::numeric_limits<double>::quiet_NaN();
  t.add_row(0.1, std::vector<double>{1.0 / 3.0, nan});
  t.add_row(0.2, std::vector<double>{-2e-300, 7.0});
  const std::string path = tmp("table.csv");
  t.write_csv(path);
  ResultTable r = ResultTable::read_csv(path);
  EXPECT_EQ(r.first(), "load");
  EXPECT_EQ(r.names(), (std::vector<std::string>{"x", "f"}));
  ASSERT_EQ(r.rows(), 2);
  EXPECT_EQ(r.at(0, 1), 1.0 / 3.0);
  EXPECT_TRUE(std::isnan(r.at(0, 2)));
  EXPECT_EQ(r.at(1, 1), -2e-300);
  EXPECT_EQ(r.at(1, 0), 0.2);
}

TEST(ResultTable, BadFilesAreNamedWithTheirLine) {
  const std::string path = tmp("bad.csv");
  std::ofstream(path) << "time,x\n0,1\n1,abc\n";
  try {
    ResultTable::read_csv(path);
    FAIL() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(":3: 'abc' in column 'x' is not a number"),
              std::string::npos)
        << e.what();
  }
  std::ofstream(path) << "time,x\n0,1,2\n";
  EXPECT_THROW(ResultTable::read_csv(path), std::runtime_error);
  EXPECT_THROW(ResultTable::read_csv(tmp("missing.csv")), std::runtime_error);
  ResultTable t("time", {"x"});
  EXPECT_THROW(t.add_row(0, std::vector<double>{1, 2}), std::logic_error);
}
