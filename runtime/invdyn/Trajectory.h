// A trajectory of the active coordinates read from a CSV file: a header `time,NAME,...` and one
// row per sample (increasing times). Columns `der(NAME)` and `der(der(NAME))` give velocities and
// accelerations; a coordinate without them is interpolated by a cubic spline with not-a-knot
// ends through its samples, which gives continuous values, velocities and accelerations. Quoted
// names ("a,b") are understood.
#pragma once

#include <string>
#include <vector>

#include "runtime/io/Csv.h"

namespace mbs::rt {

class Trajectory {
 public:
  // Throws std::runtime_error naming the file, the line and the problem.
  explicit Trajectory(const std::string& path);

  const std::vector<std::string>& names() const { return names_; }
  int index(const std::string& name) const;  // -1 when the file has no such coordinate
  double t_first() const { return t_.front(); }
  double t_last() const { return t_.back(); }
  const std::vector<double>& times() const { return t_; }  // the file's sample times
  // Value, velocity and acceleration of coordinate i at t (t_first <= t <= t_last).
  void eval(int i, double t, double& q, double& qd, double& qdd) const;

 private:
  std::string path_;
  std::vector<double> t_;
  std::vector<std::string> names_;
  struct Column {
    std::vector<double> q, qd, qdd;  // qd, qdd empty: spline (second derivatives in m)
    std::vector<double> m;
  };
  std::vector<Column> cols_;
  mutable size_t seg_ = 0;  // the last segment used (samples come in order)
};

}  // namespace mbs::rt
