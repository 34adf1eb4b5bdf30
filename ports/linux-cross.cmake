# Shared by the Linux cross toolchain files (aarch64-linux-gnu.cmake,
# arm-linux-gnueabihf.cmake); they set EDGEATTN_PORT_TRIPLE, EDGEATTN_PORT_QEMU,
# EDGEATTN_PORT_PROCESSOR and EDGEATTN_PORT_FLAGS, then include this file.
#
#   - Debian's cross compilers <triple>-gcc/g++, their sysroot /usr/<triple>;
#   - programs linked -static, so qemu-user runs them without a sysroot
#     (libgomp is linked statically too: OpenMP works under qemu; the
#     linker's "Using 'dlopen' in statically linked applications" warning
#     is libgomp's offloading-plugin loader, which never runs here);
#   - CMAKE_CROSSCOMPILING_EMULATOR = qemu-<arch>, so CTest runs the tests;
#   - the header-only host packages the build uses (xsimd, doctest, from
#     libxsimd-dev and doctest-dev) reached through a folder of links in the
#     build tree, so /usr/include itself never joins the cross include path.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR ${EDGEATTN_PORT_PROCESSOR})

set(CMAKE_C_COMPILER ${EDGEATTN_PORT_TRIPLE}-gcc)
set(CMAKE_CXX_COMPILER ${EDGEATTN_PORT_TRIPLE}-g++)
set(CMAKE_C_FLAGS_INIT "${EDGEATTN_PORT_FLAGS}")
set(CMAKE_CXX_FLAGS_INIT "${EDGEATTN_PORT_FLAGS}")
set(CMAKE_EXE_LINKER_FLAGS_INIT "-static")

list(APPEND CMAKE_FIND_ROOT_PATH /usr/${EDGEATTN_PORT_TRIPLE})  # after any given with -D
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

# qemu-user; -L only matters for a program someone links dynamically.
find_program(EDGEATTN_QEMU_USER ${EDGEATTN_PORT_QEMU})
if(NOT EDGEATTN_QEMU_USER)
  set(EDGEATTN_QEMU_USER ${EDGEATTN_PORT_QEMU})  # tests fail to start: install qemu-user
endif()
set(CMAKE_CROSSCOMPILING_EMULATOR ${EDGEATTN_QEMU_USER} -L /usr/${EDGEATTN_PORT_TRIPLE})

# Header-only host packages: xsimd/ and doctest/ linked into
# <build>/port-host-headers (the toolchain file also runs for CMake's own
# test projects; CMAKE_BINARY_DIR is then theirs, which does no harm).
set(EDGEATTN_HOST_HEADERS /usr/include CACHE PATH "where xsimd/ and doctest/ are on the build machine")
set(_edgeattn_links ${CMAKE_BINARY_DIR}/port-host-headers)
foreach(_pkg_var IN ITEMS "xsimd|xsimd/xsimd.hpp|XSIMD_INCLUDE_DIR" "doctest|doctest/doctest.h|DOCTEST_INCLUDE_DIR")
  string(REPLACE "|" ";" _pkg_var "${_pkg_var}")
  list(GET _pkg_var 0 _pkg)
  list(GET _pkg_var 1 _header)
  list(GET _pkg_var 2 _var)
  if(NOT DEFINED ${_var} AND EXISTS ${EDGEATTN_HOST_HEADERS}/${_header})
    if(NOT EXISTS ${_edgeattn_links}/${_header})
      file(MAKE_DIRECTORY ${_edgeattn_links})
      file(CREATE_LINK ${EDGEATTN_HOST_HEADERS}/${_pkg} ${_edgeattn_links}/${_pkg} SYMBOLIC)
    endif()
    set(${_var} ${_edgeattn_links} CACHE PATH "folder holding ${_header}")
  endif()
endforeach()

# FindOpenMP would pick libgomp.so, which a -static link cannot use: point
# it at the compiler's libgomp.a.
if(NOT DEFINED OpenMP_gomp_LIBRARY)
  execute_process(COMMAND ${CMAKE_CXX_COMPILER} -print-file-name=libgomp.a
    OUTPUT_VARIABLE _edgeattn_gomp OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  if(IS_ABSOLUTE "${_edgeattn_gomp}" AND EXISTS "${_edgeattn_gomp}")
    set(OpenMP_gomp_LIBRARY ${_edgeattn_gomp} CACHE FILEPATH "static libgomp for -static programs")
  endif()
endif()
