#pragma once

// Node sets as ClusterShell's `nodeset` reads them: hostlist patterns and @groups joined by set
// operators, so `--nodes` can say "gpu[001-004],@login", "@gpu!gpu003" or
// "@role:compute&@rack:r1". The groups themselves are data (the cli builds them from the
// inventory); this file only knows the syntax and the set algebra.

#include <cstddef>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "gpuforge/base/hostlist.h"
#include "gpuforge/base/result.h"

namespace gpuforge::nodeset {

// Group name ("gpu", "role:compute", "profile:hgx-h200", "*") -> member names in order.
using Groups = std::map<std::string, std::vector<std::string>, std::less<>>;

// Evaluates `expr`: operands are hostlist patterns (hostlist.h) or "@NAME" looked up in
// `groups`; between them, outside brackets, ',' or ' ' is union, '!' difference, '&'
// intersection and '^' symmetric difference, applied strictly left to right with no precedence,
// as ClusterShell's NodeSet does ("a[1-5]!a3,a7" is a[1-2,4-5,7]). The result keeps the order in
// which names first joined, without duplicates; it may be empty ("@gpu&@login").
// Errors name the operand: an empty one ("a,,b", a leading or trailing operator), a hostlist
// error, an unknown group (with the closest known one: "did you mean '@gpu'?"), a result larger
// than `limit`, more than kMaxOperands operands, operands expanding to more than
// kMaxOperandNames names together.
// The most operands one expression may join: every operand is expanded in full, so each costs
// up to kMaxExpansion names of work (#28 item 16: "n[0-999999]!n[0-999999]!..." cost 0.8 s of
// CPU per operand). A hand-written --nodes rarely has ten.
inline constexpr std::size_t kMaxOperands = 64;
// The most names all operands may expand to together.
inline constexpr std::size_t kMaxOperandNames = std::size_t{4} << 20;

Result<std::vector<std::string>> Evaluate(std::string_view expr, const Groups& groups,
                                          std::size_t limit = hostlist::kMaxExpansion);

}  // namespace gpuforge::nodeset
