# SPDX-License-Identifier: Apache-2.0
# Build switches. Tests, tools and benchmarks default to ON only in a top-level build, so a
# project that adds bai as a subdirectory gets just the library.
include(CMakeDependentOption)

string(COMPARE EQUAL "${CMAKE_SOURCE_DIR}" "${PROJECT_SOURCE_DIR}" BAI_TOP_LEVEL)

option(BAI_BUILD_CLI "Build the bai command-line tool" ${BAI_TOP_LEVEL})
option(BAI_BUILD_SERVER "Build the reference server" ${BAI_TOP_LEVEL})
option(BAI_BUILD_EXAMPLES "Build the examples" ${BAI_TOP_LEVEL})
cmake_dependent_option(BAI_BUILD_TESTS "Build the tests" ON "BAI_TOP_LEVEL;BAI_BUILD_CLI" OFF)
option(BAI_BUILD_BENCH "Build the benchmarks" ${BAI_TOP_LEVEL})
option(BAI_BUILD_CONSOLE "Build the web console (needs node and npm)" ${BAI_TOP_LEVEL})
option(BAI_BUILD_FUZZERS "Build libFuzzer targets (needs clang)" OFF)
option(BAI_INSTALL "Generate install rules" ON)
option(BAI_WERROR "Treat warnings as errors" OFF)
set(BAI_SANITIZERS "" CACHE STRING "Comma-separated -fsanitize= list (e.g. address,undefined)")
