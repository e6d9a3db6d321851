// The one source of each test directory's precompiled-header library (tests/CMakeLists.txt): it
// exists so the header is built once and the directory's tests reuse it.
