# The version string says what was built: git describe plus the optional parts found.
find_package(Git QUIET)
set(GPUFORGE_GIT_DESCRIBE "v${PROJECT_VERSION}")
if(GIT_FOUND AND EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/.git)
  execute_process(COMMAND ${GIT_EXECUTABLE} describe --always --dirty --tags
                  WORKING_DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR}
                  OUTPUT_VARIABLE _describe OUTPUT_STRIP_TRAILING_WHITESPACE
                  ERROR_QUIET RESULT_VARIABLE _rc)
  if(_rc EQUAL 0 AND _describe)
    set(GPUFORGE_GIT_DESCRIBE "${_describe}")
  endif()
endif()
set(GPUFORGE_VERSION_CC ${CMAKE_CURRENT_BINARY_DIR}/generated/build_info.cc)
configure_file(${CMAKE_CURRENT_SOURCE_DIR}/cmake/build_info.cc.in ${GPUFORGE_VERSION_CC} @ONLY)
