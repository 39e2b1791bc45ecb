#include "gpuforge/base/nodeset.h"

#include <fmt/format.h>

#include <algorithm>
#include <unordered_set>

#include "gpuforge/base/names.h"

namespace gpuforge::nodeset {
namespace {

struct Operand {
  char op;  // the operator before it; ',' for the first
  std::string_view text;
  std::size_t column;
};

Result<std::vector<Operand>> Split(std::string_view expr) {
  std::vector<Operand> out;
  int depth = 0;
  char op = ',';
  std::size_t start = 0;
  auto close = [&](std::size_t end) -> Status {
    if (end == start) {
      return Error{fmt::format("nodeset \"{}\": empty operand at column {}", expr, start)};
    }
    out.push_back({op, expr.substr(start, end - start), start});
    return Status::Ok();
  };
  for (std::size_t i = 0; i < expr.size(); ++i) {
    const char c = expr[i];
    if (c == '[') ++depth;
    if (c == ']') --depth;
    if (depth != 0) continue;
    if (c == ',' || c == ' ' || c == '!' || c == '&' || c == '^') {
      Status s = close(i);
      if (!s.ok()) return s.error();
      op = c == ' ' ? ',' : c;
      start = i + 1;
    }
  }
  Status s = close(expr.size());
  if (!s.ok()) return s.error();
  return out;
}

Result<std::vector<std::string>> Members(std::string_view expr, const Operand& o, const Groups& groups,
                                         std::size_t limit) {
  if (o.text.front() != '@') {
    Result<std::vector<std::string>> names = hostlist::Expand(o.text, limit);
    if (!names.ok()) return Error{fmt::format("nodeset \"{}\": at column {}: {}", expr, o.column, names.error().message)};
    return names;
  }
  const std::string_view name = o.text.substr(1);
  if (auto it = groups.find(name); it != groups.end()) return it->second;
  std::vector<std::string> known;
  for (const auto& [g, members] : groups) known.push_back(g);
  std::string hint;
  if (auto near = names::Closest(name, known)) hint = fmt::format("; did you mean '@{}'?", *near);
  std::string list;
  for (const std::string& g : known) list += (list.empty() ? "" : ", ") + ("@" + g);
  return Error{fmt::format("nodeset \"{}\": unknown group '{}' at column {}{} (known: {})", expr, o.text, o.column, hint,
                           list.empty() ? "none" : list)};
}

// An expression quoted in an error: at most 80 characters of it.
std::string Excerpt(std::string_view expr) {
  return expr.size() <= 80 ? std::string(expr) : fmt::format("{}...", expr.substr(0, 77));
}

}  // namespace

Result<std::vector<std::string>> Evaluate(std::string_view expr, const Groups& groups, std::size_t limit) {
  if (expr.empty()) return Error{"nodeset \"\": empty expression"};
  Result<std::vector<Operand>> operands = Split(expr);
  if (!operands.ok()) return operands.error();
  if (operands->size() > kMaxOperands) {
    return Error{fmt::format("nodeset \"{}\": {} operands, over the limit of {}", Excerpt(expr), operands->size(),
                             kMaxOperands)};
  }
  std::vector<std::string> result;
  std::size_t expanded = 0;
  for (const Operand& o : *operands) {
    Result<std::vector<std::string>> right = Members(expr, o, groups, limit);
    if (!right.ok()) return right.error();
    expanded += right->size();
    if (expanded > kMaxOperandNames) {
      return Error{fmt::format("nodeset \"{}\": its operands expand to more than {} names together (at column {})",
                               Excerpt(expr), kMaxOperandNames, o.column)};
    }
    const std::unordered_set<std::string> rset(right->begin(), right->end());
    const std::unordered_set<std::string> lset(result.begin(), result.end());
    std::vector<std::string> next;
    switch (o.op) {
      case ',': {
        std::unordered_set<std::string> seen = lset;
        next = std::move(result);
        for (const std::string& n : *right) {
          if (seen.insert(n).second) next.push_back(n);
        }
        break;
      }
      case '!':
        for (const std::string& n : result) {
          if (!rset.contains(n)) next.push_back(n);
        }
        break;
      case '&':
        for (const std::string& n : result) {
          if (rset.contains(n)) next.push_back(n);
        }
        break;
      default: {  // '^'
        for (const std::string& n : result) {
          if (!rset.contains(n)) next.push_back(n);
        }
        std::unordered_set<std::string> seen;
        for (const std::string& n : *right) {
          if (!lset.contains(n) && seen.insert(n).second) next.push_back(n);
        }
      }
    }
    if (next.size() > limit) {
      return Error{fmt::format("nodeset \"{}\": more than {} names", expr, limit)};
    }
    result = std::move(next);
  }
  return result;
}

}  // namespace gpuforge::nodeset
