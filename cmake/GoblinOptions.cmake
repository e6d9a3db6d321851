# One INTERFACE target carries the language standard, warnings and defines for every goblin target.
add_library(goblin_options INTERFACE)
add_library(goblin::options ALIAS goblin_options)
target_compile_features(goblin_options INTERFACE cxx_std_20)
target_compile_options(goblin_options INTERFACE
  -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wcast-align -Woverloaded-virtual
  $<$<BOOL:${GOBLIN_WARNINGS_AS_ERRORS}>:-Werror>)
# Asio and Beast are compiled once, in lib/net/src/asio_beast_impl.cpp.
target_compile_definitions(goblin_options INTERFACE
  BOOST_ASIO_SEPARATE_COMPILATION BOOST_BEAST_SEPARATE_COMPILATION BOOST_ASIO_NO_DEPRECATED)
# OpenCL API level, defined once: 3.0 headers; the C++ bindings pick 1.x calls at run time on
# older drivers (a minimum of 110, since 120 in this opencl.hpp lacks its version probe).
add_library(goblin_opencl_options INTERFACE)
add_library(goblin::opencl_options ALIAS goblin_opencl_options)
target_compile_definitions(goblin_opencl_options INTERFACE
  CL_TARGET_OPENCL_VERSION=300 CL_HPP_TARGET_OPENCL_VERSION=300 CL_HPP_MINIMUM_OPENCL_VERSION=110)
target_link_libraries(goblin_opencl_options INTERFACE OpenCL::OpenCL)
# A fuzzing build instruments every library for coverage, so libFuzzer sees inside the decoders.
if(GOBLIN_FUZZ)
  target_compile_options(goblin_options INTERFACE -fsanitize=fuzzer-no-link,address,undefined)
  target_link_options(goblin_options INTERFACE -fsanitize=address,undefined)
endif()
# Precompiled headers (GCC only: an invalid one is ignored there, never an error): the third-party
# headers nearly every file of a target parses again — Boost.JSON and Asio in the lab node, QtTest
# in the tests — parsed once per target instead. Only system headers go in, so no file depends on
# one it does not include itself for its meaning; off for a build that wants every file's own
# includes checked (-DGOBLIN_PCH=OFF).
option(GOBLIN_PCH "Precompile the heavy third-party headers (GCC)" ON)
if(GOBLIN_PCH AND NOT CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  set(GOBLIN_PCH OFF)
endif()
