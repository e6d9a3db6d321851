# Fails the build when an include crosses a layer the wrong way (STYLE.md rule 1):
# core uses nothing of ours; reference, net and plan use only core; compute and verify use core and
# reference; no lib/ includes Qt.
add_custom_target(check_layers ALL
  COMMAND ${CMAKE_COMMAND} -DSOURCE_DIR=${CMAKE_SOURCE_DIR} -P ${CMAKE_SOURCE_DIR}/cmake/check_layers.cmake
  COMMENT "Checking layer rules"
  VERBATIM)
