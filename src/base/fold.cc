#include "gpuforge/base/fold.h"

#include <unordered_map>

#include "gpuforge/base/hostlist.h"

namespace gpuforge::base {

std::vector<Folded> FoldIdentical(
    const std::vector<std::pair<std::string, std::string>>& node_text) {
  std::vector<std::vector<std::string>> members;
  std::vector<const std::string*> texts;
  std::unordered_map<std::string_view, std::size_t> index;
  for (const auto& [node, text] : node_text) {
    auto [it, added] = index.try_emplace(text, members.size());
    if (added) {
      members.emplace_back();
      texts.push_back(&text);
    }
    members[it->second].push_back(node);
  }
  std::vector<Folded> out;
  out.reserve(members.size());
  for (std::size_t g = 0; g < members.size(); ++g) {
    out.push_back({hostlist::Fold(members[g]), members[g].size(), *texts[g]});
  }
  return out;
}

}  // namespace gpuforge::base
