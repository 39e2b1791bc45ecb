#include "gpuforge/report/junit.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <optional>

#include "report/format.h"
#include "report/xml.h"

namespace gpuforge::report {
namespace {

using validate::State;
using xml::Escape;

enum class Outcome { kPass, kFail, kError, kSkip };

struct Case {
  std::string name;
  std::string classname;
  Outcome outcome = Outcome::kPass;
  std::string type;     // the code
  std::string message;  // one line
  std::string body;     // detail, next step
  std::string out;      // <system-out>: what a passing case still has to say (a warning)
  std::optional<double> seconds;  // the run that gave it (validate); absent for lint and facts
};

struct Suite {
  std::string name;
  std::string hostname;
  std::vector<Case> cases;
};

std::string Seconds(double s) { return fmt::format("{:.3f}", std::max(0.0, s)); }

std::string Document(std::string_view title, const RunInfo& run, const std::vector<Suite>& suites) {
  std::size_t tests = 0, failures = 0, errors = 0;
  std::string body;
  // Ant's timestamp: ISO 8601 without a zone (JUnit.xsd's pattern); ours is UTC, said in the
  // "started" property with its Z.
  std::string stamp = Iso8601(run.started);
  const std::string local_stamp = stamp.substr(0, stamp.size() - 1);
  for (const Suite& s : suites) {
    std::size_t f = 0, e = 0, k = 0;
    std::string cases;
    for (const Case& c : s.cases) {
      cases += fmt::format("    <testcase name=\"{}\" classname=\"{}\"", Escape(c.name, true), Escape(c.classname, true));
      if (c.seconds) cases += fmt::format(" time=\"{}\"", Seconds(*c.seconds));
      std::string inner;
      switch (c.outcome) {
        case Outcome::kPass: break;
        case Outcome::kFail:
        case Outcome::kError: {
          const char* tag = c.outcome == Outcome::kFail ? "failure" : "error";
          (c.outcome == Outcome::kFail ? f : e) += 1;
          inner += fmt::format("      <{} type=\"{}\" message=\"{}\">{}</{}>\n", tag, Escape(c.type, true),
                               Escape(c.message, true), Escape(c.body), tag);
          break;
        }
        case Outcome::kSkip:
          ++k;
          inner += fmt::format("      <skipped type=\"{}\" message=\"{}\">{}</skipped>\n", Escape(c.type, true),
                               Escape(c.message, true), Escape(c.body));
          break;
      }
      if (!c.out.empty()) inner += fmt::format("      <system-out>{}</system-out>\n", Escape(c.out));
      cases += inner.empty() ? "/>\n" : ">\n" + inner + "    </testcase>\n";
    }
    tests += s.cases.size();
    failures += f;
    errors += e;
    body += fmt::format("  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"{}\" skipped=\"{}\" timestamp=\"{}\"{}>\n",
                        Escape(s.name, true), s.cases.size(), f, e, k, local_stamp,
                        s.hostname.empty() ? "" : fmt::format(" hostname=\"{}\"", Escape(s.hostname, true)));
    body += fmt::format("    <properties>\n      <property name=\"cluster\" value=\"{}\"/>\n"
                        "      <property name=\"started\" value=\"{}\"/>\n    </properties>\n",
                        Escape(run.cluster, true), stamp);
    body += cases + "  </testsuite>\n";
  }
  return fmt::format("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                     "<testsuites name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"{}\" time=\"{}\">\n{}</testsuites>\n",
                     Escape(title, true), tests, failures, errors, Seconds(run.seconds), body);
}

std::string Value(const validate::Verdict& v) { return format::Quantity(v.measured, v.unit); }

Case CaseOf(const validate::Verdict& v, bool strict, bool name_node) {
  Case c;
  c.name = (name_node ? v.node + ": " : "") + v.check + " " + v.entity;
  c.classname = "gpuforge.validate." + v.check;
  c.type = v.code;
  c.seconds = v.seconds;
  std::string value = Value(v);
  std::string line = v.code.empty() ? std::string(validate::ToString(v.state)) : v.code;
  if (!value.empty()) line += ": " + value;
  if (!v.threshold.empty()) line += (value.empty() ? ": " : " ") + ("(" + v.threshold + ")");
  c.message = line;
  std::string body;
  if (!v.detail.empty()) body += v.detail + "\n";
  if (!v.threshold.empty()) body += "threshold: " + v.threshold + "\n";
  if (!value.empty()) body += "measured: " + value + "\n";
  if (!v.next_step.empty()) body += "next: " + v.next_step + "\n";
  if (v.attempts > 1) body += fmt::format("attempts: {}\n", v.attempts);
  switch (v.state) {
    case State::kPass:
      if (!value.empty()) c.out = "measured: " + value + (v.threshold.empty() ? "" : " (" + v.threshold + ")") + "\n";
      break;
    case State::kWarn:
      if (strict) {
        c.outcome = Outcome::kFail;
        c.body = body;
      } else {
        c.out = "WARN " + line + "\n" + body;
      }
      break;
    case State::kFail:
      c.outcome = Outcome::kFail;
      c.body = body;
      break;
    case State::kError:
      c.outcome = Outcome::kError;
      c.body = body;
      break;
    case State::kSkip:
      c.outcome = Outcome::kSkip;
      // The reason is what a CI summary shows for a skipped test.
      c.message = v.detail.empty() ? line : v.detail;
      c.body = body;
      break;
  }
  return c;
}

bool NodeShaped(std::string_view check) {
  const validate::CheckInfo* info = validate::FindCheck(check);
  return info == nullptr || info->shape == validate::Shape::kNode;
}

}  // namespace

std::string ValidateJunit(const RunInfo& run, std::span<const validate::Verdict> verdicts) {
  std::vector<Suite> suites;
  std::map<std::string, std::size_t, std::less<>> index;
  Suite pairs{"pairs and groups", "", {}};
  for (const validate::Verdict& v : verdicts) {
    if (v.left_out) continue;  // a check that does not apply is no testcase (docs/validate.md)
    if (!NodeShaped(v.check)) {
      pairs.cases.push_back(CaseOf(v, run.strict, true));
      continue;
    }
    auto [it, fresh] = index.try_emplace(v.node, suites.size());
    if (fresh) suites.push_back({v.node, v.node, {}});
    suites[it->second].cases.push_back(CaseOf(v, run.strict, false));
  }
  if (!pairs.cases.empty()) suites.push_back(std::move(pairs));
  return Document("gpuforge validate " + run.cluster, run, suites);
}

std::vector<validate::Verdict> FactsVerdicts(const model::Cluster& c, const facts::Collected& collected) {
  std::vector<validate::Verdict> out;
  std::vector<std::string> gathered;
  for (const facts::Gathered& g : collected.gathered) {
    if (g.facts.ok()) {
      gathered.push_back(g.node);
      continue;
    }
    validate::Verdict v;
    v.check = "facts";
    v.node = g.node;
    v.entity = "node";
    const validate::CodeInfo row = validate::Code("facts.unavailable");
    v.code = std::string(row.code);
    v.state = row.severity;
    v.detail = g.facts.error().message;
    v.next_step = std::string(row.next_step);
    out.push_back(std::move(v));
  }
  std::vector<validate::Verdict> judged = validate::JudgeDrift(c, collected.drift, gathered);
  out.insert(out.end(), judged.begin(), judged.end());
  // Target order, as the other formats list nodes.
  std::stable_sort(out.begin(), out.end(), [&](const validate::Verdict& a, const validate::Verdict& b) {
    auto at = [&](const std::string& n) {
      return std::find_if(collected.gathered.begin(), collected.gathered.end(),
                          [&](const facts::Gathered& g) { return g.node == n; }) -
             collected.gathered.begin();
    };
    return at(a.node) < at(b.node);
  });
  return out;
}

std::string FactsJunit(const RunInfo& run, const model::Cluster& c, const facts::Collected& collected) {
  std::vector<validate::Verdict> verdicts = FactsVerdicts(c, collected);
  std::vector<Suite> suites;
  std::map<std::string, std::size_t, std::less<>> index;
  for (const validate::Verdict& v : verdicts) {
    auto [it, fresh] = index.try_emplace(v.node, suites.size());
    if (fresh) suites.push_back({v.node, v.node, {}});
    Case c = CaseOf(v, run.strict, false);
    c.classname = "gpuforge.facts";
    suites[it->second].cases.push_back(std::move(c));
  }
  return Document("gpuforge facts --check " + run.cluster, run, suites);
}

std::string LintJunit(const RunInfo& run, const model::Cluster& cluster, const lint::LintResult& result) {
  Suite suite{"lint " + cluster.name, "", {}};
  std::vector<std::string> ids;
  for (const lint::Rule& r : lint::Rules()) ids.emplace_back(r.id);
  for (const lint::Finding& f : result.findings) {
    if (std::find(ids.begin(), ids.end(), f.rule) == ids.end()) ids.push_back(f.rule);
  }
  const auto& disabled = cluster.lint.disabled;
  for (const std::string& id : ids) {
    const lint::Rule* rule = lint::FindRule(id);
    const std::string classname = "gpuforge.lint." + id;
    if (std::find(disabled.begin(), disabled.end(), id) != disabled.end()) {
      suite.cases.push_back({id, classname, Outcome::kSkip, "lint.disabled",
                             "disabled by the inventory's lint.disabled", "", "", std::nullopt});
      continue;
    }
    bool any = false;
    for (const lint::Finding& f : result.findings) {
      if (f.rule != id) continue;
      any = true;
      std::string objects;
      for (const std::string& o : f.objects) objects += (objects.empty() ? "" : ",") + o;
      Case c{id + (objects.empty() ? "" : ": " + objects), classname, Outcome::kPass, id, f.message, "", "", std::nullopt};
      std::string body = f.message + "\n";
      if (f.where.line > 0) body += "where: " + f.where.ToString() + "\n";
      if (!f.source.empty()) body += "source: " + f.source + "\n";
      if (f.severity == lint::Severity::kError) {
        c.outcome = Outcome::kFail;
        c.body = body;
      } else {
        c.out = fmt::format("{}: {}", lint::ToString(f.severity), body);
      }
      suite.cases.push_back(std::move(c));
    }
    if (!any) {
      suite.cases.push_back({id, classname, Outcome::kPass, "", "", "",
                             rule == nullptr ? "" : std::string(rule->summary) + "\n", std::nullopt});
    }
  }
  return Document("gpuforge lint " + cluster.name, run, {suite});
}

std::string CablingJunit(const RunInfo& run, std::string_view cluster, const facts::CablingResult& r, bool strict) {
  std::map<std::string, Suite> suites;
  std::vector<std::string> order;
  for (const facts::CableCheck& k : r.cables) {
    const std::string net = k.network.empty() ? std::string("fabric") : k.network;
    if (!suites.count(net)) {
      order.push_back(net);
      suites[net] = Suite{"cabling " + net, "", {}};
    }
    Case c;
    c.name = k.want.empty() ? k.near + " -> " + k.got : k.near + " -> " + k.want;
    c.classname = "gpuforge.cabling." + net;
    c.type = facts::CodeOf(k.state);
    c.message = fmt::format("{}: {}{}", facts::ToString(k.state), k.got.empty() ? "nothing" : k.got,
                            k.want.empty() ? "" : " (designed " + k.want + ")");
    std::string body = k.detail + "\n";
    if (!k.source.empty()) body += "measured: " + k.source + "\n";
    if (k.where.line > 0) body += "designed: " + k.where.ToString() + "\n";
    switch (k.state) {
      case facts::CableState::kOk:
        c.outcome = Outcome::kPass;
        break;
      case facts::CableState::kMissing:
      case facts::CableState::kMiswired:
      case facts::CableState::kSwapped:
        c.outcome = Outcome::kFail;
        c.body = body;
        break;
      case facts::CableState::kUnmeasured:
        c.outcome = Outcome::kSkip;
        c.message = k.detail;
        break;
      default:
        c.outcome = strict ? Outcome::kFail : Outcome::kPass;
        (strict ? c.body : c.out) = c.message + "\n" + body;
        break;
    }
    suites[net].cases.push_back(std::move(c));
  }
  std::vector<Suite> out;
  for (const std::string& n : order) out.push_back(std::move(suites[n]));
  return Document(fmt::format("gpuforge cabling {}", cluster), run, out);
}

}  // namespace gpuforge::report
