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
