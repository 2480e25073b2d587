// .mat result files (runtime/io/MatWriter.h) read back by a reader written from the MATLAB v4
// rules (mat4_reader.h): the matrices and their type codes, names and descriptions with units,
// dataInfo, parameters in data_1, rows bit for bit in data_2, aliases sharing a row with their
// sign, the columns chosen by patterns (ColumnSelect.h), what a killed writer leaves, and the
// file as scipy.io.loadmat reads it.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "runtime/io/ColumnSelect.h"
#include "runtime/io/CsvWriter.h"
#include "runtime/io/MatWriter.h"
#include "runtime/io/ResultTable.h"
#include "runtime/io/ResultWriter.h"
#include "tests/unit/mat4_reader.h"

namespace mbs::rt {
namespace {

namespace m4 = mat4test;

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          ("mbs_test_" + std::to_string(::getpid()) + "_" + name))
      .string();
}

// x, v = der(x), w = -v (an alias of v), y = x (an alias of x), e (no unit, no description);
// parameters k and m.
ResultColumns example_columns() {
  ResultColumns c;
  c.names = {"x", "der(x)", "w", "y", "e"};
  c.units = {"m", "m/s", "m/s", "m", ""};
  c.descriptions = {"position", "", "minus the velocity", "", ""};
  c.alias_of = {-1, -1, 1, 0, -1};
  c.alias_sign = {1, 1, -1, 1, 1};
  c.parameter_names = {"k", "m"};
  c.parameter_values = {4.5, 0.1};
  c.parameter_units = {"N/m", ""};
  c.parameter_descriptions = {"stiffness", "mass"};
  return c;
}

// Values whose decimal forms are long (bit-exactness), a NaN and an infinity.
std::vector<double> row_values(int i) {
  const double t = 0.1 * i;
  return {std::sin(t) / 3, std::cos(t) / 7, -std::cos(t) / 7, std::sin(t) / 3,
          i == 2 ? std::numeric_limits<double>::quiet_NaN()
                 : (i == 3 ? -std::numeric_limits<double>::infinity() : 1e-300 * i)};
}

bool same_bits(double a, double b) {
  return std::memcmp(&a, &b, sizeof a) == 0;
}

TEST(MatWriter, MatricesFollowTheResultFormat) {
  const std::string path = temp_path("format.mat");
  const ResultColumns columns = example_columns();
  {
    MatWriter w(path, columns);
    for (int i = 0; i < 5; ++i) w.write_row(0.1 * i, row_values(i));
    w.close();
    EXPECT_EQ(w.rows(), 5);
  }
  const m4::File f = m4::read(path);
  EXPECT_EQ(f.order, (std::vector<std::string>{"Aclass", "name", "description", "dataInfo",
                                               "data_1", "data_2"}));
  const m4::Matrix& aclass = f.matrices.at("Aclass");
  EXPECT_EQ(aclass.type, 51);  // uint8 text
  EXPECT_EQ(aclass.rows, 4);
  EXPECT_EQ(aclass.row_text(0), "Atrajectory");
  EXPECT_EQ(aclass.row_text(1), "1.1");
  EXPECT_EQ(aclass.row_text(2), "");
  EXPECT_EQ(aclass.row_text(3), "binTrans");

  // one name per column: time, the columns, the parameters
  const m4::Matrix& name = f.matrices.at("name");
  const m4::Matrix& desc = f.matrices.at("description");
  EXPECT_EQ(name.type, 51);
  ASSERT_EQ(name.cols, 8);
  ASSERT_EQ(desc.cols, 8);
  const std::vector<std::string> names = {"time", "x", "der(x)", "w", "y", "e", "k", "m"};
  const std::vector<std::string> descriptions = {
      "Simulation time [s]", "position [m]", "[m/s]", "minus the velocity [m/s]", "[m]", "",
      "stiffness [N/m]",     "mass"};
  for (int32_t c = 0; c < 8; ++c) {
    EXPECT_EQ(name.column_text(c), names[static_cast<size_t>(c)]);
    EXPECT_EQ(desc.column_text(c), descriptions[static_cast<size_t>(c)]);
  }

  // dataInfo: [matrix, signed row, interpolation, extrapolation] per name
  const m4::Matrix& info = f.matrices.at("dataInfo");
  EXPECT_EQ(info.type, 20);  // int32
  ASSERT_EQ(info.rows, 4);
  ASSERT_EQ(info.cols, 8);
  const std::vector<std::vector<double>> expected_info = {
      {0, 1, 0, -1}, {2, 2, 0, -1}, {2, 3, 0, -1}, {2, -3, 0, -1},
      {2, 2, 0, -1}, {2, 4, 0, -1}, {1, 2, 0, 0},  {1, 3, 0, 0}};
  for (int32_t c = 0; c < 8; ++c)
    for (int32_t r = 0; r < 4; ++r)
      EXPECT_EQ(info.at(r, c), expected_info[static_cast<size_t>(c)][static_cast<size_t>(r)])
          << names[static_cast<size_t>(c)] << " row " << r;

  // data_1: the time range, then each parameter at the start and the end
  const m4::Matrix& d1 = f.matrices.at("data_1");
  EXPECT_EQ(d1.type, 0);
  ASSERT_EQ(d1.rows, 3);
  ASSERT_EQ(d1.cols, 2);
  EXPECT_EQ(d1.at(0, 0), 0.0);
  EXPECT_EQ(d1.at(0, 1), 0.1 * 4);
  EXPECT_EQ(d1.at(1, 0), 4.5);
  EXPECT_EQ(d1.at(1, 1), 4.5);
  EXPECT_EQ(d1.at(2, 0), 0.1);
  EXPECT_EQ(d1.at(2, 1), 0.1);

  // data_2: one column per row, every value through dataInfo bit for bit, aliases with their sign
  const m4::Matrix& d2 = f.matrices.at("data_2");
  EXPECT_EQ(d2.type, 0);
  ASSERT_EQ(d2.rows, 4);  // time, x, der(x), e
  ASSERT_EQ(d2.cols, 5);
  for (int i = 0; i < 5; ++i) {
    EXPECT_TRUE(same_bits(d2.at(0, i), 0.1 * i));
    const std::vector<double> v = row_values(i);
    for (int32_t c = 1; c <= 5; ++c) {
      const auto k = static_cast<int32_t>(info.at(1, c));
      const double value = (k < 0 ? -1.0 : 1.0) * d2.at(std::abs(k) - 1, i);
      EXPECT_TRUE(same_bits(value, v[static_cast<size_t>(c - 1)]) || std::isnan(value))
          << names[static_cast<size_t>(c)] << " at row " << i;
    }
    EXPECT_EQ(std::isnan(d2.at(3, i)), i == 2);
  }
  std::filesystem::remove(path);
}

TEST(MatWriter, ChosenColumnsKeepAnAliasWhoseTargetIsNotWritten) {
  const std::string path = temp_path("chosen.mat");
  const ResultColumns columns = example_columns();
  // w (= -der(x)) without der(x): a row of its own; y with x: x's row
  const std::vector<int32_t> chosen =
      select_columns(columns.names, std::vector<std::string>{"w", "x", "y"});
  ASSERT_EQ(chosen, (std::vector<int32_t>{0, 2, 3}));
  {
    auto w = open_result_writer(path, columns, chosen);
    for (int i = 0; i < 3; ++i) w->write_row(0.1 * i, row_values(i));
    w->close();
  }
  const m4::File f = m4::read(path);
  const m4::Matrix& info = f.matrices.at("dataInfo");
  ASSERT_EQ(info.cols, 6);  // time, x, w, y, k, m
  EXPECT_EQ(f.matrices.at("name").column_text(2), "w");
  EXPECT_EQ(info.at(1, 1), 2);  // x
  EXPECT_EQ(info.at(1, 2), 3);  // w: its own row, its own sign
  EXPECT_EQ(info.at(1, 3), 2);  // y = x
  const m4::Matrix& d2 = f.matrices.at("data_2");
  ASSERT_EQ(d2.rows, 3);
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(same_bits(d2.at(2, i), row_values(i)[2]));
  std::filesystem::remove(path);
}

TEST(MatWriter, SameRowsAsTheCsvWriterBitForBit) {
  const std::string mat = temp_path("same.mat"), csv = temp_path("same.csv");
  const ResultColumns columns = example_columns();
  {
    auto a = open_result_writer(mat, columns);
    auto b = open_result_writer(csv, columns);
    for (int i = 0; i < 40; ++i) {
      const auto v = row_values(i + 4);  // no NaN (CSV writes it as "nan")
      a->write_row(1e-3 * i, v);
      b->write_row(1e-3 * i, v);
    }
    a->close();
    b->close();
  }
  const ResultTable table = ResultTable::read_csv(csv);
  const m4::File f = m4::read(mat);
  const m4::Matrix& info = f.matrices.at("dataInfo");
  const m4::Matrix& d2 = f.matrices.at("data_2");
  ASSERT_EQ(d2.cols, table.rows());
  for (int64_t r = 0; r < table.rows(); ++r) {
    for (int32_t c = 0; c <= 5; ++c) {
      const auto k = static_cast<int32_t>(info.at(1, c));
      const double value = (k < 0 ? -1.0 : 1.0) * d2.at(std::abs(k) - 1, static_cast<int32_t>(r));
      EXPECT_TRUE(same_bits(value, table.at(r, c))) << "column " << c << " row " << r;
    }
  }
  std::filesystem::remove(mat);
  std::filesystem::remove(csv);
}

// A writer killed while it writes (SIGKILL, no chance to close) leaves a file whose header
// counts only rows that are in it; those rows are whole and right. (A kill at a random moment:
// the test passes whichever of the writer's steps it interrupts.)
TEST(MatWriter, KilledWriterLeavesTheCountedRows) {
  const std::string path = temp_path("killed.mat");
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::close(ready[0]);
    MatWriter w(path, example_columns(), std::chrono::milliseconds(0));  // a flush per row
    for (int i = 0;; ++i) {
      std::vector<double> v(5, static_cast<double>(i));
      w.write_row(i, v);
      if (i == 200) (void)!::write(ready[1], "x", 1);
    }
  }
  ::close(ready[1]);
  char c;
  ASSERT_EQ(::read(ready[0], &c, 1), 1);
  ::kill(child, SIGKILL);
  int status = 0;
  ::waitpid(child, &status, 0);
  ::close(ready[0]);
  const m4::File f = m4::read(path, /*allow_trailing=*/true);
  const m4::Matrix& d2 = f.matrices.at("data_2");
  EXPECT_GE(d2.cols, 200);
  EXPECT_LT(f.trailing, 2 * sizeof(double) * static_cast<size_t>(d2.rows));  // at most a row
  for (int32_t i = 0; i < d2.cols; ++i)
    for (int32_t r = 0; r < d2.rows; ++r) ASSERT_EQ(d2.at(r, i), i);
  // the time range is updated after the count: it ends at the last counted row or one write
  // (here: one row) before it
  const double end = f.matrices.at("data_1").at(0, 1);
  EXPECT_TRUE(end == d2.at(0, d2.cols - 1) || end == d2.at(0, d2.cols - 2)) << end;
  std::filesystem::remove(path);
}

TEST(MatWriter, ExtensionChoosesTheFormat) {
  EXPECT_TRUE(is_mat_path("r.mat"));
  EXPECT_TRUE(is_mat_path("dir.x/R.MAT"));
  EXPECT_FALSE(is_mat_path("r.csv"));
  EXPECT_FALSE(is_mat_path("mat"));
  EXPECT_FALSE(is_mat_path("dir.mat/r"));
  EXPECT_THROW(MatWriter("/nonexistent-dir/r.mat", example_columns()), std::runtime_error);
  EXPECT_THROW(MatWriter(std::filesystem::temp_directory_path().string(), example_columns()),
               std::runtime_error);  // a directory is refused (AtomicFile.h)
}

TEST(MatWriter, DeviceIsWrittenWhole) {
  // /dev/null cannot be updated in place: the file goes through a temporary file, which is gone
  MatWriter w("/dev/null", example_columns());
  w.write_row(0, row_values(0));
  EXPECT_NO_THROW(w.close());
}

TEST(ResultTable, SavesAsMatWithChosenColumns) {
  ResultTable t("time", {"a", "b.c[1]", "der(a)"});
  t.add_row(0, std::vector<double>{1, 2, 3});
  t.add_row(0.5, std::vector<double>{4, 5, 6});
  const std::string path = temp_path("table.mat");
  const auto chosen = select_columns(t.names(), std::vector<std::string>{"der(*)", "b.c[*]"});
  t.write(path, nullptr, chosen);
  const m4::File f = m4::read(path);
  const m4::Matrix& name = f.matrices.at("name");
  ASSERT_EQ(name.cols, 3);
  EXPECT_EQ(name.column_text(1), "b.c[1]");
  EXPECT_EQ(name.column_text(2), "der(a)");
  const m4::Matrix& d2 = f.matrices.at("data_2");
  ASSERT_EQ(d2.cols, 2);
  EXPECT_EQ(d2.at(0, 1), 0.5);
  EXPECT_EQ(d2.at(1, 1), 5);
  EXPECT_EQ(d2.at(2, 1), 6);
  std::filesystem::remove(path);
}

TEST(ColumnSelect, NamesAndGlobs) {
  const std::vector<std::string> names = {
      "j1.phi", "j1.w", "j2.phi", "der(j1.phi)", "body1.r_0[1]", "body2.r_0[3]", "body12.r_0[1]"};
  const auto pick = [&](std::vector<std::string> p) { return select_columns(names, p); };
  EXPECT_EQ(pick({"j1.*"}), (std::vector<int32_t>{0, 1}));
  EXPECT_EQ(pick({"der(j1.phi)"}), (std::vector<int32_t>{3}));
  EXPECT_EQ(pick({"der(*)", "j2.phi"}), (std::vector<int32_t>{2, 3}));
  EXPECT_EQ(pick({"body?.r_0[*]"}), (std::vector<int32_t>{4, 5}));        // [ ] are literal
  EXPECT_EQ(pick({"*phi*", "j?.phi"}), (std::vector<int32_t>{0, 2, 3}));  // each once, in order
  EXPECT_EQ(pick({"?1.w"}), (std::vector<int32_t>{1}));
  EXPECT_TRUE(glob_match("*", ""));
  EXPECT_TRUE(glob_match("a*b*c", "aXbYbZc"));
  EXPECT_FALSE(glob_match("a*b", "aXbY"));
}

TEST(ColumnSelect, NothingMatchedIsAnErrorWithASuggestion) {
  const std::vector<std::string> names = {"j1.phi", "j1.w", "mass.x"};
  try {
    select_columns(names, std::vector<std::string>{"j1.phl"});
    FAIL();
  } catch (const ColumnSelectError& e) {
    EXPECT_STREQ(e.what(), "no result column 'j1.phl'; did you mean 'j1.phi'?");
  }
  try {
    select_columns(names, std::vector<std::string>{"j1.*", "j9.*"});
    FAIL();
  } catch (const ColumnSelectError& e) {
    EXPECT_STREQ(e.what(), "the pattern 'j9.*' matches no result column; did you mean 'j1.*'?");
  }
  try {
    select_columns(names, std::vector<std::string>{"*.zz"});
    FAIL();
  } catch (const ColumnSelectError& e) {
    EXPECT_STREQ(e.what(), "the pattern '*.zz' matches no result column");
  }
}

// scipy.io.loadmat (Debian's python3-scipy, tools/deps.txt) reads the file: the names, the
// parameters and every value bit for bit (printed as the bytes of each double).
TEST(MatWriter, ScipyLoadmatReadsTheFile) {
  if (std::system("/usr/bin/python3 -c 'import scipy.io, numpy' >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "Debian's python3-scipy and python3-numpy are not installed";
  const std::string path = temp_path("scipy.mat"), out = temp_path("scipy.txt");
  const ResultColumns columns = example_columns();
  {
    MatWriter w(path, columns);
    for (int i = 3; i < 6; ++i) w.write_row(0.1 * i, row_values(i));
    w.close();
  }
  const std::string script =
      "import scipy.io, struct, sys\n"
      "m = scipy.io.loadmat(sys.argv[1], chars_as_strings=False)\n"
      "names = [''.join(c).rstrip('\\0') for c in m['name'].T]\n"
      "info, d1, d2 = m['dataInfo'], m['data_1'], m['data_2']\n"
      "print(' '.join(names))\n"
      "print(''.join(m['Aclass'][0]), d2.shape[1])\n"
      "for j, n in enumerate(names):\n"
      "    k = int(info[1, j]); d = d1 if info[0, j] == 1 else d2\n"
      "    s = -1.0 if k < 0 else 1.0\n"
      "    print(n, ' '.join(struct.pack('<d', s * x).hex() for x in d[abs(k) - 1, :]))\n";
  const std::string script_path = temp_path("read.py");
  std::ofstream(script_path) << script;
  ASSERT_EQ(
      std::system(("/usr/bin/python3 '" + script_path + "' '" + path + "' >'" + out + "'").c_str()),
      0);
  std::ifstream in(out);
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line, "time x der(x) w y e k m");
  std::getline(in, line);
  EXPECT_EQ(line, "Atrajectory 3");
  const auto hex = [](double x) {  // the bytes of a little-endian double, as struct.pack
    unsigned char b[8];
    std::memcpy(b, &x, 8);
    std::string s;
    for (unsigned char byte : b) {
      char two[3];
      std::snprintf(two, sizeof two, "%02x", byte);
      s += two;
    }
    return s;
  };
  std::getline(in, line);  // time
  EXPECT_EQ(line, "time " + hex(0.1 * 3) + " " + hex(0.1 * 4) + " " + hex(0.1 * 5));
  for (size_t c = 0; c < 5; ++c) {
    std::getline(in, line);
    std::string want = columns.names[c];
    for (int i = 3; i < 6; ++i) want += " " + hex(row_values(i)[c]);
    EXPECT_EQ(line, want);
  }
  std::getline(in, line);
  EXPECT_EQ(line, "k " + hex(4.5) + " " + hex(4.5));
  std::filesystem::remove(path);
  std::filesystem::remove(out);
  std::filesystem::remove(script_path);
}

}  // namespace
}  // namespace mbs::rt
