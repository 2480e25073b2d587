// Matrix Market coordinate files (https://math.nist.gov/MatrixMarket/formats.html) for the
// linearised system matrices: "%%MatrixMarket matrix coordinate real general", optional comment
// lines, "rows cols nnz", then one "i j value" line per nonzero entry (1-based, column-major
// order). Values are printed in the shortest form that reads back to the same double
// (std::to_chars), so a file is an exact record of the matrix.
#pragma once

#include <Eigen/Core>
#include <string>

namespace mbs::rt {

// Writes the nonzero entries of `a` to `path` (truncating it); every line of `comment` becomes a
// "%" comment line after the header. Throws std::runtime_error naming the path on failure.
void write_matrix_market(const std::string& path, const Eigen::MatrixXd& a,
                         const std::string& comment = "");

// Reads a "matrix coordinate real general" file into a dense matrix (entries not listed are 0;
// duplicate entries are summed, as the format specifies). Throws std::runtime_error naming the
// path and line on a malformed file.
Eigen::MatrixXd read_matrix_market(const std::string& path);

}  // namespace mbs::rt
