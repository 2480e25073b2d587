// What the C runtime's start files (crtbeginS.o, crtendS.o) would give a shared library. The FMU
// library is linked without them, because a machine that exports FMUs need not have a C compiler
// or libc6-dev (docs/fmu.md, "How an FMU binary is built"). Constructors and destructors of
// static objects need only two pieces:
//   __dso_handle   the library's identity, passed by every __cxa_atexit registration of a static
//                  object's destructor (the compiler refers to it as a hidden symbol);
//   __cxa_finalize run at unload: the registered destructors of this library run at dlclose,
//                  not at process exit when the code is long gone.
// At unload the library also returns libstdc++'s emergency exception pool (72 KiB that the static
// libstdc++ of each loaded copy allocates at start-up and otherwise never frees): an importer that
// loads and unloads an FMU many times would lose it at every unload.
// The rest of crtbeginS.o (transactional-memory clones, frame registration for a linker without
// --eh-frame-hdr) has no use here: the linker writes .eh_frame_hdr, which the unwinder finds
// through dl_iterate_phdr.
extern "C" {
__attribute__((visibility("hidden"))) void* __dso_handle = &__dso_handle;
int __cxa_finalize(void* dso);  // glibc
}

namespace __gnu_cxx {
void __freeres();  // libstdc++ (eh_alloc.cc): frees the emergency exception pool
}

namespace {
// Runs last among this library's finalisers (101 is the first priority not reserved).
__attribute__((destructor(101))) void run_static_destructors() {
  __cxa_finalize(&__dso_handle);
  __gnu_cxx::__freeres();
}
}  // namespace
