// The closed-chain modules of the motion reconstruction (seed 003, "per closed-chain module"):
// the selected constraint rows and the coordinates they determine, in block-triangular order. A
// module's rows depend on its own coordinates and on those of modules before it (the tilt loop
// sits on the boom whose angle the lift loop determines), never on later ones, so the modules
// are solved one after the other, each by its own Newton, rank test and failure message.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace mbs::rt {

struct ReconstructionModule {
  std::vector<int32_t> rows;    // positions in the list of selected rows
  std::vector<int32_t> coords;  // the coordinates it determines (columns of G), as many as rows
  std::string name;             // for messages: "the loop(s) closed at 'a', 'b'", ...
};

// The block-triangular decomposition of the rows' structure: a matching of rows to coordinates,
// then the strongly connected components of "row r involves the coordinate matched to row s"
// (Tarjan), in an order in which each module only depends on earlier ones. `columns[i]`: the
// coordinates selected row i depends on; for the name, `row_joint[i]`: the cut joint of a
// closure row (else ""), `row_text[i]`: the equation's text.
std::vector<ReconstructionModule> find_modules(const std::vector<std::vector<int32_t>>& columns,
                                               const std::vector<std::string>& row_joint,
                                               const std::vector<std::string>& row_text,
                                               int32_t n_coords);

}  // namespace mbs::rt
