#pragma once

// Identical per-node output shown once under the folded node list, the way ClusterShell's
// `clush -b` does: "gpu[01-04] (4)" above the text they all printed.

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace gpuforge::base {

struct Folded {
  std::string nodes;   // folded hostlist, e.g. "gpu[01-04],head"
  std::size_t count = 0;
  std::string text;
};

// Groups by identical text; groups appear in the order of their first node.
std::vector<Folded> FoldIdentical(const std::vector<std::pair<std::string, std::string>>& node_text);

}  // namespace gpuforge::base
