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

// Per-node failure messages folded on their reason, the way `clush` folds "exited with exit
// code 255" across nodes, even where each message names its own node: in each node's text, the
// node's name (as a word, or as the first label of a dotted name: "gpu01.ib.lab") becomes
// "{node}" and each IPv4 address "{address}" (the second "{address2}", ...), and nodes whose
// texts then agree fold. A placeholder every member gave the same value is put back ("connect
// through 10.0.0.1" stays), the others are folded out: `details` says what they stood for,
// "{address}: 10.0.0.[11-14]". `text` is the folded reason; groups in order of first node.
struct FoldedReason {
  std::string nodes;  // folded hostlist
  std::size_t count = 0;
  std::string text;
  std::vector<std::string> details;  // "{address}: 10.0.0.[11-14]"
};
std::vector<FoldedReason> FoldReasons(const std::vector<std::pair<std::string, std::string>>& node_text);

}  // namespace gpuforge::base
