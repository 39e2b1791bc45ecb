#include "probe/gpu/dl.h"

#include <dlfcn.h>

namespace gpuforge::probe::internal {

void* Library::Symbol(const char* symbol) const {
  return handle == nullptr ? nullptr : dlsym(handle, symbol);
}

gpuforge::Result<Library> OpenLibrary(std::span<const char* const> names) {
  std::string why;
  for (const char* name : names) {
    // RTLD_LOCAL: the symbols stay ours, so two loaders cannot collide.
    if (void* h = dlopen(name, RTLD_NOW | RTLD_LOCAL)) return Library{h, name};
    const char* e = dlerror();
    why += why.empty() ? "" : "; ";
    why += e != nullptr ? e : std::string(name) + ": dlopen failed";
  }
  return Error{why};
}

}  // namespace gpuforge::probe::internal
