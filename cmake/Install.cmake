# The install layout and the Debian package (docs/install.md). Everything a run needs lies under
# one prefix and is found relative to bin/mbsc (runtime/io/Home.h):
#   bin/mbsc
#   lib/mbs/mbs_fmu_runtime.o                   the runtime linked into every exported FMU
#   share/mbs/stdlib/*.mbs                      the standard library
#   share/man/man1/mbsc.1                       generated from mbsc's option table
#   share/bash-completion/completions/mbsc      the same
#   share/doc/mbs/                              README, LICENSE, docs/, examples/
#   lib/python3/dist-packages/mbs/              the Python module (python/CMakeLists.txt), where
#                                               Debian's /usr/bin/python3 finds it for prefix /usr
# The build tree has the same layout under build/<preset>/ (CMakeLists.txt), so the build's own
# mbsc runs without installing.
include(GNUInstallDirs)

# `make install` and cpack use what was built; they do not build the tests first.
set(CMAKE_SKIP_INSTALL_ALL_DEPENDENCY TRUE)

# ---- the man page and the bash completion, written by the built mbsc from its option table
# (tools/mbsc/Help.cpp); ASan's leak check is off for this one call of a sanitizer build.
set(MBS_MAN_PAGE ${CMAKE_BINARY_DIR}/share/man/man1/mbsc.1)
set(MBS_COMPLETION ${CMAKE_BINARY_DIR}/share/bash-completion/completions/mbsc)
add_custom_command(
  OUTPUT ${MBS_MAN_PAGE} ${MBS_COMPLETION}
  COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_BINARY_DIR}/share/man/man1
          ${CMAKE_BINARY_DIR}/share/bash-completion/completions
  COMMAND ${CMAKE_COMMAND} -E env ASAN_OPTIONS=detect_leaks=0 $<TARGET_FILE:mbsc> __generate man
          ${MBS_MAN_PAGE}
  COMMAND ${CMAKE_COMMAND} -E env ASAN_OPTIONS=detect_leaks=0 $<TARGET_FILE:mbsc> __generate
          bash-completion ${MBS_COMPLETION}
  DEPENDS mbsc
  COMMENT "Writing the man page and the bash completion of mbsc")
add_custom_target(mbsc_docs ALL DEPENDS ${MBS_MAN_PAGE} ${MBS_COMPLETION})

install(TARGETS mbsc RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY ${CMAKE_SOURCE_DIR}/stdlib/ DESTINATION ${CMAKE_INSTALL_DATADIR}/mbs/stdlib
        FILES_MATCHING PATTERN "*.mbs")
if(DEFINED MBS_FMU_BLOB)
  install(FILES ${MBS_FMU_BLOB} DESTINATION ${CMAKE_INSTALL_LIBDIR}/mbs)
endif()
install(FILES ${MBS_MAN_PAGE} DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
install(FILES ${MBS_COMPLETION} DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions)
install(FILES ${CMAKE_SOURCE_DIR}/README.md ${CMAKE_SOURCE_DIR}/LICENSE
        DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(DIRECTORY ${CMAKE_SOURCE_DIR}/docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR}/docs)
install(DIRECTORY ${CMAKE_SOURCE_DIR}/examples/ DESTINATION ${CMAKE_INSTALL_DOCDIR}/examples)

# ---- the Debian package: `cpack -G DEB` in the build folder (after the build) writes
# mbs_<version>_amd64.deb. Its dependencies are the shared libraries mbsc links, found by
# dpkg-shlibdeps (Debian's dpkg-dev); gnuplot (mbsc plot) and Open MPI's mpirun (studies across
# machines) are suggestions.
set(CPACK_PACKAGE_NAME mbs)
set(CPACK_PACKAGE_VENDOR "the mbs developers")
set(CPACK_PACKAGE_CONTACT "mbs developers <mbs@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "equation-based modelling language, compiler and simulator for multibody systems")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_INSTALL_DIRECTORY mbs)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES bin/mbsc)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION science)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# three.js, which `mbsc --animate FILE.html` embeds from the installed file at run time
# (docs/animation.md); added to the libraries dpkg-shlibdeps finds
set(CPACK_DEBIAN_PACKAGE_DEPENDS "libjs-three")
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "gnuplot-nox, openmpi-bin")
# the Python module (docs/python.md): an extension for one interpreter version's ABI, and numpy,
# which it imports; scipy, pandas and matplotlib are used when present
if(MBS_PYTHON_BUILT)
  set(mbs_py ${MBS_PYTHON_VERSION_MAJOR}.${MBS_PYTHON_VERSION_MINOR})
  math(EXPR mbs_py_next "${MBS_PYTHON_VERSION_MINOR} + 1")
  string(APPEND CPACK_DEBIAN_PACKAGE_DEPENDS ", python3 (>= ${mbs_py}~)"
         ", python3 (<< ${MBS_PYTHON_VERSION_MAJOR}.${mbs_py_next}), python3-numpy")
  string(APPEND CPACK_DEBIAN_PACKAGE_SUGGESTS ", python3-scipy, python3-pandas, python3-matplotlib")
endif()
set(CPACK_DEBIAN_COMPRESSION_TYPE gzip)
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION
    "mbs compiles models written in Modelica syntax (bodies, joints, forces, equations) into\n\
native code with LLVM and simulates them, solves for static equilibria, linearises, runs\n\
inverse dynamics and studies, and exports FMUs (FMI 2.0 and 3.0).")
set(CPACK_GENERATOR DEB)
include(CPack)
