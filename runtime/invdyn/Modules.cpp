#include "runtime/invdyn/Modules.h"

#include <algorithm>
#include <functional>

namespace mbs::rt {

std::vector<ReconstructionModule> find_modules(const std::vector<std::vector<int32_t>>& columns,
                                               const std::vector<std::string>& row_joint,
                                               const std::vector<std::string>& row_text,
                                               int32_t n_coords) {
  const auto n_rows = static_cast<int32_t>(columns.size());
  // a perfect matching rows -> coordinates (augmenting paths; the selected rows are
  // independent, so one exists structurally)
  std::vector<int32_t> coord_of(static_cast<size_t>(n_rows), -1),
      row_of(static_cast<size_t>(n_coords), -1);
  for (int32_t r = 0; r < n_rows; ++r) {
    std::vector<uint8_t> seen(static_cast<size_t>(n_coords), 0);
    std::function<bool(int32_t)> augment = [&](int32_t row) {
      for (int32_t c : columns[static_cast<size_t>(row)]) {
        if (seen[static_cast<size_t>(c)]) continue;
        seen[static_cast<size_t>(c)] = 1;
        if (row_of[static_cast<size_t>(c)] < 0 || augment(row_of[static_cast<size_t>(c)])) {
          row_of[static_cast<size_t>(c)] = row;
          coord_of[static_cast<size_t>(row)] = c;
          return true;
        }
      }
      return false;
    };
    augment(r);
  }
  // row r depends on row s when r involves the coordinate matched to s; the strongly connected
  // components of that graph are the modules, and Tarjan's algorithm emits a component after
  // every component it depends on: the order in which they can be solved
  std::vector<int32_t> index(static_cast<size_t>(n_rows), -1), low(static_cast<size_t>(n_rows));
  std::vector<uint8_t> on_stack(static_cast<size_t>(n_rows), 0);
  std::vector<int32_t> stack;
  int32_t counter = 0;
  std::vector<ReconstructionModule> modules;
  std::function<void(int32_t)> visit = [&](int32_t r) {
    index[static_cast<size_t>(r)] = low[static_cast<size_t>(r)] = counter++;
    stack.push_back(r);
    on_stack[static_cast<size_t>(r)] = 1;
    for (int32_t c : columns[static_cast<size_t>(r)]) {
      int32_t s = row_of[static_cast<size_t>(c)];
      if (s < 0 || s == r) continue;
      if (index[static_cast<size_t>(s)] < 0) {
        visit(s);
        low[static_cast<size_t>(r)] =
            std::min(low[static_cast<size_t>(r)], low[static_cast<size_t>(s)]);
      } else if (on_stack[static_cast<size_t>(s)]) {
        low[static_cast<size_t>(r)] =
            std::min(low[static_cast<size_t>(r)], index[static_cast<size_t>(s)]);
      }
    }
    if (low[static_cast<size_t>(r)] != index[static_cast<size_t>(r)]) return;
    ReconstructionModule mod;
    int32_t s = -1;
    do {
      s = stack.back();
      stack.pop_back();
      on_stack[static_cast<size_t>(s)] = 0;
      mod.rows.push_back(s);
    } while (s != r);
    std::sort(mod.rows.begin(), mod.rows.end());
    for (int32_t row : mod.rows)
      if (coord_of[static_cast<size_t>(row)] >= 0)
        mod.coords.push_back(coord_of[static_cast<size_t>(row)]);
    std::sort(mod.coords.begin(), mod.coords.end());
    modules.push_back(std::move(mod));
  };
  for (int32_t r = 0; r < n_rows; ++r)
    if (index[static_cast<size_t>(r)] < 0) visit(r);
  // names: the cut joints of the closure rows, else the rows' own texts
  for (auto& mod : modules) {
    std::vector<std::string> joints, others;
    for (int32_t r : mod.rows) {
      const std::string& j = row_joint[static_cast<size_t>(r)];
      const std::string& text = row_text[static_cast<size_t>(r)];
      if (!j.empty()) {
        if (std::find(joints.begin(), joints.end(), j) == joints.end()) joints.push_back(j);
      } else if (std::find(others.begin(), others.end(), text) == others.end()) {
        others.push_back(text);
      }
    }
    std::string name;
    if (!joints.empty()) {
      name = joints.size() == 1 ? "the loop closed at " : "the loops closed at ";
      for (size_t k = 0; k < joints.size(); ++k) name += (k ? ", '" : "'") + joints[k] + "'";
    }
    for (const auto& o : others) name += (name.empty() ? "" : "; ") + o;
    mod.name = name;
  }
  return modules;
}

}  // namespace mbs::rt
