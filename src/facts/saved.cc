#include "gpuforge/facts/saved.h"

#include <fmt/format.h>

#include <filesystem>
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

Result<SavedPci> LoadSavedPci(const std::string& dir, const model::Cluster& c) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) {
    return Error{fmt::format("--facts: {} is not a directory (write one with `gpuforge facts --save {}`)", dir, dir)};
  }
  SavedPci out;
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

}  // namespace gpuforge::facts
