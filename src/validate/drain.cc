#include "gpuforge/validate/drain.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "gpuforge/base/names.h"
#include "gpuforge/base/text.h"
#include "validate/verdicts.h"

namespace gpuforge::validate {

bool SlurmNode::drained() const { return state.starts_with("drain"); }
bool SlurmNode::ours() const { return reason.starts_with(kDrainReasonPrefix); }

namespace {

// Slurm's long state names (slurm_protocol_defs.c, node_state_string): the base state and
// flags, lower case, with '*' (not responding), '~' (powered down), '#', '%', '$', '@', '^',
// '!' or '-' appended.
bool PlausibleState(std::string_view s) {
  if (s.empty() || s.size() > 40) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || std::string_view("+*~#%$@^!-_").find(c) != std::string_view::npos;
  });
}

// Text from the controller in a message or a reason: text.h's one definition, an unprintable
// byte shown as a blank.
std::string Printable(std::string_view s) { return text::Printable(s, text::Shown{.max = 400, .other = ' '}); }

// A reason goes into single quotes on the controller's shell line: no quote or shell
// character may end them.
std::string QuoteFree(std::string s) {
  for (char& c : s) {
    if (c == '\'' || c == '"' || c == '\\' || c == '`' || c == '$') c = ' ';
  }
  return s;
}

// The shell line on the controller. Node names passed the inventory's host-name check and the
// reason holds no quote, so single quotes keep it one word.
std::string Scontrol(const std::string& node, std::string_view state, const std::string& reason) {
  if (reason.empty()) return fmt::format("scontrol update NodeName={} State={}", node, state);
  return fmt::format("scontrol update NodeName={} State={} Reason='{}'", node, state, reason);
}


}  // namespace

Result<std::vector<SlurmNode>> ParseSinfoNodes(std::string_view out) {
  std::vector<SlurmNode> nodes;
  std::set<std::string> listed;
  std::size_t line_no = 0;
  std::size_t pos = 0;
  while (pos < out.size()) {
    std::size_t eol = out.find('\n', pos);
    std::string_view line = out.substr(pos, eol == std::string_view::npos ? std::string_view::npos : eol - pos);
    pos = eol == std::string_view::npos ? out.size() : eol + 1;
    ++line_no;
    if (line.ends_with('\r')) line.remove_suffix(1);
    if (line.empty()) continue;
    const std::size_t a = line.find('|');
    const std::size_t b = a == std::string_view::npos ? a : line.find('|', a + 1);
    if (b == std::string_view::npos) {
      return Error{fmt::format("sinfo output line {}: expected NODE|STATE|REASON, got \"{}\"", line_no,
                               Printable(line.substr(0, 80)))};
    }
    SlurmNode n{std::string(line.substr(0, a)), std::string(line.substr(a + 1, b - a - 1)),
                Printable(line.substr(b + 1))};
    if (auto bad = names::CheckHostname(n.name)) {
      return Error{fmt::format("sinfo output line {}: node name \"{}\": {}", line_no, Printable(n.name.substr(0, 64)),
                               *bad)};
    }
    if (!PlausibleState(n.state)) {
      return Error{fmt::format("sinfo output line {}: node {} has state \"{}\", not one Slurm prints", line_no, n.name,
                               Printable(n.state.substr(0, 40)))};
    }
    // sinfo --Node lists a node once per partition it is in.
    if (listed.insert(n.name).second) nodes.push_back(std::move(n));
  }
  return nodes;
}

std::string DrainReason(std::span<const Verdict* const> failed) {
  if (failed.empty()) return std::string(kDrainReasonPrefix);
  const Verdict& v = *failed.front();
  std::string first = fmt::format("{} {} {} {}", kDrainReasonPrefix, v.code.empty() ? ToString(v.state) : v.code,
                                  v.check, v.entity);
  first = QuoteFree(Printable(first));
  const std::string more = failed.size() > 1 ? fmt::format(" (+{} more)", failed.size() - 1) : "";
  if (first.size() + more.size() > kMaxReason) first = first.substr(0, kMaxReason - more.size() - 3) + "...";
  return first + more;
}

std::vector<DrainAction> PlanDrain(const model::Cluster& c, std::span<const Verdict> verdicts,
                                   std::span<const SlurmNode> slurm, const DrainOptions& o) {
  std::vector<std::string> order;
  std::map<std::string, std::vector<const Verdict*>> failed;
  for (const Verdict& v : verdicts) {
    if (v.left_out || c.FindNode(v.node) == nullptr) continue;
    auto [it, fresh] = failed.try_emplace(v.node);
    if (fresh) order.push_back(v.node);
    if (FailsRun(v, o.strict)) it->second.push_back(&v);
  }
  std::map<std::string_view, const SlurmNode*> by_name;
  for (const SlurmNode& n : slurm) by_name.emplace(n.name, &n);
  std::vector<DrainAction> out;
  for (const std::string& node : order) {
    const std::vector<const Verdict*>& bad = failed[node];
    auto found = by_name.find(node);
    const SlurmNode* s = found == by_name.end() ? nullptr : found->second;
    DrainAction a;
    a.node = node;
    if (s == nullptr) {
      if ((o.drain_failed && !bad.empty()) || o.resume_passed) {
        a.why = "not a Slurm node (sinfo does not list it)";
        out.push_back(std::move(a));
      }
      continue;
    }
    if (!bad.empty()) {
      if (!o.drain_failed) continue;
      if (s->drained() && !s->ours()) {
        a.why = fmt::format("failed, but already {} by someone else (\"{}\"): left as it is", s->state, s->reason);
      } else {
        a.step = DrainStep::kDrain;
        a.reason = DrainReason(bad);
        a.why = fmt::format("{} failed", bad.size() == 1 ? "1 check" : fmt::format("{} checks", bad.size()));
        a.command = Scontrol(node, "DRAIN", a.reason);
      }
      out.push_back(std::move(a));
      continue;
    }
    if (!o.resume_passed || !s->drained()) continue;
    if (!s->ours()) {
      a.why = fmt::format("passed, but {} by someone else (\"{}\"): left as it is", s->state, s->reason);
    } else {
      a.step = DrainStep::kResume;
      a.why = fmt::format("passed; gpuforge had drained it (\"{}\")", s->reason);
      a.command = Scontrol(node, "RESUME", "");
    }
    out.push_back(std::move(a));
  }
  return out;
}

namespace {

// The code's state and the catalogue's wording come from codes.cc (Mark).
Verdict DrainError(const std::string& node, std::string_view code, std::string detail, std::string next) {
  Verdict v;
  v.check = "slurm.drain";
  v.node = node;
  v.entity = "node";
  internal::Mark(v, code);
  v.detail = std::move(detail);
  v.next_step = std::move(next);
  return v;
}

// The nodes that would need a step: every failed node (drain) or every node (resume), since
// without sinfo it is unknown which were drained.
std::vector<std::string> NodesNeedingAStep(const model::Cluster& c, std::span<const Verdict> verdicts,
                                           const DrainOptions& o) {
  std::vector<std::string> order;
  std::map<std::string, bool> fails;
  for (const Verdict& v : verdicts) {
    if (v.left_out || c.FindNode(v.node) == nullptr) continue;
    auto [it, fresh] = fails.try_emplace(v.node, false);
    if (fresh) order.push_back(v.node);
    it->second = it->second || FailsRun(v, o.strict);
  }
  std::vector<std::string> out;
  for (const std::string& n : order) {
    if ((fails[n] && o.drain_failed) || (!fails[n] && o.resume_passed)) out.push_back(n);
  }
  return out;
}

}  // namespace

DrainResult RunDrain(remote::Session* controller, std::string_view controller_name, const model::Cluster& c,
                     std::span<const Verdict> verdicts, const DrainOptions& o) {
  DrainResult r;
  auto drain_error = [&](std::string_view code, const std::string& detail, const std::string& next) {
    for (const std::string& n : NodesNeedingAStep(c, verdicts, o)) r.errors.push_back(DrainError(n, code, detail, next));
  };
  if (controller == nullptr) {
    drain_error("slurm.no_controller",
             fmt::format("the Slurm controller {} could not be reached, so nothing was drained or resumed",
                         controller_name.empty() ? "(software.scheduler.controller is not set)" : controller_name),
             "reach the controller (gpuforge run INVENTORY --nodes CONTROLLER -- scontrol ping), then run validate "
             "again, or drain by hand");
    return r;
  }
  remote::ExecOptions eo;
  eo.timeout = std::chrono::seconds(60);
  eo.sudo = controller->target().sudo;
  Result<remote::ExecResult> listed = controller->Exec(kSinfoCommand, eo);
  std::string why;
  if (!listed.ok()) {
    why = listed.error().message;
  } else if (listed->exit_status != 0) {
    why = fmt::format("`{}` exited {}: {}", kSinfoCommand, listed->exit_status, Printable(listed->err.substr(0, 200)));
  }
  Result<std::vector<SlurmNode>> slurm = why.empty() ? ParseSinfoNodes(listed->out) : Error{why};
  if (!slurm.ok()) {
    drain_error("slurm.drain_failed",
             fmt::format("on {}: {}; nothing was drained or resumed", controller_name, slurm.error().message),
             "run sinfo on the controller by hand; check that slurmctld answers (scontrol ping)");
    return r;
  }
  r.actions = PlanDrain(c, verdicts, *slurm, o);
  for (DrainAction& a : r.actions) {
    if (a.command.empty()) continue;
    Result<remote::ExecResult> done = controller->Exec(a.command, eo);
    if (done.ok() && done->exit_status == 0) continue;
    const std::string what =
        done.ok() ? fmt::format("exited {}: {}", done->exit_status, Printable((done->err + done->out).substr(0, 200)))
                  : done.error().message;
    r.errors.push_back(DrainError(a.node, "slurm.drain_failed",
                                  fmt::format("`{}` on {} {}", a.command, controller_name, what),
                                  "run the command on the controller by hand; the user needs Slurm operator rights"));
    a.why += " (the command failed)";
    a.step = DrainStep::kLeave;
  }
  return r;
}

std::string DrainText(const DrainResult& r) {
  std::string out;
  for (const DrainAction& a : r.actions) {
    const char* what = a.step == DrainStep::kDrain ? "drained" : a.step == DrainStep::kResume ? "resumed" : "left";
    out += fmt::format("slurm: {:<16} {:<8} {}{}\n", a.node, what, a.why,
                       a.step == DrainStep::kDrain ? fmt::format(": Reason=\"{}\"", a.reason) : "");
  }
  return out;
}

nlohmann::ordered_json DrainJson(const DrainResult& r) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const DrainAction& a : r.actions) {
    out.push_back({{"node", a.node},
                   {"step", a.step == DrainStep::kDrain ? "drain" : a.step == DrainStep::kResume ? "resume" : "leave"},
                   {"reason", a.reason},
                   {"why", a.why}});
  }
  return out;
}

}  // namespace gpuforge::validate
