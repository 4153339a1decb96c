# SPDX-License-Identifier: Apache-2.0
# BAI_SANITIZERS applies to every target built after this point, except those that opt out with
# bai_no_sanitizers() (a static kernel runner, an LD_PRELOAD shim).
if(BAI_SANITIZERS)
  add_compile_options(-fsanitize=${BAI_SANITIZERS} -fno-omit-frame-pointer -fno-sanitize-recover=all)
  add_link_options(-fsanitize=${BAI_SANITIZERS})
endif()

function(bai_no_sanitizers target)
  if(BAI_SANITIZERS)
    target_compile_options(${target} PRIVATE -fno-sanitize=all)
    target_link_options(${target} PRIVATE -fno-sanitize=all)
  endif()
endfunction()
