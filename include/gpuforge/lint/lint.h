#pragma once

// Design lint: the cluster model held against the rules of the two guides in shared/seeds/.
// Each rule has a stable id, a severity, a source (guide file and section) and typed
// parameters whose defaults the inventory can override under `lint.thresholds` as
// "<rule id>.<param>: value".

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "gpuforge/base/diag.h"
#include "gpuforge/model/cluster.h"
#include "gpuforge/model/fabric.h"

namespace gpuforge::lint {

enum class Severity { kInfo, kWarning, kError };
const char* ToString(Severity s);  // "info" | "warning" | "error"

// One tunable threshold of a rule.
struct ParamSpec {
  std::string_view name;  // "max_gpus"
  double default_value;
  std::string_view unit;  // "GPUs", "W", "bytes/s", "ratio", ...
  std::string_view doc;   // one line: what it bounds and where the default comes from
};

struct Finding {
  std::string rule;  // stable id, "fabric.ethernet_scale"
  Severity severity = Severity::kWarning;
  std::string message;               // one line naming the objects and the numbers
  std::vector<std::string> objects;  // names of the nodes, switches, racks... involved
  SourcePos where;                   // where in the inventory to look; at least the file
  std::string source;                // guide file and section the rule comes from
};

// What a rule sees besides the model: its parameters (defaults or overrides) and a sink.
class RuleContext {
 public:
  virtual ~RuleContext() = default;
  // The value of this rule's parameter `name` after inventory overrides.
  virtual double Param(std::string_view name) const = 0;
  virtual void Report(std::string message, std::vector<std::string> objects, SourcePos where) = 0;
  // Report with a severity other than the rule's default (e.g. a warning tier of a rule).
  virtual void Report(Severity severity, std::string message, std::vector<std::string> objects,
                      SourcePos where) = 0;
};

using RuleFn = void (*)(const model::Cluster&, const model::Fabric&, RuleContext&);

struct Rule {
  std::string_view id;
  Severity severity;
  std::string_view summary;  // one line: what the rule checks
  std::string_view source;   // "000_bf90931f775ecd9c.txt, Networking: The Hidden Bottleneck"
  std::vector<ParamSpec> params;
  RuleFn check;
};

// Every rule, in a stable documented order.
std::span<const Rule> Rules();
const Rule* FindRule(std::string_view id);

struct LintResult {
  std::vector<Finding> findings;  // errors first, then warnings, then info; stable within
  std::size_t errors = 0;
  std::size_t warnings = 0;
  std::size_t infos = 0;
};

// Runs every enabled rule against one AnalyzeFabric picture of the cluster. Parameters come
// from cluster.lint.thresholds ("<rule id>.<param>"), else the ParamSpec default. Overrides
// naming an unknown rule or parameter, negative overrides, and disabled ids that name no rule
// are reported as findings of rule "lint.config" (error), which is not in Rules() and cannot
// be disabled. The rules and their sources are listed in docs/lint.md.
LintResult Lint(const model::Cluster& cluster);

}  // namespace gpuforge::lint
