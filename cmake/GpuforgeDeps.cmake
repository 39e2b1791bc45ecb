# Required dependencies come from Debian's -dev packages (scripts/setup.sh installs them).
find_package(fmt REQUIRED)
find_package(spdlog REQUIRED)
find_package(yaml-cpp REQUIRED)
find_package(nlohmann_json 3.10 REQUIRED)
find_package(CLI11 REQUIRED)
find_package(PkgConfig REQUIRED)
pkg_check_modules(LIBSSH REQUIRED IMPORTED_TARGET libssh)
# SHA-256 (base/sha256.cc) is OpenSSL's EVP; libssh links libcrypto already.
find_package(OpenSSL REQUIRED)
# nvidia-smi -q -x and the NCCL topology XML read back in tests are parsed with pugixml.
find_package(pugixml REQUIRED)

# Optional at build time: gpuforge loads CUDA, NCCL, NVML and libibverbs with dlopen at run
# time, so only their headers matter here, and a machine without them still builds.
find_path(GPUFORGE_CUDA_INCLUDE cuda.h PATHS /usr/local/cuda/include ENV CUDA_HOME PATH_SUFFIXES include)
find_path(GPUFORGE_NCCL_INCLUDE nccl.h PATHS /usr/local/cuda/include /usr/include ENV NCCL_HOME PATH_SUFFIXES include)
find_path(GPUFORGE_IBVERBS_INCLUDE infiniband/verbs.h)
set(GPUFORGE_HAVE_CUDA OFF)
set(GPUFORGE_HAVE_NCCL OFF)
set(GPUFORGE_HAVE_IBVERBS OFF)
if(GPUFORGE_CUDA_INCLUDE)
  set(GPUFORGE_HAVE_CUDA ON)
endif()
if(GPUFORGE_NCCL_INCLUDE)
  set(GPUFORGE_HAVE_NCCL ON)
endif()
if(GPUFORGE_IBVERBS_INCLUDE)
  set(GPUFORGE_HAVE_IBVERBS ON)
endif()
message(STATUS "gpuforge: CUDA headers ${GPUFORGE_HAVE_CUDA}, NCCL headers ${GPUFORGE_HAVE_NCCL}, ibverbs headers ${GPUFORGE_HAVE_IBVERBS}, libssh ${LIBSSH_FOUND}")
