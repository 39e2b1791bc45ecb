#include "gpuforge/facts/saved.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <set>
#include <system_error>

#include "gpuforge/base/files.h"
#include "gpuforge/base/read_file.h"
#include "gpuforge/facts/gather.h"

namespace gpuforge::facts {

namespace {

std::filesystem::path FileOf(const std::string& dir, const std::string& node) {
  // Node names are checked hostnames (inventory/loader: letters, digits, '-', '.'), never a
  // path: no '/' and not "." or "..".
  return std::filesystem::path(dir) / (node + ".facts");
}

}  // namespace

Result<std::size_t> SaveGathered(const std::string& dir, const Collected& collected) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Error{fmt::format("--save: cannot create {}: {}", dir, ec.message())};
  std::size_t written = 0;
  for (std::size_t i = 0; i < collected.gathered.size() && i < collected.raw.size(); ++i) {
    const Gathered& g = collected.gathered[i];
    if (!g.facts.ok() || collected.raw[i].empty()) continue;
    std::filesystem::path f = FileOf(dir, g.node);
    if (Status s = base::WriteFileAtomically(f, collected.raw[i], 0644); !s.ok()) {
      return Error{fmt::format("--save: node {}: {}", g.node, s.error().message)};
    }
    ++written;
  }
  return written;
}

Result<std::vector<model::MeasuredGpu>> MeasuredGpusOf(const NodeFacts& f) {
  const Section* xml = f.FindSection("nvidia-smi-xml");
  if (f.gpus.empty()) {
    const Section* q = f.FindSection("nvidia-smi-query");
    return Error{q != nullptr && q->outcome == Outcome::kAbsent ? "nvidia-smi is not installed"
                                                                 : "nvidia-smi listed no GPU"};
  }
  std::vector<model::MeasuredGpu> out;
  std::set<int> minors;
  for (const Gpu& g : f.gpus) {
    if (g.pci_bus_id.empty()) return Error{fmt::format("GPU {} has no PCI bus id", g.index)};
    if (!g.detail || !g.detail->minor_number) {
      if (xml == nullptr || xml->outcome != Outcome::kOk) return Error{"no nvidia-smi -q -x section"};
      return Error{fmt::format("GPU {} ({}) has no <minor_number> in nvidia-smi -q -x", g.index, g.pci_bus_id)};
    }
    if (!minors.insert(*g.detail->minor_number).second) {
      return Error{fmt::format("two GPUs report minor number {}", *g.detail->minor_number)};
    }
    std::optional<int> numa;
    for (const PciDevice& d : f.pci) {
      if (d.bdf == g.pci_bus_id) numa = d.numa_node;
    }
    out.push_back({g.pci_bus_id, *g.detail->minor_number, numa});
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.bdf < b.bdf; });
  return out;
}

Result<SavedMeasured> LoadSavedMeasured(const std::string& dir, const model::Cluster& c) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) {
    return Error{fmt::format("--facts: {} is not a directory (write one with `gpuforge facts --save {}`)", dir, dir)};
  }
  SavedMeasured out;
  for (const model::Node& n : c.nodes) {
    std::filesystem::path f = FileOf(dir, n.name);
    if (!std::filesystem::exists(f, ec)) {
      out.missing.emplace_back(n.name, fmt::format("no {}", f.string()));
      continue;
    }
    Result<std::string> text = base::ReadInputFile({f.string(), "saved facts", kMaxGatherBytes});
    if (!text.ok()) return Error{fmt::format("--facts: {}", text.error().message)};
    Result<NodeFacts> facts = ParseGather(n.name, *text);
    if (!facts.ok()) return Error{fmt::format("--facts: {}: {}", f.string(), facts.error().message)};
    if (Result<std::vector<model::MeasuredGpu>> g = MeasuredGpusOf(*facts); g.ok()) {
      out.gpus.emplace(n.name, std::move(*g));
    } else {
      out.gpus_missing.emplace_back(n.name, fmt::format("{}: {}", f.string(), g.error().message));
    }
    if (facts->pci_tree) {
      out.trees.emplace(n.name, std::move(*facts->pci_tree));
    } else {
      out.missing.emplace_back(n.name, facts->pci_tree_refused.empty()
                                           ? fmt::format("{} has no pci-tree section", f.string())
                                           : fmt::format("{}: {}", f.string(), facts->pci_tree_refused));
    }
  }
  return out;
}

Result<SavedFacts> LoadSavedFacts(const std::string& dir, const model::Cluster& c, const std::vector<std::string>& nodes) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) {
    return Error{fmt::format("--facts: {} is not a directory (write one with `gpuforge facts --save {}`)", dir, dir)};
  }
  std::vector<std::string> names = nodes;
  if (names.empty()) {
    for (const model::Node& n : c.nodes) names.push_back(n.name);
  }
  SavedFacts out;
  for (const std::string& name : names) {
    std::filesystem::path f = FileOf(dir, name);
    if (!std::filesystem::exists(f, ec)) {
      out.missing.emplace_back(name, fmt::format("no {}", f.string()));
      continue;
    }
    Result<std::string> text = base::ReadInputFile({f.string(), "saved facts", kMaxGatherBytes});
    if (!text.ok()) return Error{fmt::format("--facts: {}", text.error().message)};
    Result<NodeFacts> facts = ParseGather(name, *text);
    if (!facts.ok()) return Error{fmt::format("--facts: {}: {}", f.string(), facts.error().message)};
    out.nodes.push_back(std::move(*facts));
  }
  return out;
}

}  // namespace gpuforge::facts
