# The version string says what was built: git describe plus the optional parts found.
find_package(Git QUIET)
set(GPUFORGE_GIT_DESCRIBE "v${PROJECT_VERSION}")
set(GPUFORGE_GIT_REVISION "")
# The manual pages' date: the commit's, so two builds of one commit write the same pages;
# SOURCE_DATE_EPOCH (reproducible builds) or today outside a git checkout.
string(TIMESTAMP GPUFORGE_MAN_DATE "%Y-%m-%d" UTC)
string(TIMESTAMP GPUFORGE_CHANGELOG_DATE "%a, %d %b %Y %H:%M:%S +0000" UTC)
if(GIT_FOUND AND EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/.git)
  execute_process(COMMAND ${GIT_EXECUTABLE} describe --always --dirty --tags
                  WORKING_DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR}
                  OUTPUT_VARIABLE _describe OUTPUT_STRIP_TRAILING_WHITESPACE
                  ERROR_QUIET RESULT_VARIABLE _rc)
  if(_rc EQUAL 0 AND _describe)
    set(GPUFORGE_GIT_DESCRIBE "${_describe}")
  endif()
  execute_process(COMMAND ${GIT_EXECUTABLE} rev-parse HEAD
                  WORKING_DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR}
                  OUTPUT_VARIABLE _revision OUTPUT_STRIP_TRAILING_WHITESPACE
                  ERROR_QUIET RESULT_VARIABLE _rc)
  if(_rc EQUAL 0)
    set(GPUFORGE_GIT_REVISION "${_revision}")
  endif()
  execute_process(COMMAND ${GIT_EXECUTABLE} log -1 --format=%cs
                  WORKING_DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR}
                  OUTPUT_VARIABLE _date OUTPUT_STRIP_TRAILING_WHITESPACE
                  ERROR_QUIET RESULT_VARIABLE _rc)
  if(_rc EQUAL 0 AND _date MATCHES "^[0-9]+-[0-9]+-[0-9]+$")
    set(GPUFORGE_MAN_DATE "${_date}")
  endif()
  execute_process(COMMAND ${GIT_EXECUTABLE} log -1 --format=%cD
                  WORKING_DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR}
                  OUTPUT_VARIABLE _date OUTPUT_STRIP_TRAILING_WHITESPACE
                  ERROR_QUIET RESULT_VARIABLE _rc)
  if(_rc EQUAL 0 AND _date)
    set(GPUFORGE_CHANGELOG_DATE "${_date}")
  endif()
endif()
# The file is written by gpuforge_write_build_info(), called once every optional part is known
# (the kernels are found after gpuforge_lib exists).
set(GPUFORGE_VERSION_CC ${CMAKE_CURRENT_BINARY_DIR}/generated/build_info.cc)
function(gpuforge_write_build_info)
  set(GPUFORGE_COMPILER "${CMAKE_CXX_COMPILER_ID} ${CMAKE_CXX_COMPILER_VERSION}")
  configure_file(${CMAKE_CURRENT_SOURCE_DIR}/cmake/build_info.cc.in ${GPUFORGE_VERSION_CC} @ONLY)
endfunction()
