#include "gpuforge/base/fold.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

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

namespace gpuforge::base {
namespace {

struct Word {
  std::string_view before, core, after;
};

std::vector<Word> Words(std::string_view s) {
  std::vector<Word> out;
  std::size_t i = 0;
  while (i <= s.size()) {
    std::size_t j = s.find(' ', i);
    if (j == std::string_view::npos) j = s.size();
    std::string_view w = s.substr(i, j - i);
    std::size_t b = 0;
    while (b < w.size() && std::string_view("(\"'").find(w[b]) != std::string_view::npos) ++b;
    std::size_t e = w.size();
    while (e > b && std::string_view(")\"',:;.").find(w[e - 1]) != std::string_view::npos) --e;
    out.push_back({w.substr(0, b), w.substr(b, e - b), w.substr(e)});
    i = j + 1;
  }
  return out;
}

}  // namespace

std::vector<FoldedMessage> FoldAlike(const std::vector<std::string>& keys, const std::vector<std::string>& messages,
                                     const std::function<bool(std::size_t, std::string_view)>& is_name) {
  struct Group {
    std::vector<std::size_t> members;
    std::vector<Word> shape;                        // the first member's words
    std::vector<std::vector<std::string>> names;    // per word position: names seen (name positions only)
    std::vector<bool> slot;                         // word position holds a name
  };
  std::vector<Group> groups;
  std::unordered_map<std::string, std::size_t> index;
  for (std::size_t m = 0; m < messages.size(); ++m) {
    std::vector<Word> words = Words(messages[m]);
    std::vector<bool> slot(words.size());
    // The key: the caller's key, then each word with name cores blanked out.
    std::string key = m < keys.size() ? keys[m] : std::string();
    key += '\x1f';
    for (std::size_t w = 0; w < words.size(); ++w) {
      slot[w] = !words[w].core.empty() && is_name(m, words[w].core);
      key.append(words[w].before);
      key += slot[w] ? std::string_view("\x01") : words[w].core;
      key.append(words[w].after);
      key += ' ';
    }
    auto [it, added] = index.try_emplace(key, groups.size());
    if (added) {
      Group g;
      g.shape = words;
      g.slot = slot;
      g.names.resize(words.size());
      groups.push_back(std::move(g));
    }
    Group& g = groups[it->second];
    g.members.push_back(m);
    for (std::size_t w = 0; w < words.size(); ++w) {
      if (!slot[w]) continue;
      Result<std::vector<std::string>> names = hostlist::Expand(words[w].core);
      if (names.ok()) {
        g.names[w].insert(g.names[w].end(), names->begin(), names->end());
      } else {
        g.names[w].emplace_back(words[w].core);
      }
    }
  }
  std::vector<FoldedMessage> out;
  out.reserve(groups.size());
  for (Group& g : groups) {
    if (g.members.size() == 1) {
      out.push_back({messages[g.members.front()], g.members});
      continue;
    }
    std::string text;
    for (std::size_t w = 0; w < g.shape.size(); ++w) {
      if (w > 0) text += ' ';
      text.append(g.shape[w].before);
      text += g.slot[w] ? hostlist::Fold(g.names[w]) : std::string(g.shape[w].core);
      text.append(g.shape[w].after);
    }
    out.push_back({std::move(text), g.members});
  }
  return out;
}

std::string FoldEndpoints(const std::vector<std::string>& ends) {
  // device -> ports and port -> devices, each in first-seen order.
  std::vector<std::pair<std::string, std::vector<std::string>>> by_device, by_port;
  std::vector<std::string> plain;
  auto add = [](auto& list, const std::string& key, const std::string& value) {
    auto it = std::find_if(list.begin(), list.end(), [&](const auto& e) { return e.first == key; });
    if (it == list.end()) it = list.insert(list.end(), {key, {}});
    it->second.push_back(value);
  };
  for (const std::string& e : ends) {
    const std::size_t colon = e.rfind(':');
    if (colon == std::string::npos) {
      plain.push_back(e);
      continue;
    }
    add(by_device, e.substr(0, colon), e.substr(colon + 1));
    add(by_port, e.substr(colon + 1), e.substr(0, colon));
  }
  // Devices folded per port, then identical device sets with their ports folded.
  std::vector<std::string> a;
  {
    std::vector<std::pair<std::string, std::vector<std::string>>> devices_ports;
    for (const auto& [port, devices] : by_port) add(devices_ports, hostlist::Fold(devices), port);
    for (const auto& [devices, ports] : devices_ports) {
      for (const auto& p : ports) a.push_back(fmt::format("{}:{}", devices, p));
    }
  }
  std::vector<std::string> b;
  {
    std::vector<std::pair<std::string, std::vector<std::string>>> ports_devices;
    for (const auto& [device, ports] : by_device) add(ports_devices, hostlist::Fold(ports), device);
    for (const auto& [ports, devices] : ports_devices) {
      // "b200-[01-02]:ens1f0,ens2f0" would read as a second name "ens2f0": a port list with a
      // comma outside brackets is written one port at a time.
      int depth = 0;
      bool comma = false;
      for (char c : ports) {
        depth += c == '[' ? 1 : c == ']' ? -1 : 0;
        comma = comma || (c == ',' && depth == 0);
      }
      const std::string folded = hostlist::Fold(devices);
      if (!comma) {
        b.push_back(fmt::format("{}:{}", folded, ports));
        continue;
      }
      Result<std::vector<std::string>> each = hostlist::Expand(ports);
      for (const std::string& p : each.ok() ? *each : std::vector<std::string>{ports}) {
        b.push_back(fmt::format("{}:{}", folded, p));
      }
    }
  }
  std::vector<std::string>& best = b.size() < a.size() ? b : a;
  if (!plain.empty()) best.push_back(hostlist::Fold(plain));
  return fmt::format("{}", fmt::join(best, ", "));
}

}  // namespace gpuforge::base
