cmake_minimum_required(VERSION 3.25)
# Script mode: cmake -DINPUT=x.cl -DOUTPUT=x_cl.hpp -DNAME=kXSource [-DNAMESPACE=a::b]
#   -P embed_kernel.cmake
# Writes a header holding a data file (OpenCL C source, a tuning table, a web page) as a raw string,
# so the binary carries its kernels, tables and pages. NAMESPACE defaults to the kernels' one.
file(READ "${INPUT}" source)
if(source MATCHES "\\)goblin_cl")
  message(FATAL_ERROR "${INPUT} contains the raw-string delimiter )goblin_cl")
endif()
file(RELATIVE_PATH name "${CMAKE_CURRENT_LIST_DIR}/.." "${INPUT}")
set(text "// Generated from ${name} by cmake/embed_kernel.cmake; do not edit.\n")
if(NOT NAMESPACE)
  set(NAMESPACE goblin::compute::kernels)
endif()
string(APPEND text "#pragma once\n\n#include <string_view>\n\nnamespace ${NAMESPACE} {\n\n")
string(APPEND text "inline constexpr std::string_view ${NAME} = R\"goblin_cl(${source})goblin_cl\";\n\n")
string(APPEND text "} // namespace ${NAMESPACE}\n")
# Rewrite only on change so dependants do not rebuild for nothing.
if(EXISTS "${OUTPUT}")
  file(READ "${OUTPUT}" old)
  if(old STREQUAL text)
    return()
  endif()
endif()
file(WRITE "${OUTPUT}" "${text}")
