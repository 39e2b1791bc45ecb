#include "gpuforge/base/fold.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
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

namespace gpuforge::base {
namespace {

bool NameChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '-' || c == '_'; }

// The length of a dotted quad at s[i] (each part 1-3 digits, at most 255), else 0.
std::size_t Ipv4At(std::string_view s, std::size_t i) {
  std::size_t j = i;
  for (int part = 0; part < 4; ++part) {
    if (part > 0) {
      if (j >= s.size() || s[j] != '.') return 0;
      ++j;
    }
    std::size_t k = j;
    int value = 0;
    while (k < s.size() && k - j < 4 && std::isdigit(static_cast<unsigned char>(s[k])) != 0) value = value * 10 + (s[k++] - '0');
    if (k == j || k - j > 3 || value > 255) return 0;
    j = k;
  }
  // Not the front of a longer number or name ("10.0.0.1234", "1.2.3.4.5").
  if (j < s.size() && (NameChar(s[j]) || (s[j] == '.' && j + 1 < s.size() && std::isdigit(static_cast<unsigned char>(s[j + 1])) != 0))) return 0;
  return j - i;
}

struct Slotted {
  std::string key;                   // the text with placeholders
  std::vector<std::string> kinds;    // per slot: "node" or "address"
  std::vector<std::string> values;   // per slot: what it stood for
};

Slotted Slot(std::string_view node, std::string_view text) {
  Slotted out;
  for (std::size_t i = 0; i < text.size();) {
    const bool boundary = i == 0 || (!NameChar(text[i - 1]) && text[i - 1] != '.');
    if (boundary && !node.empty() && text.substr(i).starts_with(node)) {
      const std::size_t end = i + node.size();
      // The node's name as a word, or as the first label of a longer dotted name.
      if (end == text.size() || !NameChar(text[end])) {
        out.key += "\x01";
        out.kinds.push_back("node");
        out.values.emplace_back(node);
        i = end;
        continue;
      }
    }
    if (boundary) {
      if (std::size_t len = Ipv4At(text, i); len > 0) {
        out.key += "\x02";
        out.kinds.push_back("address");
        out.values.emplace_back(text.substr(i, len));
        i += len;
        continue;
      }
    }
    out.key += text[i++];
  }
  return out;
}

}  // namespace

std::vector<FoldedReason> FoldReasons(const std::vector<std::pair<std::string, std::string>>& node_text) {
  std::vector<std::vector<std::size_t>> groups;  // indices into node_text
  std::vector<Slotted> slotted;
  std::unordered_map<std::string, std::size_t> index;
  for (std::size_t i = 0; i < node_text.size(); ++i) {
    slotted.push_back(Slot(node_text[i].first, node_text[i].second));
    auto [it, added] = index.try_emplace(slotted.back().key, groups.size());
    if (added) groups.emplace_back();
    groups[it->second].push_back(i);
  }
  std::vector<FoldedReason> out;
  for (const std::vector<std::size_t>& g : groups) {
    const Slotted& first = slotted[g.front()];
    FoldedReason r;
    std::vector<std::string> members;
    for (std::size_t i : g) members.push_back(node_text[i].first);
    r.nodes = hostlist::Fold(members);
    r.count = g.size();
    std::size_t slot = 0, addresses = 0;
    for (char c : first.key) {
      if (c != '\x01' && c != '\x02') {
        r.text += c;
        continue;
      }
      std::vector<std::string> values;
      for (std::size_t i : g) values.push_back(slotted[i].values[slot]);
      ++slot;
      const bool same = std::all_of(values.begin(), values.end(), [&](const std::string& v) { return v == values[0]; });
      if (same) {
        r.text += values[0];
        continue;
      }
      if (c == '\x01') {
        r.text += "{node}";  // the header lists them
        continue;
      }
      const std::string name = ++addresses == 1 ? "{address}" : fmt::format("{{address{}}}", addresses);
      r.text += name;
      r.details.push_back(name + ": " + hostlist::Fold(values));
    }
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace gpuforge::base
