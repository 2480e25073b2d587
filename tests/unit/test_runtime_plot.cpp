// Plots of result files (runtime/io/Plot.h), drawn by gnuplot: the named series are in the
// picture, mistakes are named, and a failed plot leaves the previous one alone.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "runtime/io/CsvWriter.h"
#include "runtime/io/Plot.h"

namespace mbs::rt {
namespace {

namespace fs = std::filesystem;

std::string temp(const std::string& name) {
  return (fs::temp_directory_path() / ("mbs_plot_" + std::to_string(::getpid()) + "_" + name))
      .string();
}

std::string read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A damped oscillation and its velocity, with a name that needs quoting in the header.
std::string result_file() {
  const std::string path = temp("result.csv");
  CsvWriter w(path, std::vector<std::string>{"body.x", "der(body.x)", "R[1,2]"});
  for (int i = 0; i <= 2000; ++i) {
    const double t = 0.005 * i;
    const std::vector<double> v = {
        std::exp(-0.3 * t) * std::cos(2 * t),
        -std::exp(-0.3 * t) * (0.3 * std::cos(2 * t) + 2 * std::sin(2 * t)), 1.0};
    w.write_row(t, v);
  }
  w.close();
  return path;
}

struct Env {
  explicit Env(const char* value) { ::setenv("MBS_GNUPLOT", value, 1); }
  ~Env() { ::unsetenv("MBS_GNUPLOT"); }
};

TEST(Plot, SvgHasTheSeriesAndAxisNames) {
  ASSERT_FALSE(find_gnuplot().empty()) << "gnuplot-nox is in tools/deps.txt";
  PlotRequest r;
  r.csv = result_file();
  r.y = {"body.x", "der(body.x)", "R[1,2]"};
  r.output = temp("plot.svg");
  plot_csv(r);
  const std::string svg = read(r.output);
  ASSERT_NE(svg.find("<svg"), std::string::npos);
  for (const char* text : {">body.x<", ">der(body.x)<", ">R[1,2]<", ">time<"})
    EXPECT_NE(svg.find(text), std::string::npos) << text;
  // three series of 2001 points each: three long paths
  size_t paths = 0;
  for (size_t at = 0; (at = svg.find("<path", at)) != std::string::npos; ++at) ++paths;
  EXPECT_GE(paths, 3u);
  fs::remove(r.output);
  fs::remove(r.csv);
}

// Known units label the axes and the legend: "name [unit]", or, for several series of one
// unit, "[unit]" on the y axis and the names in the legend.
TEST(Plot, UnitsLabelTheAxesAndTheLegend) {
  PlotRequest r;
  r.csv = result_file();
  r.y = {"body.x"};
  r.output = temp("units.svg");
  r.units = {{"time", "s"}, {"body.x", "m"}, {"der(body.x)", "m/s"}, {"R[1,2]", "m"}};
  plot_csv(r);
  std::string svg = read(r.output);
  for (const char* text : {">body.x [m]<", ">time [s]<"})
    EXPECT_NE(svg.find(text), std::string::npos) << text;
  r.y = {"body.x", "R[1,2]"};  // one unit: on the axis
  plot_csv(r);
  svg = read(r.output);
  for (const char* text : {">[m]<", ">body.x<", ">R[1,2]<"})
    EXPECT_NE(svg.find(text), std::string::npos) << text;
  EXPECT_EQ(svg.find(">body.x [m]<"), std::string::npos);
  r.y = {"der(body.x)", "R[1,2]"};  // two units: each in its legend entry
  r.x = "body.x";
  plot_csv(r);
  svg = read(r.output);
  for (const char* text : {">der(body.x) [m/s]<", ">R[1,2] [m]<", ">body.x [m]<"})
    EXPECT_NE(svg.find(text), std::string::npos) << text;
  EXPECT_EQ(svg.find(">[m]<"), std::string::npos);
  fs::remove(r.output);
  fs::remove(r.csv);
}

TEST(Plot, PngAgainstAnotherColumn) {
  PlotRequest r;
  r.csv = result_file();
  r.y = {"der(body.x)"};
  r.x = "body.x";
  r.output = temp("phase.png");
  plot_csv(r);
  const std::string png = read(r.output);
  ASSERT_GT(png.size(), 2000u);
  EXPECT_EQ(png.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
  fs::remove(r.output);
  fs::remove(r.csv);
}

TEST(Plot, MistakesAreNamed) {
  PlotRequest r;
  r.csv = result_file();
  r.y = {"body.xx"};
  r.output = temp("x.png");
  try {
    plot_csv(r);
    FAIL() << "no error";
  } catch (const PlotError& e) {
    EXPECT_NE(std::string(e.what()).find("no column 'body.xx'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("'body.x'"), std::string::npos) << e.what();
  }
  r.y = {"body.x"};
  r.output = temp("x.pdf");
  EXPECT_THROW(plot_csv(r), PlotError);
  r.csv = temp("missing.csv");
  r.output = temp("x.png");
  EXPECT_THROW(plot_csv(r), PlotError);
  {
    const Env none("/nonexistent/gnuplot");
    r.csv = result_file();
    try {
      plot_csv(r);
      FAIL() << "no error";
    } catch (const PlotError& e) {
      EXPECT_NE(std::string(e.what()).find("gnuplot-nox"), std::string::npos) << e.what();
    }
  }
  EXPECT_FALSE(fs::exists(r.output));
  fs::remove(r.csv);
}

TEST(Plot, AFailedPlotLeavesThePreviousOne) {
  PlotRequest r;
  r.csv = result_file();
  r.y = {"body.x"};
  r.output = temp("kept.svg");
  plot_csv(r);
  const std::string before = read(r.output);
  {
    const Env failing("/bin/false");  // a "gnuplot" that fails
    EXPECT_THROW(plot_csv(r), PlotError);
  }
  EXPECT_EQ(read(r.output), before);
  size_t leftovers = 0;
  for (const auto& e : fs::directory_iterator(fs::path(r.output).parent_path()))
    if (e.path().filename().string().find("kept.svg.tmp") != std::string::npos) ++leftovers;
  EXPECT_EQ(leftovers, 0u);
  fs::remove(r.output);
  fs::remove(r.csv);
}

}  // namespace
}  // namespace mbs::rt
