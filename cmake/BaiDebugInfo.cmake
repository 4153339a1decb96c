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
