#pragma once

// Targets named only by their node, for tests that drive the recording fake
// (fake_session.h), which answers by node name.

#include <initializer_list>
#include <vector>

#include "gpuforge/remote/target.h"

namespace gpuforge::remote::testing {

inline std::vector<Target> Targets(std::initializer_list<const char*> nodes) {
  std::vector<Target> out;
  for (const char* n : nodes) {
    Target t;
    t.node = n;
    out.push_back(t);
  }
  return out;
}

}  // namespace gpuforge::remote::testing
