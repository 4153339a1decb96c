# SPDX-License-Identifier: Apache-2.0
# ccache for every tree (DECISIONS.md, "CI's clock"). The Makefile sets CCACHE_BASEDIR to the
# clone and CCACHE_NOHASHDIR, so a fresh clone in another folder (CI's) hits what a session's
# own build put in the cache, which lives outside the clone (ccache's default, ~/.cache/ccache).
option(BAI_CCACHE "Compile through ccache when it is installed" ON)
if(BAI_CCACHE AND NOT CMAKE_CXX_COMPILER_LAUNCHER)
  find_program(BAI_CCACHE_PROGRAM ccache)
  if(BAI_CCACHE_PROGRAM)
    set(CMAKE_C_COMPILER_LAUNCHER "${BAI_CCACHE_PROGRAM}")
    set(CMAKE_CXX_COMPILER_LAUNCHER "${BAI_CCACHE_PROGRAM}")
  endif()
endif()
