# Project-wide compile settings, applied per target with ordo_target_defaults().
add_library(ordo_flags INTERFACE)
target_compile_options(ordo_flags INTERFACE -Wall -Wextra -Werror)
if(ORDO_AVX2)
  target_compile_options(ordo_flags INTERFACE -mavx2 -mfma -mf16c)
endif()
if(ORDO_FUZZ AND NOT ORDO_SANITIZE STREQUAL "address")
  # The fuzzers' own build: coverage for libFuzzer everywhere; the fuzzers link the fuzzer runtime
  # (tests/fuzz).
  set(ORDO_SANITIZER_FLAGS -fsanitize=fuzzer-no-link,address,undefined)
  target_compile_options(ordo_flags INTERFACE -fno-sanitize-recover=undefined)
elseif(ORDO_SANITIZE STREQUAL "address")
  set(ORDO_SANITIZER_FLAGS -fsanitize=address,undefined)
  target_compile_options(ordo_flags INTERFACE -fno-sanitize-recover=undefined)
elseif(ORDO_SANITIZE STREQUAL "thread")
  set(ORDO_SANITIZER_FLAGS -fsanitize=thread)
endif()
if(ORDO_SANITIZER_FLAGS)
  target_compile_options(ordo_flags INTERFACE ${ORDO_SANITIZER_FLAGS} -fno-omit-frame-pointer)
  target_link_options(ordo_flags INTERFACE ${ORDO_SANITIZER_FLAGS})
  # GCC 12's -Wmaybe-uninitialized misfires inside libstdc++ (std::regex, std::function) once the
  # sanitizers change inlining; the normal build keeps the warning.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    target_compile_options(ordo_flags INTERFACE -Wno-maybe-uninitialized)
  endif()
endif()

function(ordo_target_defaults target)
  target_link_libraries(${target} PRIVATE $<BUILD_INTERFACE:ordo_flags>)
endfunction()

# Fuzzers beside the ASan/UBSan suite (ORDO_FUZZ with ORDO_SANITIZE=address): libFuzzer's coverage
# only on the targets that read the fuzzers' input (the parsers and the CLI); the engine's kernels and
# the tests stay without it, which made one forward pass 1.4x slower.
function(ordo_fuzz_coverage)
  if(ORDO_FUZZ AND ORDO_SANITIZE STREQUAL "address")
    foreach(target IN LISTS ARGN)
      target_compile_options(${target} PRIVATE -fsanitize=fuzzer-no-link)
    endforeach()
    target_link_options(ordo_flags INTERFACE -fsanitize=fuzzer-no-link)
  endif()
endfunction()
