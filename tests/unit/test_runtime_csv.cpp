// Result files: numbers read back bit for bit, the file consists of complete rows while a run is
// going and after an interrupted one, and errors name the file.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <bit>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "runtime/io/CsvWriter.h"
#include "runtime/io/Interrupt.h"
#include "runtime/solvers/Integrator.h"
#include "runtime/solvers/Simulate.h"
#include "tests/unit/runtime_models.h"

namespace mbs::rt {
namespace {

namespace tm = testmodels;

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          ("mbs_test_" + std::to_string(::getpid()) + "_" + name))
      .string();
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Splits a CSV file into rows of fields; checks every line is complete (ends with '\n') and has
// `columns` fields that parse as numbers (after the header).
std::vector<std::vector<double>> parse_complete_rows(const std::string& text, size_t columns,
                                                     std::string* header = nullptr) {
  std::vector<std::vector<double>> rows;
  EXPECT_TRUE(text.empty() || text.back() == '\n') << "file ends in an incomplete row";
  std::istringstream in(text);
  std::string line;
  bool first = true;
  while (std::getline(in, line)) {
    if (first) {
      if (header) *header = line;
      first = false;
      continue;
    }
    std::vector<double> row;
    size_t start = 0;
    while (true) {
      const size_t comma = line.find(',', start);
      const std::string field = line.substr(start, comma - start);
      char* end = nullptr;
      row.push_back(std::strtod(field.c_str(), &end));
      EXPECT_EQ(*end, '\0') << "bad number '" << field << "'";
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
    EXPECT_EQ(row.size(), columns) << line;
    rows.push_back(std::move(row));
  }
  return rows;
}

TEST(CsvWriter, NamesWithCommasOrQuotesAreQuoted) {
  const std::string path = temp_path("quoted.csv");
  const std::vector<std::string> names = {"s.R[1,2]", "plain", "a\"b"};
  {
    CsvWriter w(path, names);
    std::vector<double> v = {1, 2, 3};
    w.write_row(0.0, v);
    w.close();
  }
  std::string header;
  parse_complete_rows(read_file(path), 4, &header);
  EXPECT_EQ(header, "time,\"s.R[1,2]\",plain,\"a\"\"b\"");
}

TEST(CsvWriter, NumbersReadBackBitExactly) {
  std::vector<double> values = {0.1,
                                1.0 / 3.0,
                                -0.0,
                                0.0,
                                M_PI,
                                -1.5e-7,
                                1e21,
                                123456789012345680000.0,
                                std::numeric_limits<double>::denorm_min(),
                                std::numeric_limits<double>::min(),
                                std::numeric_limits<double>::max(),
                                -std::numeric_limits<double>::max(),
                                std::nextafter(1.0, 2.0),
                                std::numeric_limits<double>::epsilon()};
  std::mt19937_64 rng(1);
  while (values.size() < 2000) {  // random bit patterns, finite ones
    const double x = std::bit_cast<double>(rng());
    if (std::isfinite(x)) values.push_back(x);
  }
  const std::string path = temp_path("roundtrip.csv");
  const std::vector<std::string> names = {"a", "b"};
  {
    CsvWriter w(path, names);
    for (size_t i = 0; i + 1 < values.size(); i += 2) {
      w.write_row(static_cast<double>(i) * 0.1, std::span<const double>(&values[i], 2));
    }
    w.close();
  }
  std::string header;
  const auto rows = parse_complete_rows(read_file(path), 3, &header);
  EXPECT_EQ(header, "time,a,b");
  ASSERT_EQ(rows.size(), values.size() / 2);
  for (size_t r = 0; r < rows.size(); ++r) {
    EXPECT_EQ(std::bit_cast<uint64_t>(rows[r][0]), std::bit_cast<uint64_t>(double(2 * r) * 0.1));
    EXPECT_EQ(std::bit_cast<uint64_t>(rows[r][1]), std::bit_cast<uint64_t>(values[2 * r])) << r;
    EXPECT_EQ(std::bit_cast<uint64_t>(rows[r][2]), std::bit_cast<uint64_t>(values[2 * r + 1]));
  }
  std::filesystem::remove(path);
}

TEST(CsvWriter, CannotOpenIsAnErrorNamingThePath) {
  try {
    CsvWriter w("/nonexistent-dir/result.csv", std::vector<std::string>{"x"});
    FAIL() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()),
              "cannot open result file '/nonexistent-dir/result.csv': No such file or directory");
  }
}

// What makes a killed writer leave whole rows: Linux stops a buffered write of a killed process
// only between pages, so every page boundary of the file must be the end of a row. Rows of
// random lengths, written with random flushes, narrow and wide, read back exactly.
TEST(CsvWriter, EveryPageBoundaryOfTheFileIsTheEndOfARow) {
  const auto page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  std::mt19937_64 rng(7);
  for (const size_t columns : {1u, 3u, 40u, 150u}) {
    SCOPED_TRACE(columns);
    const std::string path = temp_path("pages.csv");
    std::vector<std::string> names;
    for (size_t c = 0; c < columns; ++c) names.push_back("x" + std::to_string(c));
    std::vector<std::vector<double>> written;
    {
      CsvWriter w(path, names, std::chrono::hours(1));
      std::vector<double> v(columns);
      for (int r = 0; r < 3000; ++r) {
        // short and long numbers: 0, 1, 0.5, 1/3, random bit patterns
        for (double& x : v) {
          const uint64_t kind = rng() % 4;
          x = kind == 0   ? 0.0
              : kind == 1 ? static_cast<double>(rng() % 100)
              : kind == 2 ? 1.0 / static_cast<double>(1 + rng() % 7)
                          : std::ldexp(static_cast<double>(rng() >> 11), -40);
        }
        w.write_row(0.001 * r, v);
        written.push_back(v);
        if (rng() % 50 == 0) w.flush();  // as the flush interval would
      }
      w.close();
    }
    const std::string text = read_file(path);
    ASSERT_GT(text.size(), 4 * page);
    for (size_t b = page; b < text.size(); b += page)
      ASSERT_EQ(text[b - 1], '\n') << "page boundary at byte " << b << " cuts a row";
    const auto rows = parse_complete_rows(text, columns + 1);
    ASSERT_EQ(rows.size(), written.size());
    for (size_t r = 0; r < rows.size(); ++r) {
      EXPECT_EQ(rows[r][0], 0.001 * static_cast<double>(r));
      for (size_t c = 0; c < columns; ++c) ASSERT_EQ(rows[r][c + 1], written[r][c]) << r;
    }
    std::filesystem::remove(path);
  }
}

TEST(CsvWriter, RowsAreWrittenAfterTheFlushInterval) {
  const std::string path = temp_path("interval.csv");
  CsvWriter w(path, std::vector<std::string>{"x"}, std::chrono::milliseconds(100));
  const double x = 1.0;
  w.write_row(0.0, std::span<const double>(&x, 1));
  EXPECT_EQ(parse_complete_rows(read_file(path), 2).size(), 0u);  // buffered
  std::this_thread::sleep_for(std::chrono::milliseconds(150));
  w.write_row(1.0, std::span<const double>(&x, 1));  // the interval has passed: both written
  EXPECT_EQ(parse_complete_rows(read_file(path), 2).size(), 2u);
  w.close();
  std::filesystem::remove(path);
}

TEST(CsvWriter, FileIsValidWhileTheRunIsGoing) {
  const auto model = tm::pendulum::make();
  SolverOptions o;
  o.t_end = 2.0;
  const std::string path = temp_path("running.csv");
  auto solver = make_integrator(model, o);
  CsvWriter w(path, model.output_names, std::chrono::milliseconds(0));  // write every row
  int64_t seen = 0;
  size_t checks = 0;
  solver->run([&](double t, std::span<const double> y) {
    w.write_row(t, y);
    if (++seen % 400 == 0) {  // look at the file in the middle of the run
      const auto rows = parse_complete_rows(read_file(path), 1 + y.size());
      EXPECT_EQ(static_cast<int64_t>(rows.size()), seen);
      EXPECT_EQ(rows.back()[0], t);
      ++checks;
    }
    return 0;
  });
  w.close();
  EXPECT_EQ(checks, 5u);
  EXPECT_EQ(parse_complete_rows(read_file(path), 6).size(), 2001u);
  std::filesystem::remove(path);
}

TEST(CsvWriter, InterruptedRunLeavesCompleteRows) {
  const auto model = tm::pendulum::make();
  SolverOptions o;
  o.t_end = 10.0;
  const std::string path = temp_path("interrupted.csv");
  install_interrupt_handler();
  auto solver = make_integrator(model, o);
  SolveStatus st;
  {
    CsvWriter w(path, model.output_names);  // default interval: rows stay buffered until close
    int calls = 0;
    st = solver->run([&](double t, std::span<const double> y) {
      w.write_row(t, y);
      if (++calls == 300) ::raise(SIGINT);  // as if Ctrl-C were pressed now
      return 0;
    });
  }  // the writer flushes and closes here, as the CLI does on the way out
  EXPECT_TRUE(interrupt_requested());
  clear_interrupt();
  EXPECT_EQ(st, SolveStatus::Interrupted);
  const auto rows = parse_complete_rows(read_file(path), 6);
  EXPECT_EQ(rows.size(), 300u);
  EXPECT_EQ(rows.back()[0], solver->time());
  std::filesystem::remove(path);
}

TEST(SimulateToCsv, WritesEveryPointAndReportsFailures) {
  const std::string path = temp_path("simulate.csv");
  SolverOptions o;
  o.t_end = 0.5;
  o.output_every = 10;
  auto ok = simulate_to_csv(std::make_shared<const CompiledModel>(tm::msd::make()), o, path);
  EXPECT_EQ(ok.status, SolveStatus::Finished);
  EXPECT_EQ(ok.rows, 51);
  EXPECT_FALSE(ok.failure.has_value());
  std::string header;
  const auto rows = parse_complete_rows(read_file(path), 4, &header);
  EXPECT_EQ(header, "time,mass.x,der(mass.x),der(der(mass.x))");
  ASSERT_EQ(rows.size(), 51u);
  EXPECT_NEAR(rows.back()[1], std::cos(0.5), 1e-6);

  auto failing = tm::msd::make();
  failing.v0[tm::msd::T_FAIL] = 0.25;
  auto bad = simulate_to_csv(std::make_shared<const CompiledModel>(failing), o, path);
  EXPECT_EQ(bad.status, SolveStatus::Failed);
  ASSERT_TRUE(bad.failure.has_value());
  EXPECT_NE(bad.failure->message.find("msd.mbs:7:1"), std::string::npos);
  const auto partial = parse_complete_rows(read_file(path), 4);
  ASSERT_EQ(partial.size(), 26u);  // t = 0, 0.01, ..., 0.25 = the last good point
  EXPECT_EQ(partial.back()[0], 0.25);
  // Off the output grid, the last good point is added.
  failing.v0[tm::msd::T_FAIL] = 0.2555;
  bad = simulate_to_csv(std::make_shared<const CompiledModel>(failing), o, path);
  EXPECT_EQ(bad.status, SolveStatus::Failed);
  const auto partial2 = parse_complete_rows(read_file(path), 4);
  ASSERT_EQ(partial2.size(), 27u);
  EXPECT_NEAR(partial2.back()[0], 0.2555, 1e-9);  // sub-steps got up to T_FAIL
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace mbs::rt
