# SPDX-License-Identifier: Apache-2.0
# bai_set_warnings(<target>): the project's warning set; errors with BAI_WERROR.
function(bai_set_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor
                                           -Wcast-align -Woverloaded-virtual -Wimplicit-fallthrough)
  if(BAI_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()
