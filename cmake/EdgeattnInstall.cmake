# Install rules, included from the top-level CMakeLists.txt when
# EDGEATTN_INSTALL is ON (the default for the top-level project):
#
#   <prefix>/include/edgeattn/...                 the C and C++ headers
#   <prefix>/lib/libedgeattn.a
#   <prefix>/lib/cmake/edgeattn/edgeattnConfig.cmake, ...ConfigVersion.cmake
#   <prefix>/lib/pkgconfig/edgeattn.pc
#   <prefix>/share/edgeattn/toolchains/*.cmake        the ports' toolchain files
#   <prefix>/share/edgeattn/toolchains/cortex-m4f/    start-up code, linker scripts,
#                                                     semihosting (QEMU mps2-an386)
#   <prefix>/share/edgeattn/toolchains/cortex-m55/    the mps3-an547 linker script
# and, when the conformance tools are built (EDGEATTN_BUILD_TOOLS):
#   <prefix>/bin/edgeattn-conform, edgeattn-check-result
#   <prefix>/share/edgeattn/golden/*.case, FORMAT.md     the golden cases
#   <prefix>/share/edgeattn/tools/export_torch.py, llama_model.py, golden/*.py  the exporter,
#                                                     its model reference and generators
#
# The package files come from the templates beside this file, which
# `make install` fills in too (with sed), so both installs give the same
# files. The CMake package finds the library relative to itself; the .pc
# names the prefix given at install time (cmake --install --prefix ...).
include(GNUInstallDirs)
set(EDGEATTN_INSTALL_CMAKEDIR "${CMAKE_INSTALL_LIBDIR}/cmake/edgeattn" CACHE STRING
    "where edgeattnConfig.cmake is installed, relative to the prefix")
set(EDGEATTN_INSTALL_PKGCONFIGDIR "${CMAKE_INSTALL_LIBDIR}/pkgconfig" CACHE STRING
    "where edgeattn.pc is installed, relative to the prefix")
foreach(dir CMAKE_INSTALL_LIBDIR CMAKE_INSTALL_INCLUDEDIR CMAKE_INSTALL_DATADIR EDGEATTN_INSTALL_CMAKEDIR
            EDGEATTN_INSTALL_PKGCONFIGDIR)
  if(IS_ABSOLUTE "${${dir}}")
    message(FATAL_ERROR "${dir} (${${dir}}) must be relative to the install prefix")
  endif()
endforeach()

install(TARGETS edgeattn ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(DIRECTORY include/edgeattn DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

# The ports' toolchain files (and the Cortex-M4F board files), so a consumer
# cross-builds against a cross-built install with the toolchain the library
# was built with: -DCMAKE_TOOLCHAIN_FILE=<prefix>/share/edgeattn/toolchains/<port>.cmake.
# Installed for every target, bare metal included.
file(GLOB _edgeattn_toolchains ${PROJECT_SOURCE_DIR}/ports/*.cmake)
install(FILES ${_edgeattn_toolchains} DESTINATION ${CMAKE_INSTALL_DATADIR}/edgeattn/toolchains)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/ports/cortex-m4f ${PROJECT_SOURCE_DIR}/ports/cortex-m55
        DESTINATION ${CMAKE_INSTALL_DATADIR}/edgeattn/toolchains)
unset(_edgeattn_toolchains)

# What the templates say about this build.
set(EDGEATTN_VERSION ${PROJECT_VERSION})
set(EDGEATTN_CONFIG_LIBDIR ${CMAKE_INSTALL_LIBDIR})
set(EDGEATTN_CONFIG_INCLUDEDIR ${CMAKE_INSTALL_INCLUDEDIR})
set(EDGEATTN_CONFIG_DATADIR ${CMAKE_INSTALL_DATADIR})
file(RELATIVE_PATH EDGEATTN_CONFIG_TO_PREFIX "/prefix/${EDGEATTN_INSTALL_CMAKEDIR}" "/prefix")
string(REGEX REPLACE "/$" "" EDGEATTN_CONFIG_TO_PREFIX "${EDGEATTN_CONFIG_TO_PREFIX}")
if(EDGEATTN_OPENMP AND OpenMP_CXX_FOUND)
  set(EDGEATTN_CONFIG_OPENMP ON)
  # edgeattn.pc names OpenMP's runtime libraries (GCC: -lgomp -lpthread), not
  # -fopenmp: `cc app.c $(pkg-config --cflags --libs edgeattn)` would
  # otherwise compile the program with OpenMP too (and define _OPENMP). The
  # Makefile finds the same list from the compiler's own link line.
  set(EDGEATTN_PC_LIBS "")
  set(_edgeattn_implicit_dirs "")
  foreach(_dir IN LISTS CMAKE_CXX_IMPLICIT_LINK_DIRECTORIES)
    get_filename_component(_dir "${_dir}" REALPATH)
    list(APPEND _edgeattn_implicit_dirs "${_dir}")
  endforeach()
  foreach(_name IN LISTS OpenMP_CXX_LIB_NAMES)
    get_filename_component(_dir "${OpenMP_${_name}_LIBRARY}" DIRECTORY)
    if(_dir)
      get_filename_component(_dir "${_dir}" REALPATH)
      if(NOT _dir IN_LIST _edgeattn_implicit_dirs)
        string(APPEND EDGEATTN_PC_LIBS "-L${_dir} ")  # e.g. Clang's libomp in its own folder
      endif()
    endif()
    string(APPEND EDGEATTN_PC_LIBS "-l${_name} ")
  endforeach()
  if(EDGEATTN_PC_LIBS STREQUAL "")
    set(EDGEATTN_PC_LIBS "${OpenMP_CXX_FLAGS} ")  # a compiler whose flag links no separate library
  endif()
  string(APPEND EDGEATTN_PC_LIBS "-lm")
  unset(_dir)
  unset(_edgeattn_implicit_dirs)
else()
  set(EDGEATTN_CONFIG_OPENMP OFF)
  set(EDGEATTN_PC_LIBS "-lm")
endif()
if(EDGEATTN_BARE_METAL)
  set(EDGEATTN_CONFIG_BARE_METAL ON)
else()
  set(EDGEATTN_CONFIG_BARE_METAL OFF)
endif()
set(EDGEATTN_CONFIG_KERNEL_PATHS "${EDGEATTN_ISAS}")
set(EDGEATTN_CONFIG_SIZEOF_VOID_P "${CMAKE_SIZEOF_VOID_P}")

set(_edgeattn_pkg ${PROJECT_BINARY_DIR}/edgeattn-package)
configure_file(${CMAKE_CURRENT_LIST_DIR}/edgeattnConfig.cmake.in ${_edgeattn_pkg}/edgeattnConfig.cmake @ONLY)
configure_file(${CMAKE_CURRENT_LIST_DIR}/edgeattnConfigVersion.cmake.in
               ${_edgeattn_pkg}/edgeattnConfigVersion.cmake @ONLY)
install(FILES ${_edgeattn_pkg}/edgeattnConfig.cmake ${_edgeattn_pkg}/edgeattnConfigVersion.cmake
        DESTINATION ${EDGEATTN_INSTALL_CMAKEDIR})

# edgeattn.pc is written when installing, when the prefix is known for sure.
install(CODE "
  set(EDGEATTN_PC_PREFIX \"\${CMAKE_INSTALL_PREFIX}\")
  set(EDGEATTN_VERSION \"${EDGEATTN_VERSION}\")
  set(EDGEATTN_CONFIG_LIBDIR \"${EDGEATTN_CONFIG_LIBDIR}\")
  set(EDGEATTN_CONFIG_INCLUDEDIR \"${EDGEATTN_CONFIG_INCLUDEDIR}\")
  set(EDGEATTN_PC_LIBS \"${EDGEATTN_PC_LIBS}\")
  configure_file(\"${CMAKE_CURRENT_LIST_DIR}/edgeattn.pc.in\" \"${_edgeattn_pkg}/edgeattn.pc\" @ONLY)
")
install(FILES ${_edgeattn_pkg}/edgeattn.pc DESTINATION ${EDGEATTN_INSTALL_PKGCONFIGDIR})
unset(_edgeattn_pkg)

# The conformance tools with what they run on, and the Python tools.
if(EDGEATTN_BUILD_TOOLS AND TARGET edgeattn-conform)
  install(TARGETS edgeattn-conform edgeattn-check-result RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
  file(GLOB _edgeattn_cases ${PROJECT_SOURCE_DIR}/tests/golden/*.case)
  install(FILES ${_edgeattn_cases} ${PROJECT_SOURCE_DIR}/tests/golden/FORMAT.md
          DESTINATION ${CMAKE_INSTALL_DATADIR}/edgeattn/golden)
  install(PROGRAMS ${PROJECT_SOURCE_DIR}/tools/export_torch.py ${PROJECT_SOURCE_DIR}/tools/llama_model.py DESTINATION ${CMAKE_INSTALL_DATADIR}/edgeattn/tools)
  file(GLOB _edgeattn_generators ${PROJECT_SOURCE_DIR}/tools/golden/*.py)
  install(PROGRAMS ${_edgeattn_generators} DESTINATION ${CMAKE_INSTALL_DATADIR}/edgeattn/tools/golden)
  unset(_edgeattn_cases)
  unset(_edgeattn_generators)
endif()
