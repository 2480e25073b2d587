// `mbsc animate RESULT.csv --model FILE.mbs --output FILE.html|.glb|.gltf`: the animation of a
// result file written earlier (docs/animation.md, "From a result file").
#pragma once

namespace mbs::cli {

int animate_command(int argc, char** argv);

}  // namespace mbs::cli
