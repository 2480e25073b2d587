// Reading the CSV files mbs writes and reads (result files, trajectories, logged loads).
#pragma once

#include <string>
#include <vector>

namespace mbs::rt {

// The fields of one CSV line (RFC 4180 quotes; surrounding blanks trimmed, so the padding a
// CsvWriter puts in front of a row is not part of its first field).
std::vector<std::string> split_csv_line(const std::string& line);

}  // namespace mbs::rt
