#include "runtime/io/ResultWriter.h"

#include <algorithm>
#include <cctype>
#include <stdexcept>
#include <unordered_map>

#include "runtime/io/CsvWriter.h"
#include "runtime/io/MatWriter.h"
#include "runtime/model/CompiledModel.h"

namespace mbs::rt {

namespace {

// Passes the selected values of each full row on to the file's writer.
class SelectingWriter final : public ResultWriter {
 public:
  SelectingWriter(std::unique_ptr<ResultWriter> inner, std::vector<int32_t> selection, size_t n_all)
      : inner_(std::move(inner)), selection_(std::move(selection)), n_all_(n_all) {
    values_.resize(selection_.size());
  }
  void write_row(double x, std::span<const double> values) override {
    if (values.size() != n_all_) {
      throw std::invalid_argument("ResultWriter::write_row: " + std::to_string(values.size()) +
                                  " values for " + std::to_string(n_all_) + " columns");
    }
    for (size_t i = 0; i < selection_.size(); ++i)
      values_[i] = values[static_cast<size_t>(selection_[i])];
    inner_->write_row(x, values_);
  }
  void flush() override { inner_->flush(); }
  void close() override { inner_->close(); }
  int64_t rows() const override { return inner_->rows(); }
  const std::string& path() const override { return inner_->path(); }
  void set_nan_as_empty(bool on) override { inner_->set_nan_as_empty(on); }

 private:
  std::unique_ptr<ResultWriter> inner_;
  std::vector<int32_t> selection_;
  size_t n_all_;
  std::vector<double> values_;
};

}  // namespace

ResultColumns result_columns(const CompiledModel& m, std::span<const double> v,
                             const std::string& first) {
  ResultColumns r;
  r.first = first;
  r.names = m.output_names;
  const size_t n = r.names.size();
  if (m.output_unit.size() == n) r.units = m.output_unit;
  if (m.output_description.size() == n) r.descriptions = m.output_description;
  // an alias a = +-b shares b's column when b is a column of its own: the slot of every solved
  // unknown (and of der(q)) to its column
  if (m.output_source.size() == n) {
    std::unordered_map<std::string_view, int32_t> column;
    for (size_t c = 0; c < n; ++c)
      if (m.output_source[c].kind == OutputSource::Kind::Unknown)
        column.emplace(r.names[c], static_cast<int32_t>(c));
    std::unordered_map<int32_t, int32_t> slot_column;
    const auto add = [&](int32_t slot, const std::string& name) {
      if (auto it = column.find(name); it != column.end()) slot_column.emplace(slot, it->second);
    };
    for (size_t i = 0; i < m.q.size() && i < m.q_slot.size(); ++i) {
      add(m.q_slot[i], m.q[i].name);
      if (i < m.qd_slot.size()) add(m.qd_slot[i], "der(" + m.q[i].name + ")");
    }
    for (size_t i = 0; i < m.y.size() && i < m.y_slot.size(); ++i) add(m.y_slot[i], m.y[i].name);
    for (size_t i = 0; i < m.z.size() && i < m.z_slot.size(); ++i) add(m.z_slot[i], m.z[i].name);
    // a slot without a column of its own (der(x) when v = der(x) is a column instead) is
    // represented by the first alias of it: the others share that one's column
    std::unordered_map<int32_t, std::pair<int32_t, double>> owner;  // slot -> column, scale
    r.alias_of.assign(n, -1);
    r.alias_sign.assign(n, 1);
    for (size_t c = 0; c < n; ++c) {
      const OutputSource& s = m.output_source[c];
      if (s.kind != OutputSource::Kind::Alias || s.alias_slot < 0) continue;
      if (s.alias_scale != 1.0 && s.alias_scale != -1.0) continue;
      double scale = s.alias_scale;
      int32_t target = -1;
      if (const auto it = slot_column.find(s.alias_slot); it != slot_column.end()) {
        target = it->second;
      } else if (const auto o = owner.find(s.alias_slot); o != owner.end()) {
        target = o->second.first;
        scale *= o->second.second;  // +-1: a = s_a * slot = (s_a * s_owner) * owner
      } else {
        owner.emplace(s.alias_slot, std::make_pair(static_cast<int32_t>(c), s.alias_scale));
        continue;
      }
      if (target == static_cast<int32_t>(c)) continue;
      r.alias_of[c] = target;
      r.alias_sign[c] = scale < 0 ? -1 : 1;
    }
  }
  const size_t np = m.parameters.size();
  r.parameter_names.reserve(np);
  r.parameter_values.reserve(np);
  for (size_t p = 0; p < np; ++p) {
    r.parameter_names.push_back(m.parameters[p].name);
    const int32_t slot = p < m.parameter_slot.size() ? m.parameter_slot[p] : -1;
    r.parameter_values.push_back(
        slot >= 0 && static_cast<size_t>(slot) < v.size() ? v[static_cast<size_t>(slot)] : 0.0);
  }
  if (m.parameter_unit.size() == np) r.parameter_units = m.parameter_unit;
  if (m.parameter_description.size() == np) r.parameter_descriptions = m.parameter_description;
  return r;
}

ResultColumns select_result_columns(const ResultColumns& all, std::span<const int32_t> indices) {
  ResultColumns r;
  r.first = all.first;
  r.parameter_names = all.parameter_names;
  r.parameter_values = all.parameter_values;
  r.parameter_units = all.parameter_units;
  r.parameter_descriptions = all.parameter_descriptions;
  std::unordered_map<int32_t, int32_t> position;  // index in `all` -> index in r
  for (int32_t i : indices) {
    const auto c = static_cast<size_t>(i);
    position.emplace(i, static_cast<int32_t>(r.names.size()));
    r.names.push_back(all.names.at(c));
    if (!all.units.empty()) r.units.push_back(all.units[c]);
    if (!all.descriptions.empty()) r.descriptions.push_back(all.descriptions[c]);
  }
  if (!all.alias_of.empty()) {
    r.alias_of.assign(indices.size(), -1);
    r.alias_sign.assign(indices.size(), 1);
    for (size_t k = 0; k < indices.size(); ++k) {
      const auto c = static_cast<size_t>(indices[k]);
      if (all.alias_of[c] < 0) continue;
      const auto it = position.find(all.alias_of[c]);
      if (it == position.end()) continue;  // its target is not written: values of its own
      r.alias_of[k] = it->second;
      r.alias_sign[k] = all.alias_sign[c];
    }
  }
  return r;
}

bool is_mat_path(const std::string& path) {
  const size_t slash = path.rfind('/');
  const std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  if (base.size() <= 4) return false;
  std::string ext = base.substr(base.size() - 4);
  for (char& ch : ext) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return ext == ".mat";
}

std::unique_ptr<ResultWriter> open_result_writer(const std::string& path,
                                                 const ResultColumns& columns,
                                                 std::span<const int32_t> selection,
                                                 std::chrono::milliseconds flush_interval) {
  const bool select = !selection.empty();
  ResultColumns chosen;
  if (select) chosen = select_result_columns(columns, selection);
  const ResultColumns& written = select ? chosen : columns;
  std::unique_ptr<ResultWriter> w;
  if (is_mat_path(path))
    w = std::make_unique<MatWriter>(path, written, flush_interval);
  else
    w = std::make_unique<CsvWriter>(path, written.names, flush_interval, written.first);
  if (!select) return w;
  return std::make_unique<SelectingWriter>(
      std::move(w), std::vector<int32_t>(selection.begin(), selection.end()), columns.names.size());
}

}  // namespace mbs::rt
