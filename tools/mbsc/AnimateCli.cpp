#include "tools/mbsc/AnimateCli.h"

#include <CLI/CLI.hpp>
#include <cstdlib>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "compiler/driver/Compile.h"
#include "runtime/anim/Animation.h"
#include "runtime/io/ResultTable.h"
#include "tools/mbsc/Analyses.h"
#include "tools/mbsc/Options.h"
#include "tools/mbsc/StudyCli.h"

namespace mbs::cli {

int animate_command(int argc, char** argv) {
  CLI::App app{
      "the 3D animation of a result file written earlier, its poses computed by the "
      "model from the coordinates in the file",
      "mbsc animate"};
  app.footer(
      "Exit codes: 0 written; 1 the --model does not compile; 2 a bad request (an unreadable "
      "result file, one without the model's coordinates, an unknown --animate-show name, an "
      "output that is not .html, .glb or .gltf, no three.js for .html).\n"
      "Documentation: docs/animation.md");
  std::string result, output;
  std::vector<std::string> show, sets;
  double fps = 60;
  CompileOptions copts;
  app.add_option("result", result, "the result file (CSV) of a run of the model")
      ->required()
      ->type_name("RESULT.csv");
  app.add_option("--model", copts.file, "the model that wrote it")
      ->required()
      ->type_name("FILE.mbs");
  app.add_option("--model-name", copts.model,
                 "the model in that file (default: the last model in the file)")
      ->type_name("NAME");
  app.add_option("-I", copts.include_dirs, "add a directory to the library search path")
      ->type_name("DIR")
      ->allow_extra_args(false);
  app.add_option("--set", sets, "a parameter's value of the run: --set L=0.8")
      ->type_name("PARAMETER=VALUE")
      ->allow_extra_args(false);
  app.add_option("-o,--output", output, "the animation: FILE.html, FILE.glb or FILE.gltf")
      ->required()
      ->type_name("FILE");
  app.add_option("--animate-fps", fps, "frames per second of simulated time (default 60)")
      ->type_name("FPS")
      ->check(positive_number("frame rate"));
  app.add_option("--animate-show", show, "variables shown with the time (the file's columns)")
      ->type_name("NAME")
      ->delimiter(',')
      ->allow_extra_args(false);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? kExitOk : kExitUsage;
  }
  if (!parse_assignments(sets, "--set", copts.overrides, "mbsc animate")) return kExitUsage;
  try {
    rt::check_animation_target(output);
  } catch (const rt::AnimationError& e) {
    std::cerr << "mbsc animate: error: " << e.what() << "\n";
    return kExitUsage;
  }
  rt::ResultTable table;
  try {
    table = rt::ResultTable::read_csv(result);
  } catch (const std::exception& e) {
    std::cerr << "mbsc animate: error: " << e.what() << "\n";
    return kExitUsage;
  }
  copts.animation = true;
  const CompileResult compiled = compile(copts, std::cout, std::cerr);
  if (!compiled.ok || !compiled.model) return compiled.usage_error ? kExitUsage : kExitModelError;
  const rt::CompiledModel& m = *compiled.model;
  try {
    const rt::AnimationTrack track = rt::replay_result(m, table, show, fps);
    rt::write_animation(output, m, track, m.name);
    std::cerr << "mbsc animate: " << m.shapes.size() << " shapes on " << m.shape_frames.size()
              << " frames, " << track.size() << " " << track.abscissa << " frames of " << result
              << " written to " << output << "\n";
  } catch (const std::exception& e) {
    std::cerr << "mbsc animate: error: " << result << ": " << e.what() << "\n";
    return kExitUsage;
  }
  return kExitOk;
}

}  // namespace mbs::cli
