# Every external find step of the build. A step that fails names the Debian packages that provide
# it, from cmake/debian-packages.txt (the list tools/dev.sh setup installs).
file(STRINGS ${CMAKE_CURRENT_LIST_DIR}/debian-packages.txt ORDO_DEBIAN_PACKAGE_LINES REGEX "^[^#]")

function(ordo_missing step)
  set(pkgs "")
  foreach(line IN LISTS ORDO_DEBIAN_PACKAGE_LINES)
    if(line MATCHES "^${step}[ \t]+(.*)$")
      set(pkgs "${CMAKE_MATCH_1}")
    endif()
  endforeach()
  message(FATAL_ERROR "ordo: ${step} was not found. On Debian, install the package(s): ${pkgs}\n"
                      "(bash tools/dev.sh setup installs everything ordo needs)")
endfunction()

macro(ordo_find_package name)
  find_package(${name} ${ARGN} QUIET)
  if(NOT ${name}_FOUND)
    ordo_missing(${name})
  endif()
endmacro()

# pkg-config module `module` as the imported target PkgConfig::<prefix>.
macro(ordo_pkg_module prefix module)
  pkg_check_modules(${prefix} QUIET IMPORTED_TARGET ${module})
  if(NOT ${prefix}_FOUND)
    ordo_missing(${module})
  endif()
endmacro()

ordo_find_package(OpenMP)
# Debian's oneDNN is built with the OpenCL GPU runtime: its config requires OpenCL, so look for it
# first to name the missing package instead of failing inside dnnl-config.cmake.
ordo_find_package(OpenCL)
ordo_find_package(dnnl 2.6 CONFIG)
ordo_find_package(nlohmann_json 3.10 CONFIG)
ordo_find_package(CLI11 CONFIG)
ordo_find_package(PkgConfig)
ordo_pkg_module(OPENBLAS openblas)
ordo_pkg_module(SENTENCEPIECE sentencepiece)
ordo_pkg_module(PCRE2 libpcre2-8)
ordo_pkg_module(ORDO_ICU icu-uc)
# The CLI's PNG plots (ordo ppl --plot x.png) are drawn with cairo.
ordo_pkg_module(CAIRO cairo)
# `ordo serve`: Debian's cpp-httplib is a compiled library (built with OpenSSL, zlib and brotli);
# its pkg-config file carries the matching CPPHTTPLIB_* defines.
ordo_pkg_module(HTTPLIB cpp-httplib)
