# What `cmake --install` puts where, and the Debian package CPack makes of it
# (scripts/package.sh; docs/install.md). Included after the gpuforge target exists.
#
# The manual pages and completion scripts are written by the built binary itself after each
# link (`gpuforge __man`, `gpuforge completion SHELL`): they come from the command tree that
# parses the flags, so they cannot drift from --help.
include(GNUInstallDirs)
# The Maintainer field; a site that rebuilds the package names itself (-DGPUFORGE_DEB_MAINTAINER=).
set(GPUFORGE_DEB_MAINTAINER "gpuforge developers <gpuforge@example.org>" CACHE STRING "The .deb's Maintainer field")

set(GPUFORGE_MAN_DIR ${CMAKE_BINARY_DIR}/man)
set(GPUFORGE_COMPLETIONS_DIR ${CMAKE_BINARY_DIR}/completions)
add_custom_command(TARGET gpuforge POST_BUILD
  COMMAND $<TARGET_FILE:gpuforge> __man ${GPUFORGE_MAN_DIR} ${GPUFORGE_MAN_DATE}
  COMMAND ${CMAKE_COMMAND} -E make_directory ${GPUFORGE_COMPLETIONS_DIR}
  COMMAND sh -c "\"$1\" completion bash > \"$2/gpuforge\" && \"$1\" completion zsh > \"$2/_gpuforge\" && \"$1\" completion fish > \"$2/gpuforge.fish\""
          sh $<TARGET_FILE:gpuforge> ${GPUFORGE_COMPLETIONS_DIR}
  COMMENT "gpuforge: manual pages and completion scripts from the command tree"
  VERBATIM)

# Installed, the binary finds its data at ../share/gpuforge (render/engine.cc
# DefaultTemplatesDir, validate/thresholds.cc DefaultModelTablePath).
install(TARGETS gpuforge RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/templates/ DESTINATION ${CMAKE_INSTALL_DATADIR}/gpuforge/templates)
install(FILES ${PROJECT_SOURCE_DIR}/inventories/validation/gpu-models.yaml
        DESTINATION ${CMAKE_INSTALL_DATADIR}/gpuforge/validation)
# The examples are data the README's commands use, not documentation: a system that leaves
# /usr/share/doc out (dpkg path-exclude in slim images) still has them.
install(DIRECTORY ${PROJECT_SOURCE_DIR}/inventories/examples/ DESTINATION ${CMAKE_INSTALL_DATADIR}/gpuforge/examples)
install(DIRECTORY ${GPUFORGE_MAN_DIR}/ DESTINATION ${CMAKE_INSTALL_MANDIR}/man1 FILES_MATCHING PATTERN "*.1")
# Where Debian's bash-completion, zsh and fish look for vendor completions.
install(FILES ${GPUFORGE_COMPLETIONS_DIR}/gpuforge DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions)
install(FILES ${GPUFORGE_COMPLETIONS_DIR}/_gpuforge DESTINATION ${CMAKE_INSTALL_DATADIR}/zsh/vendor-completions)
install(FILES ${GPUFORGE_COMPLETIONS_DIR}/gpuforge.fish DESTINATION ${CMAKE_INSTALL_DATADIR}/fish/vendor_completions.d)
install(FILES ${PROJECT_SOURCE_DIR}/README.md DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR}/docs)
# Debian policy 12.5: the licence in /usr/share/doc/PACKAGE/copyright, in the machine-readable
# format lintian reads; policy 12.7: a changelog.Debian.gz; lintian: man pages gzip -9n.
configure_file(${PROJECT_SOURCE_DIR}/cmake/debian/copyright.in ${CMAKE_BINARY_DIR}/debian/copyright @ONLY)
configure_file(${PROJECT_SOURCE_DIR}/cmake/debian/changelog.in ${CMAKE_BINARY_DIR}/debian/changelog @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/debian/copyright DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(FILES ${CMAKE_BINARY_DIR}/debian/changelog DESTINATION ${CMAKE_INSTALL_DOCDIR} RENAME changelog.Debian)
# Each lintian tag the package keeps, with why (cmake/debian/lintian-overrides).
install(FILES ${PROJECT_SOURCE_DIR}/cmake/debian/lintian-overrides DESTINATION ${CMAKE_INSTALL_DATADIR}/lintian/overrides
        RENAME gpuforge)
install(CODE "
  file(GLOB _pages \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_MANDIR}/man1/gpuforge*.1\")
  foreach(_f IN LISTS _pages ITEMS \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_DOCDIR}/changelog.Debian\")
    execute_process(COMMAND gzip -9nf \${_f} RESULT_VARIABLE _rc)
    if(NOT _rc EQUAL 0)
      message(FATAL_ERROR \"gzip \${_f} failed\")
    endif()
  endforeach()
")

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME gpuforge)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_VENDOR "gpuforge")
set(CPACK_PACKAGE_CONTACT "${GPUFORGE_DEB_MAINTAINER}")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "check, configure and validate GPU training clusters")
# The synopsis is CPACK_PACKAGE_DESCRIPTION_SUMMARY; this is the extended description under it
# (lintian: description-synopsis-is-duplicated when it repeats the synopsis).
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION
  "gpuforge reads a YAML inventory of nodes, GPUs, NICs, switches, networks,
storage and scheduler; lints the design against two public guides; renders
and applies the nodes' OS, driver, NCCL, storage and Slurm or Kubernetes
configuration over SSH; and validates the nodes with built-in CUDA, NCCL,
RDMA and storage probes, judged against documented thresholds.")
set(CPACK_DEBIAN_PACKAGE_SECTION admin)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_RELEASE 1)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
set(CPACK_DEBIAN_COMPRESSION_TYPE xz)
# dlopen'ed at run time, each probe SKIPs with its reason without its library
# (src/probe/gpu/cuda_api.cc, nvml.cc, nccl, rdma): Suggests, never Depends. The names are
# Debian's (non-free: the NVIDIA driver's libraries, CUDA 12's cuBLASLt, NCCL; main:
# libibverbs1); NVIDIA's own repository names the driver libraries the same way.
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "libcuda1, libnvidia-ml1, libnccl2, libcublaslt12, libibverbs1")
include(CPack)
