#include "runtime/io/Home.h"

#include <dlfcn.h>
#include <link.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <system_error>
#include <vector>

namespace mbs::rt {

namespace fs = std::filesystem;

std::string InstallHome::stdlib_dir() const {
  return root.empty() ? std::string() : root + "/share/mbs/stdlib";
}

std::string InstallHome::fmu_runtime() const {
  return root.empty() ? std::string() : root + "/lib/mbs/mbs_fmu_runtime.o";
}

std::string InstallHome::explain() const {
  if (from_mbs_home) return "MBS_HOME is " + root;
  std::string s = "looked for share/mbs in ";
  for (size_t i = 0; i < tried.size(); ++i) s += (i ? ", " : "") + tried[i];
  if (tried.empty()) s += "(the binary's own folder is unknown)";
  s += root.empty() ? "; set MBS_HOME to the installation prefix" : "; found " + root;
  return s;
}

std::string this_binary_path() {
  // dladdr of a function of this file names the object that holds it; for the main program that
  // name is its argv[0], so the executable's path comes from /proc/self/exe instead.
  Dl_info info{};
  struct link_map* map = nullptr;
  if (dladdr1(reinterpret_cast<void*>(&this_binary_path), &info, reinterpret_cast<void**>(&map),
              RTLD_DL_LINKMAP) != 0 &&
      map != nullptr && map->l_prev != nullptr && info.dli_fname != nullptr &&
      info.dli_fname[0] != '\0') {
    std::error_code ec;
    fs::path p = fs::canonical(info.dli_fname, ec);
    if (!ec) return p.string();
  }
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string() : exe.string();
}

InstallHome find_install_home(const std::string& binary, const char* mbs_home) {
  InstallHome h;
  if (mbs_home != nullptr && mbs_home[0] != '\0') {
    std::error_code ec;
    fs::path p = fs::absolute(mbs_home, ec);
    h.root = (ec ? fs::path(mbs_home) : p.lexically_normal()).string();
    while (h.root.size() > 1 && h.root.back() == '/') h.root.pop_back();
    h.from_mbs_home = true;
    h.tried.push_back(h.root);
    return h;
  }
  if (binary.empty()) return h;
  const fs::path dir = fs::path(binary).parent_path();
  std::vector<fs::path> prefixes = {dir.parent_path(), dir};
  // the Python module mbs/_mbs*.so: build/<preset>/python/mbs/, or an install's
  // <prefix>/lib/python3/dist-packages/mbs/
  if (fs::path(binary).filename().string().rfind("_mbs", 0) == 0)
    prefixes = {dir.parent_path().parent_path(),
                dir.parent_path().parent_path().parent_path().parent_path()};
  for (const fs::path& prefix : prefixes) {
    h.tried.push_back(prefix.string());
    std::error_code ec;
    if (fs::is_directory(prefix / "share" / "mbs", ec)) {
      h.root = prefix.string();
      return h;
    }
  }
  return h;
}

const InstallHome& install_home() {
  static const InstallHome home = find_install_home(this_binary_path(), std::getenv("MBS_HOME"));
  return home;
}

}  // namespace mbs::rt
