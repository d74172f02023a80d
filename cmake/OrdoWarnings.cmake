# Project-wide compile settings, applied per target with ordo_target_defaults().
add_library(ordo_flags INTERFACE)
target_compile_options(ordo_flags INTERFACE -Wall -Wextra -Werror)
if(ORDO_AVX2)
  target_compile_options(ordo_flags INTERFACE -mavx2 -mfma -mf16c)
endif()
if(ORDO_SANITIZE)
  target_compile_options(ordo_flags INTERFACE -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
  target_link_options(ordo_flags INTERFACE -fsanitize=address,undefined)
  # GCC 12's -Wmaybe-uninitialized misfires inside libstdc++ (std::regex, std::function) once the
  # sanitizers change inlining; the normal build keeps the warning.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    target_compile_options(ordo_flags INTERFACE -Wno-maybe-uninitialized)
  endif()
endif()

function(ordo_target_defaults target)
  target_link_libraries(${target} PRIVATE $<BUILD_INTERFACE:ordo_flags>)
endfunction()
