// `mbsc animate RESULT.csv --model FILE.mbs` (docs/animation.md, "From a result file"): the poses
// of a result file written earlier, computed by the model's outputs kernel from the coordinates
// the file holds.
#include <fmt/format.h>

#include <cmath>

#include "runtime/anim/Animation.h"

namespace mbs::rt {

AnimationTrack replay_result(const CompiledModel& m, const ResultTable& table,
                             const std::vector<std::string>& show, double fps) {
  if (m.shape_frame_column.size() != m.shape_frames.size() || !m.outputs.fn)
    throw AnimationError("the model was compiled without the animation's outputs");
  if (!m.rotation_charts.empty())
    throw AnimationError(
        "the model integrates rotations as a Lie group: a result file lacks the reference "
        "quaternions of their charts; animate the run itself (--simulate --animate)");
  // the coordinates the poses are functions of, from the file's columns of the same names
  std::vector<std::pair<int32_t, int32_t>> slot_column;  // (slot in v, column of the table)
  std::vector<std::string> missing;
  auto take = [&](const std::vector<Unknown>& names, const std::vector<int32_t>& slots) {
    for (size_t i = 0; i < names.size(); ++i) {
      const int32_t c = table.column(names[i].name);
      if (c <= 0)
        missing.push_back(names[i].name);
      else
        slot_column.emplace_back(slots[i], c);
    }
  };
  take(m.q, m.q_slot);
  take(m.y, m.y_slot);
  if (!missing.empty()) {
    std::string list;
    for (size_t i = 0; i < missing.size() && i < 8; ++i) list += (i ? ", " : "") + missing[i];
    if (missing.size() > 8) list += fmt::format(" and {} more", missing.size() - 8);
    throw AnimationError(fmt::format(
        "the result file lacks {} column{} the poses need (the model's coordinates): {}; was it "
        "written by this model?",
        missing.size(), missing.size() == 1 ? "" : "s", list));
  }
  // the file's values of every output it has (the shown variables among them)
  std::vector<std::pair<size_t, int32_t>> output_column;
  for (size_t i = 0; i < m.output_names.size(); ++i) {
    if (!m.output_role.empty() && m.output_role[i] == OutputRole::ShapePose) continue;
    const int32_t c = table.column(m.output_names[i]);
    if (c > 0) output_column.emplace_back(i, c);
  }
  for (const std::string& name : show)
    if (table.column(name) <= 0)
      throw AnimationError("--animate-show " + name +
                           ": the result file has no column of that name");
  AnimationRecorder recorder(m, show, fps);
  std::vector<double> v(m.v0), out(m.output_names.size());
  for (int64_t r = 0; r < table.rows(); ++r) {
    const double t = table.at(r, 0);
    v = m.v0;
    if (m.slot_time >= 0) v[static_cast<size_t>(m.slot_time)] = t;
    for (auto [slot, c] : slot_column) v[static_cast<size_t>(slot)] = table.at(r, c);
    m.outputs(v.data(), out.data());  // outputs that read other unknowns may be off: unused
    for (size_t f = 0; f < m.shape_frames.size(); ++f)
      for (int k = 0; k < kPoseColumns; ++k)
        if (!std::isfinite(out[static_cast<size_t>(m.shape_frame_column[f] + k)]))
          throw AnimationError(
              fmt::format("the pose of frame {} is not finite at {} = {} of the result file",
                          m.shape_frames[f], table.first(), t));
    for (auto [i, c] : output_column) out[i] = table.at(r, c);
    recorder.add_row(t, out);
  }
  AnimationTrack track = recorder.finish();
  track.abscissa = table.first() == "load" ? "load" : "time";
  return track;
}

}  // namespace mbs::rt
