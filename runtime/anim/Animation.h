// The animation of a run (docs/animation.md): the poses of the frames the model's shapes are
// attached to (CompiledModel::shape_frames, outputs of role ShapePose, computed by the outputs
// kernel with every result row), resampled to a display rate with the event instants kept, and
// the writers of the self-contained HTML page (three.js) and of glTF 2.0 (.glb, .gltf).
#pragma once

#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "runtime/io/ResultTable.h"
#include "runtime/model/CompiledModel.h"

namespace mbs::rt {

// A request that cannot be met (an unknown --animate-show name, a model without poses, no
// three.js): the message says why.
class AnimationError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Per frame of the animation: the time, and per shape frame its position and unit quaternion
// (x, y, z, qx, qy, qz, qw: kPoseValues numbers), then the values of the shown variables.
inline constexpr size_t kPoseValues = 7;
struct AnimationTrack {
  std::vector<double> t;
  size_t n_frames = 0;       // shape frames (CompiledModel::shape_frames)
  std::vector<double> pose;  // t.size() x n_frames x kPoseValues
  std::vector<std::string> show_names;
  std::vector<double> show;       // t.size() x show_names.size()
  std::string abscissa = "time";  // what t is: "time" [s], or "load" (the static load steps)
  size_t size() const { return t.size(); }
};

// The unit quaternion (qx, qy, qz, qw) of the rotation matrix R (row-major).
std::array<double, 4> quaternion_of(const double* R);

// Collects the rows of a run (the observer's time and output values) into an AnimationTrack:
// frames every 1/fps of simulated time from the first row, linearly interpolated between rows
// (positions; quaternions normalised), plus both rows of every event (two rows at one instant)
// and the last row.
class AnimationRecorder {
 public:
  // Throws AnimationError for a model compiled without the animation's outputs or a name of
  // `show` that is not an output. fps = 0: every row is a frame (no resampling).
  AnimationRecorder(const CompiledModel& model, const std::vector<std::string>& show, double fps);
  void add_row(double t, std::span<const double> outputs);
  // The track (call once, after the last row).
  AnimationTrack finish();

 private:
  void emit(double t, const std::vector<double>& values);
  void compact(std::span<const double> outputs, std::vector<double>& out) const;
  const CompiledModel& m_;
  std::vector<int32_t> show_column_;
  double dt_;
  AnimationTrack track_;
  bool have_prev_ = false;
  double t0_ = 0, prev_t_ = 0;
  long next_k_ = 0;
  bool prev_emitted_ = false;
  std::vector<double> prev_, cur_, mix_;
};

// The scene's file formats, by the file's extension: .html, .glb, .gltf; throws AnimationError
// for any other.
enum class AnimationFormat { Html, Glb, Gltf };
AnimationFormat animation_format(const std::string& path);

// Writes the animation to `path` (through AtomicFile) in the format of its extension. Throws
// AnimationError or std::runtime_error (the file).
void write_animation(const std::string& path, const CompiledModel& model,
                     const AnimationTrack& track, const std::string& title);

// Checks before a run that an animation can be written to `path`: its extension names a format,
// and three.js is installed for .html. Throws AnimationError saying what is missing.
void check_animation_target(const std::string& path);

// The three.js files the HTML page embeds: $MBS_THREE_DIR, else Debian's libjs-three
// (/usr/share/javascript/three); "" when three.min.js is not there.
std::string three_js_dir();

// The writers (Html.cpp, Gltf.cpp) as text or bytes.
std::string animation_html(const CompiledModel& model, const AnimationTrack& track,
                           const std::string& title);
std::string animation_gltf(const CompiledModel& model, const AnimationTrack& track, bool binary);

// A shape's placement in its frame at one instant: the position of its reference point, the
// unit quaternion of its axes (length, width, height directions) and its scale (length, width,
// height). For a shape that stretches, `frame_pose` and `b_pose` (x, y, z, qx, qy, qz, qw of
// its frame and of frame_b; null for the world) give its length and direction.
struct ShapePlacement {
  std::array<double, 3> position, scale;
  std::array<double, 4> rotation;
};
ShapePlacement place_shape(const Shape& s, const double* frame_pose, const double* b_pose);

std::string base64(std::string_view bytes);

// The track of a result file written earlier (its first column the time or the load), its
// poses computed by the outputs kernel of `m` (compiled with the animation's outputs) from the
// coordinates of each row, its shown values the file's. Throws AnimationError naming the
// columns the file lacks (the model's coordinates), a model that integrates rotations as a Lie
// group (the file lacks the charts), or a pose that is not finite.
AnimationTrack replay_result(const CompiledModel& m, const ResultTable& table,
                             const std::vector<std::string>& show, double fps);

}  // namespace mbs::rt
