#pragma once

// Facts kept between commands (#13 part 1): `gpuforge facts --save DIR` writes each node's
// gather output as DIR/NODE.facts, byte for byte what the node printed, and `render` / `plan`
// with `--facts DIR` parse it back with the same ParseGather, so a saved node is judged by the
// same checks as a live one. What render takes from it is the measured PCI tree: the NCCL
// topology file is written from that tree only, never from the inventory's bus ids.

#include <map>
#include <string>
#include <vector>

#include "gpuforge/base/result.h"
#include "gpuforge/facts/collect.h"
#include "gpuforge/model/cluster.h"
#include "gpuforge/model/pci_tree.h"

namespace gpuforge::facts {

// DIR/NODE.facts for every node whose facts parsed (Collected::raw, CollectOptions::keep_raw),
// each written atomically (a reader never sees half a file); DIR is created when missing.
// Returns the number of files written, or the first write error, naming the file.
Result<std::size_t> SaveGathered(const std::string& dir, const Collected& collected);

struct SavedPci {
  std::map<std::string, model::PciTree> trees;  // node -> its measured tree
  // Per node without a usable tree, why: "no DIR/NODE.facts", or the section's refusal.
  std::vector<std::pair<std::string, std::string>> missing;
};

// The measured PCI trees of the cluster's nodes from DIR. A node without a file is `missing`,
// not an error (it renders no topology file, with the reason); a file that is there but does
// not parse is an error naming the file and the node, so a damaged save is not mistaken for
// an unmeasured node.
Result<SavedPci> LoadSavedPci(const std::string& dir, const model::Cluster& c);

}  // namespace gpuforge::facts
