# libFuzzer targets for the parsers of input gpuforge does not trust (tests/fuzz/README.md):
# one executable per input kind, tests/fuzz/fuzz_<kind>.cc -> build-fuzz/tests/fuzz/fuzz_<kind>.
#
# Configure a build directory of its own (clang 16 or newer; libFuzzer ships in libclang-rt-16-dev):
#   CC=clang-16 CXX=clang++-16 cmake -S . -B build-fuzz -G Ninja -DGPUFORGE_FUZZ=ON \
#     -DGPUFORGE_TESTS=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo
#   cmake --build build-fuzz --target gpuforge_fuzz
#
# The parsers are compiled once more, into gpuforge_fuzz_lib, with coverage instrumentation
# (-fsanitize=fuzzer-no-link) and AddressSanitizer + UndefinedBehaviorSanitizer; any UB report
# aborts, so the fuzzer records it as a crash. Only the stages the targets reach are in it (base,
# model, inventory, facts, plan, apply, probe, and remote's command and session helpers): half of
# gpuforge_lib's sources, no libssh, so a cold build stays cheap enough for CI.

option(GPUFORGE_FUZZ "Build the libFuzzer targets under tests/fuzz (clang 16 or newer)" OFF)
if(NOT GPUFORGE_FUZZ)
  return()
endif()
# 16: the sources capture structured bindings in lambdas (C++20), which clang 14 refuses.
if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang" OR CMAKE_CXX_COMPILER_VERSION VERSION_LESS 16)
  message(FATAL_ERROR "gpuforge: GPUFORGE_FUZZ=ON needs clang 16 or newer (libFuzzer); configure with "
                      "CC=clang-16 CXX=clang++-16 (Debian: clang-16 libclang-rt-16-dev)")
endif()
if(GPUFORGE_SANITIZE)
  message(FATAL_ERROR "gpuforge: GPUFORGE_FUZZ=ON brings its own sanitizers; leave GPUFORGE_SANITIZE off")
endif()

set(_fuzz_sanitizers -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer)

set(_fuzz_dirs base model inventory facts plan apply probe)
set(GPUFORGE_FUZZ_LIB_SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/src/remote/command.cc
                              ${CMAKE_CURRENT_SOURCE_DIR}/src/remote/session.cc
                              ${CMAKE_CURRENT_SOURCE_DIR}/src/report/init_yaml.cc)
foreach(_dir IN LISTS _fuzz_dirs)
  file(GLOB_RECURSE _srcs CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/src/${_dir}/*.cc)
  list(APPEND GPUFORGE_FUZZ_LIB_SOURCES ${_srcs})
endforeach()

add_library(gpuforge_fuzz_lib STATIC EXCLUDE_FROM_ALL ${GPUFORGE_FUZZ_LIB_SOURCES})
target_include_directories(gpuforge_fuzz_lib PUBLIC ${CMAKE_CURRENT_SOURCE_DIR}/include
                                               PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/src)
# gpuforge_warnings less one: the NCCL and RDMA probes are built here without their headers
# (nothing calls them), which leaves constants only those code paths use.
target_compile_options(gpuforge_fuzz_lib PUBLIC ${_fuzz_sanitizers}
  PRIVATE -fsanitize=fuzzer-no-link $<TARGET_PROPERTY:gpuforge_warnings,INTERFACE_COMPILE_OPTIONS>
          -Wno-unused-const-variable)
target_link_libraries(gpuforge_fuzz_lib
  PUBLIC fmt::fmt yaml-cpp nlohmann_json::nlohmann_json spdlog::spdlog
  PRIVATE OpenSSL::Crypto pugixml::pugixml Threads::Threads ${CMAKE_DL_LIBS})

add_custom_target(gpuforge_fuzz)
file(GLOB GPUFORGE_FUZZ_TARGETS CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/tests/fuzz/fuzz_*.cc)
foreach(_src IN LISTS GPUFORGE_FUZZ_TARGETS)
  get_filename_component(_name ${_src} NAME_WE)
  add_executable(${_name} EXCLUDE_FROM_ALL ${_src})
  set_target_properties(${_name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/tests/fuzz)
  target_include_directories(${_name} PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/tests/fuzz)
  target_compile_options(${_name} PRIVATE -fsanitize=fuzzer)
  target_link_options(${_name} PRIVATE -fsanitize=fuzzer ${_fuzz_sanitizers})
  target_link_libraries(${_name} PRIVATE gpuforge_fuzz_lib gpuforge_warnings)
  add_dependencies(gpuforge_fuzz ${_name})
endforeach()
