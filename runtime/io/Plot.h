// Plots of result files, drawn by gnuplot (Debian's gnuplot-nox, driven through a pipe): lines of
// one or more columns against time (the file's first column) or against another column, with the
// columns' names and units as labels, written as PNG or SVG. The CLI (`mbsc plot`) and, later,
// the REPL's `plot` command are views of this one function.
#pragma once

#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace mbs::rt {

struct PlotRequest {
  std::string csv;             // a result file: header `x,<names...>`, then rows
  std::vector<std::string> y;  // columns to draw (at least one)
  std::string x;               // the abscissa; empty: the file's first column (time, load)
  std::string output;          // FILE.png or FILE.svg (the extension picks the format)
  std::string title;           // empty: the file's name
  // Column name -> unit (e.g. "m"; from CompiledModel::output_unit). A column with a unit is
  // labelled "name [unit]" on its axis and in the legend; when every drawn column has the same
  // unit, the y axis is labelled "[unit]" alone and the legend keeps the names. Columns without
  // one (or with "") are labelled by their names.
  std::map<std::string, std::string> units;
  int width = 900, height = 600;
};

// A request that cannot be drawn: an unreadable file, a column the file does not have (the
// message suggests the nearest names), an output that is neither .png nor .svg, no gnuplot.
struct PlotError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Draws the plot into request.output. Throws PlotError; gnuplot's own complaints go to stderr.
void plot_csv(const PlotRequest& request);

// The program that draws: $MBS_GNUPLOT if set, else gnuplot found on $PATH; "" if there is none.
std::string find_gnuplot();

}  // namespace mbs::rt
