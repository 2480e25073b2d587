#include "runtime/io/Plot.h"

#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#include "runtime/io/AtomicFile.h"
#include "runtime/io/Csv.h"
#include "runtime/io/InputFile.h"
#include "runtime/io/Suggest.h"

namespace mbs::rt {

namespace {

// The column of `name` (1-based, as gnuplot counts), or a PlotError that suggests the nearest.
size_t column_of(const std::vector<std::string>& header, const std::string& name,
                 const std::string& csv) {
  for (size_t i = 0; i < header.size(); ++i)
    if (header[i] == name) return i + 1;
  std::string hint;
  for (const std::string& n : nearest_names(name, header, 3))
    hint += (hint.empty() ? "'" : ", '") + n + "'";
  throw PlotError(fmt::format("'{}' has no column '{}' (it has {} columns; the nearest: {})", csv,
                              name, header.size(), hint));
}

// A gnuplot string literal: single quotes, a quote doubled.
std::string quoted(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("''") : std::string(1, c);
  return out + "'";
}

// "name [unit]", or the name when its unit is unknown.
std::string label(const PlotRequest& r, const std::string& name) {
  const auto it = r.units.find(name);
  return it == r.units.end() || it->second.empty() ? name : name + " [" + it->second + "]";
}

// The unit all of `names` have, or "" when one has none or they differ.
std::string common_unit(const PlotRequest& r, const std::vector<std::string>& names) {
  std::string unit;
  for (const std::string& name : names) {
    const auto it = r.units.find(name);
    if (it == r.units.end() || it->second.empty() || (!unit.empty() && it->second != unit))
      return {};
    unit = it->second;
  }
  return unit;
}

std::string shell_quoted(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

}  // namespace

std::string find_gnuplot() {
  if (const char* env = std::getenv("MBS_GNUPLOT"); env && *env)
    return ::access(env, X_OK) == 0 ? std::string(env) : std::string();
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    if (dir.empty()) continue;
    const std::string candidate = dir + "/gnuplot";
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return {};
}

void plot_csv(const PlotRequest& r) {
  if (r.y.empty()) throw PlotError("nothing to plot: name at least one column");
  const std::string ext = std::filesystem::path(r.output).extension().string();
  std::string terminal;
  if (ext == ".png")
    terminal = fmt::format("pngcairo size {},{} noenhanced font 'sans,10'", r.width, r.height);
  else if (ext == ".svg")
    terminal = fmt::format("svg size {},{} noenhanced font 'sans,10'", r.width, r.height);
  else
    throw PlotError("the plot file '" + r.output + "' must end in .png or .svg");

  std::string why;
  std::optional<std::string> csv = read_input_file(r.csv, kDataFileLimit, "result file", why, true);
  if (!csv) throw PlotError(fmt::format("cannot read '{}': {}", r.csv, why));
  std::istringstream in(std::move(*csv));
  std::string line;
  if (!std::getline(in, line)) throw PlotError("'" + r.csv + "' is empty");
  const std::vector<std::string> header = split_csv_line(line);
  const std::string x_name = r.x.empty() ? header.front() : r.x;
  const size_t x = column_of(header, x_name, r.csv);
  std::vector<size_t> ys;
  for (const auto& name : r.y) ys.push_back(column_of(header, name, r.csv));

  const std::string gnuplot = find_gnuplot();
  if (gnuplot.empty())
    throw PlotError(
        "plots are drawn by gnuplot, which is not installed: apt-get install gnuplot-nox "
        "(tools/install-deps.sh installs it), or set MBS_GNUPLOT to the program");

  // drawn into a temporary file beside the target and renamed: a failed plot leaves the old one
  // (a device or FIFO is written in place, never replaced: AtomicFile.h)
  OutputTarget target;
  try {
    target = output_target(r.output);
  } catch (const std::runtime_error& e) {
    throw PlotError(e.what());
  }
  const std::string tmp = temporary_for(target) + ext;
  std::string script = fmt::format("set terminal {}\nset output {}\n", terminal, quoted(tmp));
  script += "set datafile separator ','\nset grid\nset key outside right top\n";
  script += fmt::format(
      "set title {}\n",
      quoted(r.title.empty() ? std::filesystem::path(r.csv).filename().string() : r.title));
  script += fmt::format("set xlabel {}\n", quoted(label(r, x_name)));
  // several series of one unit: the unit on the axis, the names in the legend
  const std::string unit = ys.size() > 1 ? common_unit(r, r.y) : std::string();
  if (ys.size() == 1)
    script += fmt::format("set ylabel {}\n", quoted(label(r, r.y.front())));
  else if (!unit.empty())
    script += fmt::format("set ylabel {}\n", quoted("[" + unit + "]"));
  script += "plot ";
  for (size_t i = 0; i < ys.size(); ++i) {
    script += fmt::format("{}{} skip 1 using {}:{} with lines linewidth 1.5 title {}",
                          i ? ", " : "", i ? std::string("''") : quoted(r.csv), x, ys[i],
                          quoted(unit.empty() ? label(r, r.y[i]) : r.y[i]));
  }
  script += "\nset output\n";

  std::fflush(nullptr);
  FILE* pipe = ::popen((shell_quoted(gnuplot) + " >/dev/null").c_str(), "w");
  if (!pipe) throw PlotError(fmt::format("cannot start {}: {}", gnuplot, std::strerror(errno)));
  std::fwrite(script.data(), 1, script.size(), pipe);
  const int status = ::pclose(pipe);
  std::error_code ec;
  const bool drawn = WIFEXITED(status) && WEXITSTATUS(status) == 0 &&
                     std::filesystem::file_size(tmp, ec) > 0 && !ec;
  if (!drawn) {
    std::filesystem::remove(tmp, ec);
    throw PlotError(fmt::format("{} could not draw '{}' (exit status {})", gnuplot, r.output,
                                WIFEXITED(status) ? WEXITSTATUS(status) : -1));
  }
  try {
    commit_temporary(tmp, target, r.output);
  } catch (const std::runtime_error& e) {
    throw PlotError(e.what());
  }
}

}  // namespace mbs::rt
