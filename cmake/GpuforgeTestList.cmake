# Writes the CTest file for gpuforge_tests (run after each link, see tests/CMakeLists.txt):
# one CTest test per gtest suite, and one per test for the suites that match SLOW_SUITES
# (labelled "slow", started first). Why not gtest_discover_tests' one process per test: the
# sanitizer build's test binary costs ~0.4 s of CPU to start (it registers ~9 M sanitizer
# globals), and 1,150 starts were ~4x the CPU the unit tests themselves use (measured
# 2026-12-02: 3.3 CPU-min for all unit tests in one process, 12.8 CPU-min of starts).
#
#   cmake -D TEST_EXE=... -D OUT=... -D SLOW_SUITES=regex -D TIMEOUT=900 -P GpuforgeTestList.cmake
execute_process(COMMAND "${TEST_EXE}" --gtest_list_tests
  OUTPUT_VARIABLE listing ERROR_VARIABLE listing_err RESULT_VARIABLE rc TIMEOUT 120)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${TEST_EXE} --gtest_list_tests failed (${rc}): ${listing_err}")
endif()

string(REPLACE ";" "\\;" listing "${listing}")
string(REPLACE "\n" ";" lines "${listing}")
set(body "")
set(suite "")
set(suites 0)
set(singles 0)
foreach(line IN LISTS lines)
  # "Suite." or "Prefix/Suite/0.  # TypeParam = int"; tests: "  Name" or "  Name/0  # GetParam() = ..."
  string(REGEX REPLACE "[ ]+#.*$" "" line "${line}")
  if(line MATCHES "^([A-Za-z0-9_/]+)\\.$")
    set(suite "${CMAKE_MATCH_1}")
    if(NOT suite MATCHES "${SLOW_SUITES}")
      string(APPEND body "add_test([==[${suite}]==] [==[${TEST_EXE}]==] [==[--gtest_filter=${suite}.*]==])\n"
        "set_tests_properties([==[${suite}]==] PROPERTIES TIMEOUT ${TIMEOUT} LABELS unit)\n")
      math(EXPR suites "${suites} + 1")
    endif()
  elseif(line MATCHES "^  ([A-Za-z0-9_/]+)$" AND NOT suite STREQUAL "")
    # Taken before the next MATCHES, which overwrites CMAKE_MATCH_1: an empty test name would
    # be the filter "Suite.", which selects nothing and passes.
    set(test "${CMAKE_MATCH_1}")
    if(test STREQUAL "")
      message(FATAL_ERROR "an empty test name under ${suite} in ${TEST_EXE} --gtest_list_tests")
    endif()
    if(suite MATCHES "${SLOW_SUITES}")
      set(name "${suite}.${test}")
      string(APPEND body "add_test([==[${name}]==] [==[${TEST_EXE}]==] [==[--gtest_filter=${name}]==])\n"
        "set_tests_properties([==[${name}]==] PROPERTIES TIMEOUT ${TIMEOUT} LABELS slow COST 1000)\n")
      math(EXPR singles "${singles} + 1")
    endif()
  endif()
endforeach()
if(suites EQUAL 0)
  message(FATAL_ERROR "${TEST_EXE} --gtest_list_tests listed no test suite")
endif()
# Written whole, then renamed: CTest never reads half a list.
file(WRITE "${OUT}.tmp" "# Written by cmake/GpuforgeTestList.cmake: ${suites} suites, ${singles} slow tests.\n${body}")
file(RENAME "${OUT}.tmp" "${OUT}")
