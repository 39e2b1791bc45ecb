#pragma once

// Facts kept between commands (#13 part 1): `gpuforge facts --save DIR` writes each node's
// gather output as DIR/NODE.facts, byte for byte what the node printed, and `render` / `plan`
// with `--facts DIR` parse it back with the same ParseGather, so a saved node is judged by the
// same checks as a live one. What render takes from it is what only the node can say: the
// measured PCI tree (the NCCL topology file is written from that tree only, never from the
// inventory's bus ids) and each GPU's device minor (gres.conf's File=).

#include <map>
#include <string>
#include <vector>

#include "gpuforge/base/result.h"
#include "gpuforge/facts/collect.h"
#include "gpuforge/model/cluster.h"
#include "gpuforge/model/measured_gpu.h"
#include "gpuforge/model/pci_tree.h"

namespace gpuforge::facts {

// DIR/NODE.facts for every node whose facts parsed (Collected::raw, CollectOptions::keep_raw),
// each written atomically (a reader never sees half a file); DIR is created when missing.
// Returns the number of files written, or the first write error, naming the file.
Result<std::size_t> SaveGathered(const std::string& dir, const Collected& collected);

struct SavedMeasured {
  std::map<std::string, model::PciTree> trees;  // node -> its measured tree
  // Per node without a usable tree, why: "no DIR/NODE.facts", or the section's refusal.
  std::vector<std::pair<std::string, std::string>> missing;
  // node -> its GPUs in PCI bus order, each with the minor its driver gave it; only nodes
  // where every GPU nvidia-smi listed had a bus id and a minor.
  std::map<std::string, std::vector<model::MeasuredGpu>> gpus;
  // Per node with a saved file but no usable GPU list, why (no nvidia-smi, no -q -x section).
  std::vector<std::pair<std::string, std::string>> gpus_missing;
};

// What the cluster's nodes measured, from DIR. A node without a file is `missing`, not an
// error (it renders no topology file, with the reason); a file that is there but does not
// parse is an error naming the file and the node, so a damaged save is not mistaken for an
// unmeasured node.
Result<SavedMeasured> LoadSavedMeasured(const std::string& dir, const model::Cluster& c);

// The GPUs of one node's facts in PCI bus order with their minors, or why they are not
// known: every GPU the query listed must have a bus id and a <minor_number> from -q -x, and no
// two may share a minor.
Result<std::vector<model::MeasuredGpu>> MeasuredGpusOf(const NodeFacts& f);

// The saved facts of the named nodes (every node when `nodes` is empty), parsed whole: what
// `cabling --facts DIR` measures from. A node without a file is `missing`; a file that does not
// parse is an error naming it, as for LoadSavedMeasured.
struct SavedFacts {
  std::vector<NodeFacts> nodes;
  std::vector<std::pair<std::string, std::string>> missing;  // node, why
};
Result<SavedFacts> LoadSavedFacts(const std::string& dir, const model::Cluster& c, const std::vector<std::string>& nodes);

}  // namespace gpuforge::facts
