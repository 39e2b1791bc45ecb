#pragma once

// Identical per-node output shown once under the folded node list, the way ClusterShell's
// `clush -b` does: "gpu[01-04] (4)" above the text they all printed.

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
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

namespace gpuforge::base {

// Messages that say the same thing of different objects, folded into one (#28 item 22: a
// 128-node design printed 32 lines "leaf0001: 32 x 400 Gb/s down vs 16 up", one per leaf).
// Each message is cut into words at spaces; a word's core (without the punctuation
// `("'` before it and `)"',:;.` after it) is a name when `is_name(message index, core)` says so;
// the caller decides (lint: a hostlist all of whose names are objects of that finding).
// Messages whose words agree everywhere except in name cores fold: each name position becomes
// the folded hostlist of every name there ("leaf[0001-0032]: 32 x 400 Gb/s down ...",
// "(nodes gpu[0001-0128])"). Words that are not names must be equal, so figures that differ
// ("32 kW" against "20.8 kW") never fold. `keys` keeps apart what must never fold (the rule and
// severity); groups come in the order of their first message.
struct FoldedMessage {
  std::string text;
  std::vector<std::size_t> members;  // indexes into the input, in order
};
std::vector<FoldedMessage> FoldAlike(const std::vector<std::string>& keys, const std::vector<std::string>& messages,
                                     const std::function<bool(std::size_t, std::string_view)>& is_name);

// A list of "device:port" ends folded by hostlist, joined by ", ": "b200-[01-02]:ens1f0,
// b200-[01-02]:ens2f0" or "leaf3:[1-4]", whichever way gives fewer parts (devices folded per
// port, or ports per device). An end without ':' is folded as a plain name.
std::string FoldEndpoints(const std::vector<std::string>& ends);

}  // namespace gpuforge::base
