# The version in the C header (EDGEATTN_VERSION_MAJOR/MINOR/PATCH and
# EDGEATTN_VERSION_STRING) is the CMake project's version, which the package
# files (edgeattnConfigVersion.cmake, edgeattn.pc) carry.
# Run as: cmake -DHEADER=include/edgeattn/types.h -DVERSION=1.0.0 -P check_version.cmake
file(READ "${HEADER}" text)
foreach(part MAJOR MINOR PATCH)
  string(REGEX MATCH "#define EDGEATTN_VERSION_${part} ([0-9]+)" found "${text}")
  if(NOT found)
    message(FATAL_ERROR "${HEADER} defines no EDGEATTN_VERSION_${part}")
  endif()
  set(${part} "${CMAKE_MATCH_1}")
endforeach()
string(REGEX MATCH "#define EDGEATTN_VERSION_STRING \"([0-9.]+)\"" found "${text}")
set(string_version "${CMAKE_MATCH_1}")
set(header_version "${MAJOR}.${MINOR}.${PATCH}")
if(NOT header_version STREQUAL VERSION OR NOT string_version STREQUAL VERSION)
  message(FATAL_ERROR "header version ${header_version} (string \"${string_version}\") is not the project's ${VERSION}")
endif()
message(STATUS "version ${VERSION} in the header and the project alike")
