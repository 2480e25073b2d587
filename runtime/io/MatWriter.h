// Result files in the MATLAB v4 format that OpenModelica and Dymola write (`Aclass` version 1.1,
// "binTrans"), which OMEdit, Dymola and their Python readers (DyMat, ModelicaRes,
// scipy.io.loadmat) open. Six matrices, in this order, each a MATLAB v4 header (five int32:
// type code M*1000 + P*10 + T with M = 0 little-endian, P = 0 double, 2 int32, 5 uint8 and T = 1
// for text; rows; columns; 0 (real); length of the name with its NUL) then the name and the data,
// column by column:
//   Aclass       text 4 x 11: "Atrajectory", "1.1", "", "binTrans"
//   name         text L x n: one name per column, NUL-padded (the independent variable first)
//   description  text L x n: the declaration's description, then " [unit]" when it has a unit
//   dataInfo     int32 4 x n: per name [matrix (0: the abscissa, 1: data_1, 2: data_2), signed
//                1-based row in that matrix (negative: the alias has the opposite sign),
//                interpolation 0 (linear), extrapolation (-1: not defined outside the time
//                range, 0: constant)]
//   data_1       double n1 x 2: the parameters, their value at the start and at the end; its
//                first row is the time range [first time, last time]
//   data_2       double n2 x rows: one column per output point, the time in its first row; an
//                alias a = +-b has no row of its own (its dataInfo points at b's row)
//
// Written as the run goes, like the CSV: rows are buffered and appended to data_2 with one write
// when the buffer fills up, when flush_interval has passed, and on close; after each such write
// the row count in data_2's header and the time range in data_1 are updated in place. A run that
// is killed therefore leaves a file whose header counts the rows of the last completed flush
// (data_1's time range may end one flush earlier: it is updated after the count). If
// the kill lands between a flush's write and its header update (two system calls), the file
// also holds up to one buffer of rows after the counted ones, which readers that stop at data_2
// ignore but scipy.io.loadmat refuses as a malformed next matrix (docs/cli.md, "Result files"). A
// device or FIFO (AtomicFile.h) cannot be updated in place: the file is written to a temporary file
// and copied there on close.
#pragma once

#include <chrono>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "runtime/io/AtomicFile.h"
#include "runtime/io/ResultWriter.h"

namespace mbs::rt {

class MatWriter final : public ResultWriter {
 public:
  // Opens (truncates) `path` and writes every matrix before data_2 and data_2's header. Throws
  // std::runtime_error naming the path.
  MatWriter(const std::string& path, const ResultColumns& columns,
            std::chrono::milliseconds flush_interval = std::chrono::milliseconds(100));
  ~MatWriter() override;  // close()s; errors at that point are lost, call close() to see them
  MatWriter(const MatWriter&) = delete;
  MatWriter& operator=(const MatWriter&) = delete;

  void write_row(double x, std::span<const double> values) override;
  void flush() override;
  void close() override;
  int64_t rows() const override { return rows_; }
  const std::string& path() const override { return path_; }

 private:
  std::string path_;
  OutputTarget target_;
  std::string temporary_;  // written here and copied on close (a device or FIFO), else ""
  int fd_ = -1;
  size_t n_columns_ = 0;
  std::vector<int32_t> row_of_;  // per column: its row in data_2 (0-based, time is 0), -1: alias
  size_t n_rows2_ = 1;           // rows of data_2 (time included)
  std::vector<double> buffer_;   // whole output points, n_rows2_ values each
  size_t used_ = 0;
  int64_t rows_ = 0, rows_in_file_ = 0;
  double first_x_ = 0, last_x_ = 0;
  int64_t data1_offset_ = 0, data1_rows_ = 1, data2_header_ = 0, end_ = 0;
  std::chrono::steady_clock::duration flush_interval_;
  std::chrono::steady_clock::time_point last_write_;
};

}  // namespace mbs::rt
