#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "gpuforge/base/result.h"

namespace gpuforge::hostlist {

// Slurm / ClusterShell hostlist expressions: "gpu[001-004]", "tux[0-5,12]", "a,b,c",
// "rack[1-2]-node[01-02]" (several bracket groups: the cartesian product, leftmost group
// varying slowest, as `scontrol show hostnames` and `nodeset -e` print them). Commas split names
// only outside brackets; inside, they split the ranges of one group.
// Zero padding is kept: a range's lower bound, as written, sets the width of every number it
// produces ("[001-010]" gives 001..010, "[8-10]" gives 8, 9, 10, "[098-100]" gives 098, 099,
// 100). Expansion also works on addresses: "10.0.0.[11-14]". Bounds are decimal, at most 18
// digits.

// The most names one expression may expand to; past this Expand refuses (a typo such as
// gpu[1-10000000] must not eat the controller's memory).
inline constexpr std::size_t kMaxExpansion = 1u << 20;
// The longest name an expression may produce: a DNS name is at most 253 characters (RFC 1035),
// and nothing longer can be a node. Names count bytes too (#28 item 16: a 1,000-character prefix
// times [0-999999] stayed under kMaxExpansion names and asked for gigabytes).
inline constexpr std::size_t kMaxNameLength = 255;
// The most bytes of names one expansion may hold, however the count and lengths combine.
inline constexpr std::size_t kMaxExpansionBytes = std::size_t{64} << 20;

// Expands an expression to the list of names, in order, duplicates kept as written.
// Errors: an empty expression or name ("a,,b"), whitespace, unbalanced or nested brackets, empty
// brackets or ranges ("[]", "[1,,2]"), reversed ranges ("[5-1]"), non-numeric or over-long
// bounds, an expansion larger than `limit` names, a name longer than kMaxNameLength or names
// together longer than kMaxExpansionBytes (all refused before anything is built). The error message
// quotes the expression and says what is wrong and where (0-based column within the expression,
// as "at column N"), e.g.
//   hostlist "gpu[5-1]": reversed range "5-1" at column 4
Result<std::vector<std::string>> Expand(std::string_view expr, std::size_t limit = kMaxExpansion);

// Folds names into the shortest expression Slurm would print: names that differ only in
// their last number, with the same prefix, suffix and padding width, are merged into one
// bracket group "gpu[001-004,007]". Input order does not matter; output is sorted by prefix
// then number; duplicates are dropped. Names without digits are kept as they are.
// Padding: "gpu01" and "gpu1" never merge, nor do "gpu001" and "gpu1000"; a number without a
// leading zero joins a padded group only when it has exactly that many digits ("gpu099" and
// "gpu100" fold to "gpu[099-100]"). A last number longer than 18 digits is kept as text.
// Expand(Fold(names)) gives the same set of names, provided they are plain host names (no ',',
// '[', ']' or whitespace); empty names are dropped.
std::string Fold(const std::vector<std::string>& names);

}  // namespace gpuforge::hostlist
