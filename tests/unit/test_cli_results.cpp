// Result files through mbsc: the format follows --output's extension (CSV or the .mat result
// format, read back by tests/unit/mat4_reader.h), the .mat file of a run holds the same numbers
// as the CSV of the same run bit for bit, aliases share a row with their sign, the parameters
// of the run are in data_1, and --outputs chooses the columns of every result writer.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "cli_test_util.h"
#include "invdyn_models.h"
#include "runtime/io/ResultTable.h"
#include "tests/unit/mat4_reader.h"

namespace {

using mbs::clitest::mbsc;
using mbs::clitest::tmp;
namespace m4 = mbs::mat4test;

// v = der(x), w = -v and p = x are eliminated by the DAE pass with their values kept.
std::string alias_model() {
  const std::string path = tmp("aliases.mbs");
  std::ofstream(path) << R"(model Aliases "aliases of both signs"
  parameter Real k(unit = "N/m") = 100 "stiffness";
  parameter Real m(unit = "kg") = 1 "mass";
  Real x(start = 0.1, unit = "m") "position";
  Real v(unit = "m/s") "velocity";
  Real w "the velocity with the opposite sign";
  Real p "the position again";
equation
  v = der(x);
  m*der(v) + k*x = 0;
  w = -v;
  p = x;
end Aliases;
)";
  return path;
}

struct MatColumns {
  std::vector<std::string> names;
  m4::File file;
  // the values of name j through dataInfo: its row of data_1 or data_2, with its sign
  std::vector<double> values(int32_t j) const {
    const m4::Matrix& info = file.matrices.at("dataInfo");
    const auto k = static_cast<int32_t>(info.at(1, j));
    const m4::Matrix& d = file.matrices.at(info.at(0, j) == 1 ? "data_1" : "data_2");
    std::vector<double> out;
    for (int32_t c = 0; c < d.cols; ++c)
      out.push_back((k < 0 ? -1.0 : 1.0) * d.at(std::abs(k) - 1, c));
    return out;
  }
};

MatColumns read_mat(const std::string& path) {
  MatColumns m;
  m.file = m4::read(path);
  const m4::Matrix& name = m.file.matrices.at("name");
  for (int32_t j = 0; j < name.cols; ++j) m.names.push_back(name.column_text(j));
  return m;
}

bool same_bits(double a, double b) {
  return std::memcmp(&a, &b, sizeof a) == 0;
}

TEST(CliResults, MatHoldsTheCsvOfTheSameRunBitForBit) {
  const std::string model = alias_model(), csv = tmp("run.csv"), mat = tmp("run.mat");
  const std::string args = "'" + model + "' --simulate --t-end 0.05 --step 1e-3 --set k=50 -q ";
  auto r = mbsc(args + "--output '" + csv + "'");
  ASSERT_EQ(r.code, 0) << r.err;
  r = mbsc(args + "--output '" + mat + "'");
  ASSERT_EQ(r.code, 0) << r.err;
  const mbs::rt::ResultTable table = mbs::rt::ResultTable::read_csv(csv);
  const MatColumns m = read_mat(mat);
  const m4::Matrix& info = m.file.matrices.at("dataInfo");
  // every column of the CSV, time first, is a name of the .mat file with the same values
  const std::vector<std::string> columns = table.columns();
  int negative = 0, shared = 0;
  for (size_t c = 0; c < columns.size(); ++c) {
    SCOPED_TRACE(columns[c]);
    const auto it = std::find(m.names.begin(), m.names.end(), columns[c]);
    ASSERT_NE(it, m.names.end());
    const auto j = static_cast<int32_t>(it - m.names.begin());
    EXPECT_EQ(info.at(0, j), c == 0 ? 0 : 2);
    const std::vector<double> v = m.values(j);
    ASSERT_EQ(static_cast<int64_t>(v.size()), table.rows());
    for (int64_t row = 0; row < table.rows(); ++row)
      ASSERT_TRUE(same_bits(v[static_cast<size_t>(row)], table.at(row, static_cast<int32_t>(c))))
          << "row " << row;
    if (info.at(1, j) < 0) ++negative;
    for (int32_t other = 1; other < j; ++other)
      if (info.at(0, other) == 2 && std::abs(info.at(1, other)) == std::abs(info.at(1, j)))
        ++shared;
  }
  EXPECT_EQ(negative, 1) << "w = -v shares v's row with a minus sign";
  EXPECT_EQ(shared, 2) << "p = x and w = -v (both aliases of der(x)) share rows";
  EXPECT_EQ(m.file.matrices.at("data_2").rows, 3) << "time, x and v";
  // the run's parameters (k set on the command line) in data_1, with their descriptions
  const auto k = std::find(m.names.begin(), m.names.end(), "k") - m.names.begin();
  ASSERT_LT(static_cast<size_t>(k), m.names.size());
  EXPECT_EQ(info.at(0, static_cast<int32_t>(k)), 1);
  EXPECT_EQ(m.values(static_cast<int32_t>(k)), (std::vector<double>{50, 50}));
  EXPECT_EQ(m.file.matrices.at("description").column_text(static_cast<int32_t>(k)),
            "stiffness [N/m]");
  // data_1's first row: the time range of the rows
  const m4::Matrix& d1 = m.file.matrices.at("data_1");
  EXPECT_EQ(d1.at(0, 0), table.at(0, 0));
  EXPECT_EQ(d1.at(0, 1), table.at(table.rows() - 1, 0));
}

TEST(CliResults, OutputsChooseTheColumnsOfEveryWriter) {
  const std::string model = alias_model(), csv = tmp("chosen.csv"), mat = tmp("chosen.mat");
  const std::string args = "'" + model + "' --simulate --t-end 0.01 --step 1e-3 -q ";
  auto r = mbsc(args + "--output '" + csv + "' --outputs w 'v*'");
  ASSERT_EQ(r.code, 0) << r.err;
  const mbs::rt::ResultTable table = mbs::rt::ResultTable::read_csv(csv);
  EXPECT_EQ(table.names(), (std::vector<std::string>{"v", "w"}));
  r = mbsc(args + "--output '" + mat + "' --outputs w 'v*'");
  ASSERT_EQ(r.code, 0) << r.err;
  const MatColumns m = read_mat(mat);
  EXPECT_EQ(std::vector<std::string>(m.names.begin(), m.names.begin() + 3),
            (std::vector<std::string>{"time", "v", "w"}));
  EXPECT_EQ(m.file.matrices.at("data_2").rows, 2) << "w = -v: one row for both";
  for (int32_t j = 1; j < 3; ++j)
    for (int64_t row = 0; row < table.rows(); ++row)
      EXPECT_TRUE(same_bits(m.values(j)[static_cast<size_t>(row)], table.at(row, j)));
  // static load steps too, with the load as the first name
  const std::string stat = tmp("static.mat");
  r = mbsc("'" + model + "' --static -q --outputs x --output '" + stat + "'");
  ASSERT_EQ(r.code, 0) << r.err;
  const MatColumns s = read_mat(stat);
  EXPECT_EQ(s.names[0], "load");
  EXPECT_EQ(s.names[1], "x");
  EXPECT_EQ(s.file.matrices.at("description").column_text(0), "Load factor");
  for (const auto& p : {csv, mat, stat}) std::filesystem::remove(p);
}

// Inverse dynamics follows the extension too: the same samples in the .mat file (its columns
// are the analysis's own: names only, an undetermined value NaN where the CSV is empty).
TEST(CliResults, InverseDynamicsWritesMatByTheExtension) {
  const mbs::testutil::SliderCrank crank("SliderCrankMat", "pivot.phi = 1 + 2*time;");
  const std::string model = tmp("id_mat.mbs"), csv = tmp("id.csv"), mat = tmp("id.mat");
  std::ofstream(model) << crank.text();
  const std::string args = "'" + model + "' --inverse-dynamics --t-end 0.05 --step 0.01 -q ";
  auto r = mbsc(args + "--output '" + csv + "'");
  ASSERT_EQ(r.code, 0) << r.err;
  r = mbsc(args + "--output '" + mat + "'");
  ASSERT_EQ(r.code, 0) << r.err;
  const mbs::rt::ResultTable table = mbs::rt::ResultTable::read_csv(csv);
  const MatColumns m = read_mat(mat);
  ASSERT_EQ(m.names, table.columns());
  for (int32_t j = 0; j < static_cast<int32_t>(m.names.size()); ++j) {
    const std::vector<double> v = m.values(j);
    ASSERT_EQ(static_cast<int64_t>(v.size()), table.rows());
    for (int64_t row = 0; row < table.rows(); ++row) {
      const double c = table.at(row, j);
      EXPECT_TRUE(same_bits(v[static_cast<size_t>(row)], c) ||
                  (std::isnan(c) && std::isnan(v[static_cast<size_t>(row)])))
          << m.names[static_cast<size_t>(j)] << " row " << row;
    }
  }
  for (const auto& p : {model, csv, mat}) std::filesystem::remove(p);
}

// (and a study's results file, one row per run, is not a .mat result file)
TEST(CliResults, OutputsThatMatchNothingAreUsageErrors) {
  const std::string model = alias_model(), out = tmp("none.csv");
  auto r = mbsc("'" + model + "' --simulate --t-end 0.01 -q --output '" + out + "' --outputs x vv");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "mbsc: error: --outputs: no result column 'vv'; did you mean 'v'?\n");
  EXPECT_FALSE(std::filesystem::exists(out));
  r = mbsc("'" + model + "' --vary k=1,2 --objective 'max(x)' -q --output '" + out + ".mat'");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("a study's results file is CSV (one row per run)"), std::string::npos)
      << r.err;
  r = mbsc("'" + model + "' --outputs x");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--outputs chooses the columns of the result file of --simulate or "
                       "--static, and neither is given"),
            std::string::npos)
      << r.err;
}

}  // namespace

// The model's experiment annotation sets the end time, the result grid and (for the adaptive
// methods) the tolerance of a run; what the command line gives wins. x' = -x, x(0) = 1: the rows
// are at 0, 0.1, ..., 0.5 and x(0.5) = exp(-0.5).
TEST(CliResults, TheExperimentAnnotationSetsTheRunUnlessTheCommandLineDoes) {
  const std::string model = tmp("experiment.mbs"), csv = tmp("experiment.csv");
  std::ofstream(model) << R"(model Decay
  Real x(start = 1);
equation
  der(x) = -x;
  annotation(experiment(StartTime = 0, StopTime = 0.5, Interval = 0.1, Tolerance = 1e-10,
                        __Vendor_Algorithm = "Dassl"));
end Decay;
)";
  auto run = [&](const std::string& extra) {
    auto r = mbsc("'" + model + "' --simulate -q --output '" + csv + "' " + extra);
    EXPECT_EQ(r.code, 0) << r.err;
    EXPECT_EQ(r.err.find("warning"), std::string::npos) << r.err;
    return mbs::rt::ResultTable::read_csv(csv);
  };
  const double exact = std::exp(-0.5);
  mbs::rt::ResultTable t = run("");  // gen-alpha at h = 1e-3, a row every 100 steps
  ASSERT_EQ(t.rows(), 6);
  for (int64_t k = 0; k < 6; ++k) EXPECT_NEAR(t.at(k, 0), 0.1 * static_cast<double>(k), 1e-12);
  EXPECT_NEAR(t.at(5, 1), exact, 1e-6);
  t = run("--t-end 0.2");
  EXPECT_EQ(t.rows(), 3);
  EXPECT_NEAR(t.at(2, 0), 0.2, 1e-12);
  t = run("--step 0.05");  // the step given: a row per step, to StopTime
  ASSERT_EQ(t.rows(), 11);
  EXPECT_NEAR(t.at(10, 0), 0.5, 1e-12);
  // dopri5: h = Interval, rtol = Tolerance (its default rtol, 1e-8, leaves an error of 2.2e-10)
  t = run("--solver dopri5");
  ASSERT_EQ(t.rows(), 6);
  EXPECT_LT(std::fabs(t.at(5, 1) - exact), 5e-11);
  t = run("--solver dopri5 --rtol 1e-4");
  EXPECT_GT(std::fabs(t.at(5, 1) - exact), 5e-11);
  // -v says what the annotation set
  auto r = mbsc("'" + model + "' --simulate -v --output '" + csv + "' --t-end 0.3");
  EXPECT_NE(r.err.find("from the model's experiment annotation: h = 0.001, output_every = 100"),
            std::string::npos)
      << r.err;
  for (const auto& p : {model, csv}) std::filesystem::remove(p);
}
