// The self-contained HTML page of an animation (docs/animation.md, "The HTML page"): three.js
// and its OrbitControls from the installation (three_js_dir) embedded as scripts, the shape table
// as JSON, the trajectory as base64 Float32 arrays, and a small player.
#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>

#include "runtime/anim/Animation.h"

namespace mbs::rt {
namespace {

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// text inside <script>: "</script" would end it early
std::string script_safe(std::string s) {
  for (size_t at = s.find("</script"); at != std::string::npos; at = s.find("</script", at + 2))
    s.replace(at, 2, "<\\/");
  return s;
}

std::string json_string(std::string_view s) {
  std::string o = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      o += '\\';
      o += c;
    } else if (c == '<') {
      o += "\\u003c";
    } else if (static_cast<unsigned char>(c) < 0x20) {
      o += fmt::format("\\u{:04x}", static_cast<int>(c));
    } else {
      o += c;
    }
  }
  return o + "\"";
}

std::string num(double x) {
  return std::isfinite(x) ? fmt::format("{}", x) : "0";
}

std::string floats_base64(const std::vector<double>& v) {
  std::string bytes(v.size() * 4, '\0');
  for (size_t i = 0; i < v.size(); ++i) {
    const auto f = static_cast<float>(v[i]);
    std::memcpy(bytes.data() + 4 * i, &f, 4);
  }
  return base64(bytes);
}

std::string doubles_base64(const std::vector<double>& v) {
  std::string bytes(v.size() * 8, '\0');
  if (!v.empty()) std::memcpy(bytes.data(), v.data(), bytes.size());
  return base64(bytes);
}

const char* kPlayer = R"JS(
(function () {
  'use strict';
  function f32(b64) { var s = atob(b64), a = new Uint8Array(s.length);
    for (var i = 0; i < s.length; ++i) a[i] = s.charCodeAt(i); return new Float32Array(a.buffer); }
  function f64(b64) { var s = atob(b64), a = new Uint8Array(s.length);
    for (var i = 0; i < s.length; ++i) a[i] = s.charCodeAt(i); return new Float64Array(a.buffer); }
  var D = MBS_ANIMATION, T = f64(D.t), P = f32(D.pose), S = f32(D.show);
  var nF = D.frames.length, nS = D.show_names.length, nT = T.length;
  var renderer = new THREE.WebGLRenderer({antialias: true});
  renderer.setPixelRatio(window.devicePixelRatio);
  document.getElementById('view').appendChild(renderer.domElement);
  var scene = new THREE.Scene();
  scene.background = new THREE.Color(0xf4f4f4);
  scene.add(new THREE.HemisphereLight(0xffffff, 0x888888, 0.75));
  var sun = new THREE.DirectionalLight(0xffffff, 0.55); sun.position.set(3, 5, 4); scene.add(sun);
  var camera = new THREE.PerspectiveCamera(40, 1, 0.001, 1e5);
  var controls = new THREE.OrbitControls(camera, renderer.domElement);
  // unit shapes: along +x from 0 to 1, width along y and height along z of 1
  function unit(g) { g.translate(0.5, 0, 0); return g; }
  function along_x(g) { g.rotateZ(-Math.PI / 2); return unit(g); }
  var geo = {
    box: unit(new THREE.BoxBufferGeometry(1, 1, 1)),
    cylinder: along_x(new THREE.CylinderBufferGeometry(0.5, 0.5, 1, 32)),
    sphere: unit(new THREE.SphereBufferGeometry(0.5, 32, 16)),
    cone: along_x(new THREE.CylinderBufferGeometry(0, 0.5, 1, 32))
  };
  function spring(windings, wire) {
    var n = Math.max(1, windings), r = Math.max(0.05, 0.5 - wire);
    var Helix = function () { THREE.Curve.call(this); };
    Helix.prototype = Object.create(THREE.Curve.prototype);
    Helix.prototype.getPoint = function (u) { var a = 2 * Math.PI * n * u;
      return new THREE.Vector3(u, r * Math.cos(a), r * Math.sin(a)); };
    return new THREE.TubeBufferGeometry(new Helix(), Math.ceil(24 * n), Math.max(wire, 0.01), 8, false);
  }
  var frames = [], world = new THREE.Group(), elements = {}, stretch = [];
  scene.add(world);
  for (var f = 0; f < nF; ++f) { var g = new THREE.Group(); g.matrixAutoUpdate = true; scene.add(g); frames.push(g); }
  var V = THREE.Vector3, Q = THREE.Quaternion;
  function basis(ldir, wdir) {
    var ex = new V(ldir[0], ldir[1], ldir[2]).normalize(), w = new V(wdir[0], wdir[1], wdir[2]);
    var ey = w.clone().sub(ex.clone().multiplyScalar(w.dot(ex)));
    if (ey.length() < 1e-6) { w = Math.abs(ex.x) > 1e-6 ? new V(0, 1, 0) : new V(1, 0, 0);
      ey = w.clone().sub(ex.clone().multiplyScalar(w.dot(ex))); }
    ey.normalize(); var ez = new V().crossVectors(ex, ey);
    return new Q().setFromRotationMatrix(new THREE.Matrix4().makeBasis(ex, ey, ez));
  }
  D.shapes.forEach(function (s) {
    var g;
    if (s.type === 'spring') g = spring(s.extra, s.height / 2 / Math.max(s.width, 1e-9));
    else if (s.type === 'pipe') g = geo.cylinder;
    else g = geo[s.type];
    var c = s.color, col = new THREE.Color(c[0] / 255, c[1] / 255, c[2] / 255);
    var mat = new THREE.MeshPhongMaterial({color: col, specular: new THREE.Color(s.specular, s.specular, s.specular).multiplyScalar(0.5), shininess: 20});
    var mesh = new THREE.Mesh(g, mat);
    mesh.position.set(s.r_shape[0], s.r_shape[1], s.r_shape[2]);
    mesh.quaternion.copy(basis(s.length_direction, s.width_direction));
    mesh.scale.set(Math.max(s.length, 1e-9), Math.max(s.width, 1e-9), Math.max(s.height, 1e-9));
    (s.frame < 0 ? world : frames[s.frame]).add(mesh);
    if (s.stretch) stretch.push({s: s, mesh: mesh});
    (elements[s.element] = elements[s.element] || []).push(mesh);
  });
  var k = 0, playing = true, tSim = T[0], last = null, tmp = new V(), tq = new Q();
  function pose(i) {
    for (var f = 0; f < nF; ++f) { var o = (i * nF + f) * 7;
      frames[f].position.set(P[o], P[o + 1], P[o + 2]);
      frames[f].quaternion.set(P[o + 3], P[o + 4], P[o + 5], P[o + 6]); }
    stretch.forEach(function (x) { var s = x.s;
      var pa = s.frame < 0 ? new V() : frames[s.frame].position.clone();
      var pb = s.frame_b < 0 ? new V() : frames[s.frame_b].position.clone();
      var d = pb.sub(pa);
      if (s.frame >= 0) d.applyQuaternion(tq.copy(frames[s.frame].quaternion).inverse());
      d.sub(new V(s.r_shape[0], s.r_shape[1], s.r_shape[2]));
      var L = d.length();
      x.mesh.quaternion.copy(basis(L > 1e-12 ? [d.x, d.y, d.z] : s.length_direction, s.width_direction));
      x.mesh.scale.x = Math.max(L, 1e-9); });
    document.getElementById('time').textContent = D.abscissa === 'load' ?
      'load = ' + T[i].toFixed(3) : 't = ' + T[i].toFixed(3) + ' s';
    document.getElementById('slider').value = i;
    var rows = '';
    for (var j = 0; j < nS; ++j) rows += '<tr><td>' + D.show_names[j] + '</td><td>' + S[i * nS + j].toPrecision(6) + '</td></tr>';
    document.getElementById('values').innerHTML = rows;
  }
  function find(t) { var lo = 0, hi = nT - 1;
    while (lo < hi) { var mid = (lo + hi + 1) >> 1; if (T[mid] <= t) lo = mid; else hi = mid - 1; } return lo; }
  function fit() {
    var box = new THREE.Box3();
    scene.updateMatrixWorld(true);
    for (var i = 0; i < nT; i += Math.max(1, Math.floor(nT / 50))) { pose(i); scene.updateMatrixWorld(true); box.expandByObject(scene); }
    pose(k); if (box.isEmpty()) box.set(new V(-1, -1, -1), new V(1, 1, 1));
    var c = box.getCenter(new V()), r = Math.max(box.getSize(new V()).length() / 2, 1e-3);
    controls.target.copy(c);
    camera.position.copy(c).add(new V(0.3, 0.4, 1).normalize().multiplyScalar(r * 2.6));
    camera.near = r / 100; camera.far = r * 100; camera.updateProjectionMatrix(); controls.update();
  }
  var slider = document.getElementById('slider'); slider.max = nT - 1;
  slider.oninput = function () { k = +slider.value; tSim = T[k]; pose(k); };
  var play = document.getElementById('play');
  play.onclick = function () { playing = !playing; play.textContent = playing ? 'pause' : 'play';
    if (playing && k >= nT - 1) { k = 0; tSim = T[0]; } last = null; };
  document.getElementById('fit').onclick = fit;
  var list = document.getElementById('bodies');
  Object.keys(elements).forEach(function (name) {
    var l = document.createElement('label'), cb = document.createElement('input');
    cb.type = 'checkbox'; cb.checked = true;
    cb.onchange = function () { elements[name].forEach(function (m) { m.visible = cb.checked; }); };
    l.appendChild(cb); l.appendChild(document.createTextNode(' ' + name)); list.appendChild(l);
  });
  function resize() { var v = document.getElementById('view');
    renderer.setSize(v.clientWidth, v.clientHeight); camera.aspect = v.clientWidth / Math.max(1, v.clientHeight); camera.updateProjectionMatrix(); }
  window.addEventListener('resize', resize); resize(); pose(0); fit();
  function tick(now) {
    if (playing && nT > 1) {
      if (last !== null) tSim += (now - last) / 1000 * +document.getElementById('speed').value;
      last = now;
      if (tSim > T[nT - 1]) { if (document.getElementById('loop').checked) tSim = T[0];
        else { tSim = T[nT - 1]; playing = false; play.textContent = 'play'; } }
      var i = find(tSim); if (i !== k) { k = i; pose(k); }
    } else last = null;
    controls.update(); renderer.render(scene, camera); requestAnimationFrame(tick);
  }
  requestAnimationFrame(tick);
  // for tests and the console: show frame i, the scene, the meshes of every element
  window.mbsPlayer = {pose: pose, scene: scene, elements: elements, frames: frames, count: nT};
})();
)JS";

}  // namespace

std::string animation_html(const CompiledModel& model, const AnimationTrack& track,
                           const std::string& title) {
  const std::string dir = three_js_dir();
  if (dir.empty())
    throw AnimationError(
        "an HTML animation embeds three.js, which is not installed: install Debian's libjs-three "
        "(/usr/share/javascript/three/three.min.js) or point MBS_THREE_DIR at a directory with "
        "three.min.js and examples/js/controls/OrbitControls.js");
  const std::string three = read_all(dir + "/three.min.js");
  const std::string orbit = read_all(dir + "/examples/js/controls/OrbitControls.js");
  if (three.empty() || orbit.empty())
    throw AnimationError("cannot read three.min.js and examples/js/controls/OrbitControls.js in " +
                         dir);
  std::string data = "{\"title\":" + json_string(title) + ",\"frames\":[";
  for (size_t i = 0; i < model.shape_frames.size(); ++i)
    data += (i ? "," : "") + json_string(model.shape_frames[i]);
  data += "],\"shapes\":[";
  auto v3 = [](const std::array<double, 3>& v) {
    return "[" + num(v[0]) + "," + num(v[1]) + "," + num(v[2]) + "]";
  };
  for (size_t i = 0; i < model.shapes.size(); ++i) {
    const Shape& s = model.shapes[i];
    data += fmt::format(
        "{}{{\"element\":{},\"part\":{},\"type\":\"{}\",\"frame\":{},\"stretch\":{},"
        "\"frame_b\":{},\"r_shape\":{},\"length_direction\":{},\"width_direction\":{},"
        "\"length\":{},\"width\":{},\"height\":{},\"extra\":{},\"color\":{},\"specular\":{}}}",
        i ? "," : "", json_string(s.element), json_string(s.part), shape_type_name(s.type), s.frame,
        s.stretch ? "true" : "false", s.frame_b, v3(s.r_shape), v3(s.length_direction),
        v3(s.width_direction), num(s.length), num(s.width), num(s.height), num(s.extra),
        v3(s.color), num(s.specular));
  }
  data += "],\"show_names\":[";
  for (size_t i = 0; i < track.show_names.size(); ++i)
    data += (i ? "," : "") + json_string(track.show_names[i]);
  data += "],\"abscissa\":" + json_string(track.abscissa);
  data +=
      fmt::format(",\"n_t\":{},\"t\":\"{}\",\"pose\":\"{}\",\"show\":\"{}\"}}", track.size(),
                  doubles_base64(track.t), floats_base64(track.pose), floats_base64(track.show));
  std::string html;
  html.reserve(three.size() + orbit.size() + data.size() + 8192);
  html += "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>";
  for (char c : title)
    html += c == '<' ? std::string("&lt;") : c == '&' ? "&amp;" : std::string(1, c);
  html += R"(</title>
<meta name="generator" content="mbsc --animate">
<style>
html,body{margin:0;height:100%;font:13px sans-serif}
#view{position:absolute;left:0;top:0;right:220px;bottom:44px}
#side{position:absolute;top:0;right:0;width:212px;bottom:44px;overflow:auto;padding:4px;border-left:1px solid #ccc}
#side label{display:block;white-space:nowrap}
#bar{position:absolute;left:0;right:0;bottom:0;height:44px;display:flex;gap:8px;align-items:center;padding:0 8px;border-top:1px solid #ccc}
#slider{flex:1}
td{padding:0 4px}
</style>
</head>
<body>
<div id="view"></div>
<div id="side"><b>shown</b><div id="bodies"></div><table id="values"></table></div>
<div id="bar"><button id="play">pause</button>
<select id="speed"><option value="0.1">0.1x</option><option value="0.25">0.25x</option><option value="0.5">0.5x</option><option value="1" selected>1x</option><option value="2">2x</option><option value="4">4x</option></select>
<label><input type="checkbox" id="loop" checked> loop</label>
<input type="range" id="slider" min="0" max="0" value="0" step="1">
<span id="time"></span><button id="fit">fit</button></div>
<script>
)";
  html += script_safe(three);
  html += "\n</script>\n<script>\n";
  html += script_safe(orbit);
  html += "\n</script>\n<script>\nvar MBS_ANIMATION = ";
  html += script_safe(data);
  html += ";\n</script>\n<script>";
  html += kPlayer;
  html += "</script>\n</body>\n</html>\n";
  return html;
}

}  // namespace mbs::rt
