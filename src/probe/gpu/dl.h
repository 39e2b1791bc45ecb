#pragma once

// Opening the NVIDIA libraries (libcuda, NVML, cuBLASLt) at run time, so that one build runs on
// a machine without them and on a GPU node.

#include <span>
#include <string>

#include "gpuforge/base/result.h"

namespace gpuforge::probe::internal {

// A library opened with dlopen. It is deliberately never closed: libcuda and NVML start
// threads and register exit handlers, and unloading them while the process runs is a known
// way to crash at exit. The loaders open each library once per process.
struct Library {
  void* handle = nullptr;
  std::string name;                        // the name that loaded: "libcuda.so.1"
  void* Symbol(const char* symbol) const;  // nullptr when the library lacks it
};

// Opens the first of `names` that loads. The error names each one with dlerror's words.
gpuforge::Result<Library> OpenLibrary(std::span<const char* const> names);

}  // namespace gpuforge::probe::internal
