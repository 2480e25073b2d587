#include "runtime/anim/Animation.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <unordered_map>

#include "runtime/io/AtomicFile.h"

namespace mbs::rt {

std::array<double, 4> quaternion_of(const double* R) {
  // Shepperd's method: from the largest of the trace and the diagonal entries
  const double m00 = R[0], m11 = R[4], m22 = R[8], tr = m00 + m11 + m22;
  std::array<double, 4> q{};  // x, y, z, w
  if (tr >= m00 && tr >= m11 && tr >= m22) {
    const double s = 2 * std::sqrt(std::max(0.0, 1 + tr));
    q = {(R[7] - R[5]) / s, (R[2] - R[6]) / s, (R[3] - R[1]) / s, s / 4};
  } else if (m00 >= m11 && m00 >= m22) {
    const double s = 2 * std::sqrt(std::max(0.0, 1 + m00 - m11 - m22));
    q = {s / 4, (R[1] + R[3]) / s, (R[2] + R[6]) / s, (R[7] - R[5]) / s};
  } else if (m11 >= m22) {
    const double s = 2 * std::sqrt(std::max(0.0, 1 + m11 - m00 - m22));
    q = {(R[1] + R[3]) / s, s / 4, (R[5] + R[7]) / s, (R[2] - R[6]) / s};
  } else {
    const double s = 2 * std::sqrt(std::max(0.0, 1 + m22 - m00 - m11));
    q = {(R[2] + R[6]) / s, (R[5] + R[7]) / s, s / 4, (R[3] - R[1]) / s};
  }
  const double n = std::sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]);
  for (double& x : q) x /= n;
  return q;
}

namespace {

using V3 = std::array<double, 3>;

// v rotated by the unit quaternion q (x, y, z, w), or by its inverse
V3 rotate(const double* q, const V3& v, bool inverse) {
  const double s = inverse ? -1 : 1;
  const double x = s * q[0], y = s * q[1], z = s * q[2], w = q[3];
  // t = 2 q_v x v; v' = v + w t + q_v x t
  const V3 t{2 * (y * v[2] - z * v[1]), 2 * (z * v[0] - x * v[2]), 2 * (x * v[1] - y * v[0])};
  return {v[0] + w * t[0] + (y * t[2] - z * t[1]), v[1] + w * t[1] + (z * t[0] - x * t[2]),
          v[2] + w * t[2] + (x * t[1] - y * t[0])};
}

double norm(const V3& v) {
  return std::sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
}

}  // namespace

ShapePlacement place_shape(const Shape& s, const double* frame_pose, const double* b_pose) {
  ShapePlacement p;
  p.position = s.r_shape;
  V3 ex = s.length_direction;
  double length = s.length;
  if (s.stretch) {
    const V3 pa = frame_pose ? V3{frame_pose[0], frame_pose[1], frame_pose[2]} : V3{0, 0, 0};
    const V3 pb = b_pose ? V3{b_pose[0], b_pose[1], b_pose[2]} : V3{0, 0, 0};
    V3 d{pb[0] - pa[0], pb[1] - pa[1], pb[2] - pa[2]};
    if (frame_pose) d = rotate(frame_pose + 3, d, true);
    for (int i = 0; i < 3; ++i) d[static_cast<size_t>(i)] -= s.r_shape[static_cast<size_t>(i)];
    length = norm(d);
    if (length > 1e-12) ex = d;
  }
  const double n = norm(ex);
  ex = n > 1e-15 ? V3{ex[0] / n, ex[1] / n, ex[2] / n} : V3{1, 0, 0};
  // the width direction made orthogonal to the length direction (the MSL's from_nxy)
  auto orth = [&](const V3& w) {
    const double d = w[0] * ex[0] + w[1] * ex[1] + w[2] * ex[2];
    return V3{w[0] - d * ex[0], w[1] - d * ex[1], w[2] - d * ex[2]};
  };
  V3 ey = orth(s.width_direction);
  if (norm(ey) < 1e-6) ey = orth(std::abs(ex[0]) > 1e-6 ? V3{0, 1, 0} : V3{1, 0, 0});
  const double ny = norm(ey);
  ey = {ey[0] / ny, ey[1] / ny, ey[2] / ny};
  const V3 ez{ex[1] * ey[2] - ex[2] * ey[1], ex[2] * ey[0] - ex[0] * ey[2],
              ex[0] * ey[1] - ex[1] * ey[0]};
  const double B[9] = {ex[0], ey[0], ez[0], ex[1], ey[1], ez[1], ex[2], ey[2], ez[2]};
  p.rotation = quaternion_of(B);
  p.scale = {std::max(length, 1e-9), std::max(s.width, 1e-9), std::max(s.height, 1e-9)};
  return p;
}

// ---- recorder

AnimationRecorder::AnimationRecorder(const CompiledModel& model,
                                     const std::vector<std::string>& show, double fps)
    : m_(model), dt_(fps == 0 ? 0 : 1.0 / fps) {
  if (!(fps >= 0) || !std::isfinite(fps))
    throw AnimationError(fmt::format("--animate-fps must be a positive number, not {}", fps));
  if (model.shape_frame_column.size() != model.shape_frames.size())
    throw AnimationError("the model was compiled without the animation's outputs");
  track_.n_frames = model.shape_frames.size();
  std::unordered_map<std::string_view, int32_t> column;
  for (size_t i = 0; i < model.output_names.size(); ++i)
    column.emplace(model.output_names[i], static_cast<int32_t>(i));
  for (const std::string& name : show) {
    auto it = column.find(name);
    if (it == column.end())
      throw AnimationError("--animate-show " + name + ": the model has no variable of that name");
    show_column_.push_back(it->second);
    track_.show_names.push_back(name);
  }
}

void AnimationRecorder::compact(std::span<const double> outputs, std::vector<double>& out) const {
  out.resize(track_.n_frames * kPoseValues + show_column_.size());
  for (size_t f = 0; f < track_.n_frames; ++f) {
    const double* o = outputs.data() + m_.shape_frame_column[f];
    double* p = out.data() + f * kPoseValues;
    p[0] = o[0];
    p[1] = o[1];
    p[2] = o[2];
    std::array<double, 4> q = quaternion_of(o + 3);
    // the sign nearest the previous row's, so that interpolation takes the short way
    if (have_prev_) {
      const double* pq = prev_.data() + f * kPoseValues + 3;
      if (pq[0] * q[0] + pq[1] * q[1] + pq[2] * q[2] + pq[3] * q[3] < 0)
        for (double& x : q) x = -x;
    }
    std::copy(q.begin(), q.end(), p + 3);
  }
  for (size_t k = 0; k < show_column_.size(); ++k)
    out[track_.n_frames * kPoseValues + k] = outputs[static_cast<size_t>(show_column_[k])];
}

void AnimationRecorder::emit(double t, const std::vector<double>& values) {
  track_.t.push_back(t);
  const size_t np = track_.n_frames * kPoseValues;
  track_.pose.insert(track_.pose.end(), values.begin(), values.begin() + static_cast<long>(np));
  track_.show.insert(track_.show.end(), values.begin() + static_cast<long>(np), values.end());
}

void AnimationRecorder::add_row(double t, std::span<const double> outputs) {
  compact(outputs, cur_);
  if (!have_prev_) {
    have_prev_ = true;
    t0_ = t;
    emit(t, cur_);
    prev_emitted_ = true;
    next_k_ = 1;
  } else if (t == prev_t_) {
    // an event: the rows before and after it are both frames
    if (!prev_emitted_) emit(prev_t_, prev_);
    emit(t, cur_);
    prev_emitted_ = true;
  } else if (dt_ == 0) {  // every row
    emit(t, cur_);
    prev_emitted_ = true;
  } else {
    prev_emitted_ = false;
    for (double tk = t0_ + static_cast<double>(next_k_) * dt_; tk <= t;
         tk = t0_ + static_cast<double>(++next_k_) * dt_) {
      if (tk <= prev_t_) continue;
      const double a = (tk - prev_t_) / (t - prev_t_);
      mix_.resize(cur_.size());
      for (size_t i = 0; i < cur_.size(); ++i) mix_[i] = (1 - a) * prev_[i] + a * cur_[i];
      for (size_t f = 0; f < track_.n_frames; ++f) {
        double* q = mix_.data() + f * kPoseValues + 3;
        const double n = std::sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]);
        for (int i = 0; i < 4; ++i) q[i] /= n;
      }
      emit(tk, mix_);
      if (tk == t) prev_emitted_ = true;
    }
  }
  prev_t_ = t;
  prev_.swap(cur_);
}

AnimationTrack AnimationRecorder::finish() {
  if (have_prev_ && !prev_emitted_) emit(prev_t_, prev_);
  prev_emitted_ = true;
  return std::move(track_);
}

// ---- files

AnimationFormat animation_format(const std::string& path) {
  std::string ext = std::filesystem::path(path).extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (ext == ".html" || ext == ".htm") return AnimationFormat::Html;
  if (ext == ".glb") return AnimationFormat::Glb;
  if (ext == ".gltf") return AnimationFormat::Gltf;
  throw AnimationError("--animate " + path +
                       ": the file's extension says the format: .html (a page for any browser), "
                       ".glb or .gltf (glTF 2.0)");
}

std::string three_js_dir() {
  const char* env = std::getenv("MBS_THREE_DIR");
  std::string dir = env != nullptr && *env != '\0' ? env : "/usr/share/javascript/three";
  std::error_code ec;
  if (!std::filesystem::is_regular_file(dir + "/three.min.js", ec)) return "";
  return dir;
}

void check_animation_target(const std::string& path) {
  if (animation_format(path) == AnimationFormat::Html && three_js_dir().empty())
    throw AnimationError(path +
                         ": an HTML animation embeds three.js, which is not installed (Debian's "
                         "libjs-three: /usr/share/javascript/three/three.min.js; or set "
                         "MBS_THREE_DIR)");
}

void write_animation(const std::string& path, const CompiledModel& model,
                     const AnimationTrack& track, const std::string& title) {
  const AnimationFormat f = animation_format(path);
  const std::string bytes = f == AnimationFormat::Html
                                ? animation_html(model, track, title)
                                : animation_gltf(model, track, f == AnimationFormat::Glb);
  write_file_atomically(path, bytes);
}

std::string base64(std::string_view bytes) {
  static const char* k = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  size_t i = 0;
  auto b = [&](size_t j) { return static_cast<uint32_t>(static_cast<unsigned char>(bytes[j])); };
  for (; i + 2 < bytes.size(); i += 3) {
    const uint32_t v = (b(i) << 16) | (b(i + 1) << 8) | b(i + 2);
    out += k[(v >> 18) & 63];
    out += k[(v >> 12) & 63];
    out += k[(v >> 6) & 63];
    out += k[v & 63];
  }
  if (i + 1 == bytes.size()) {
    const uint32_t v = b(i) << 16;
    out += k[(v >> 18) & 63];
    out += k[(v >> 12) & 63];
    out += "==";
  } else if (i + 2 == bytes.size()) {
    const uint32_t v = (b(i) << 16) | (b(i + 1) << 8);
    out += k[(v >> 18) & 63];
    out += k[(v >> 12) & 63];
    out += k[(v >> 6) & 63];
    out += '=';
  }
  return out;
}

}  // namespace mbs::rt
