# SPDX-License-Identifier: Apache-2.0
# Debug sections are written zlib-compressed (-gz) in objects and binaries: the test executables
# link most of the server, and uncompressed they took 3 GiB per build tree, enough for the
# default and ASan trees together to fill a CI disk. gdb, addr2line and the sanitizers'
# symbolizer read compressed sections; BAI_COMPRESS_DEBUG=OFF writes them plain.
option(BAI_COMPRESS_DEBUG "Compress debug sections (-gz)" ON)
if(BAI_COMPRESS_DEBUG)
  include(CheckCXXSourceCompiles)
  set(CMAKE_REQUIRED_FLAGS "-g -gz")
  set(CMAKE_REQUIRED_LINK_OPTIONS "-gz")
  check_cxx_source_compiles("int main() { return 0; }" BAI_HAVE_GZ)
  unset(CMAKE_REQUIRED_FLAGS)
  unset(CMAKE_REQUIRED_LINK_OPTIONS)
  if(BAI_HAVE_GZ)
    add_compile_options(-gz)
    add_link_options(-gz)
  endif()
endif()

# How much debug information: "lines" (-g1, the default) keeps file:line for backtraces, the
# sanitizers' reports, profilers and gdb's `bt`; "full" (-g) is what gdb needs to show local
# variables and types. Measured on two cores (issue 26): a heavy handler file compiles in 17 s
# instead of 29 s, and the release tree's summed step times fell from 4,486 s to 3,459 s. CI
# builds two trees on two cores.
set(BAI_DEBUG_INFO "lines" CACHE STRING "Debug information: lines (-g1) or full (-g)")
set_property(CACHE BAI_DEBUG_INFO PROPERTY STRINGS lines full)
if(BAI_DEBUG_INFO STREQUAL "lines")
  foreach(flags CMAKE_C_FLAGS_RELWITHDEBINFO CMAKE_CXX_FLAGS_RELWITHDEBINFO CMAKE_C_FLAGS_DEBUG
                CMAKE_CXX_FLAGS_DEBUG)
    string(REGEX REPLACE "(^| )-g( |$)" "\\1-g1\\2" ${flags} "${${flags}}")
  endforeach()
elseif(NOT BAI_DEBUG_INFO STREQUAL "full")
  message(FATAL_ERROR "BAI_DEBUG_INFO is lines or full, not '${BAI_DEBUG_INFO}'")
endif()
