// Where mbs finds what a run needs besides its own code: the standard library (`.mbs` files) and
// the FMU runtime object. Nothing of the source or build tree is compiled into the binary; the
// files are found relative to the binary (docs/install.md, "The layout"):
//
//   $MBS_HOME, when set and not empty           (an override; nothing else is tried)
//   <dir>/..  when <dir>/../share/mbs exists    (an install: <prefix>/bin/mbsc, a test or bench
//                                                program in build/<preset>/tests/)
//   <dir>     when <dir>/share/mbs exists       (the build tree: build/<preset>/mbsc)
//
// or, for the Python module (a binary named _mbs*, docs/python.md), <dir>/../.. (the build tree:
// build/<preset>/python/mbs/) and <dir>/../../../.. (an install: <prefix>/lib/python3/
// dist-packages/mbs/)
//
// where <dir> is the folder of the executable or shared library holding this code. The build
// tree has the same layout as an install (CMakeLists.txt: build/<preset>/share/mbs/stdlib links
// to the source's stdlib/, the FMU runtime object is built into build/<preset>/lib/mbs/).
#pragma once

#include <string>
#include <vector>

namespace mbs::rt {

struct InstallHome {
  std::string root;                // the prefix ($MBS_HOME, or found); empty when nothing was found
  bool from_mbs_home = false;      // root is $MBS_HOME (else found beside the binary, or empty)
  std::vector<std::string> tried;  // the candidate prefixes looked at, for messages
  std::string stdlib_dir() const;  // <root>/share/mbs/stdlib
  std::string fmu_runtime() const;  // <root>/lib/mbs/mbs_fmu_runtime.o
  // What to tell a user when a file under the home is missing: where mbs looked and MBS_HOME.
  std::string explain() const;
};

// Found once per process (the environment and the binary's place do not change under it).
const InstallHome& install_home();

// Finds the home from the given binary path and MBS_HOME value (null: unset); for tests.
InstallHome find_install_home(const std::string& binary, const char* mbs_home);

// The absolute path of the executable or shared object that holds this code.
std::string this_binary_path();

}  // namespace mbs::rt
