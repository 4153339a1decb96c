# SPDX-License-Identifier: Apache-2.0
# bai_add_test(NAME <name> LABELS <labels...> SOURCES <files...> [LIBS <libs...>])
# One GoogleTest executable; its tests are registered with CTest one by one.
include(GoogleTest)

function(bai_add_test)
  cmake_parse_arguments(T "" "NAME" "LABELS;SOURCES;LIBS" ${ARGN})
  add_executable(${T_NAME} ${T_SOURCES})
  target_link_libraries(${T_NAME} PRIVATE bai_testing_util ${T_LIBS} GTest::gmock_main)
  bai_set_warnings(${T_NAME})
  set_target_properties(${T_NAME} PROPERTIES RUNTIME_OUTPUT_DIRECTORY "${PROJECT_BINARY_DIR}/tests")
  gtest_discover_tests(${T_NAME}
    PROPERTIES LABELS "${T_LABELS}" SKIP_REGULAR_EXPRESSION "\\[  SKIPPED \\]"
    DISCOVERY_TIMEOUT 60)
endfunction()
