#include "gpuforge/apply/read_plans.h"

#include <fmt/format.h>

#include "gpuforge/apply/apply.h"
#include "gpuforge/plan/diff.h"
#include "remote/command.h"

namespace gpuforge::apply {
namespace {

// Old content of each changed file, and the unified diff to what apply would write, with
// secrets masked on both sides. A file too large or binary gets a one-line note instead.
std::map<std::string, std::string> Diffs(remote::Session& s, const plan::DesiredNode& d, const plan::NodePlan& p) {
  std::map<std::string, std::string> out;
  for (std::size_t i = 0; i < p.files.size(); ++i) {
    const plan::FileChange& f = p.files[i];
    if (f.action == plan::Action::kNone || (f.action == plan::Action::kChange && !f.content)) continue;
    if (f.secret) {
      // The munge key: neither the node's copy nor the new one is read into a plan.
      out[f.path] = "(secret: content not shown)";
      continue;
    }
    std::string before, after;
    if (f.action != plan::Action::kCreate) {
      remote::ExecOptions eo;
      eo.sudo = s.target().sudo;
      eo.output_cap = 1 << 20;
      Result<remote::ExecResult> r = s.Exec("cat -- " + remote::ShellQuote(f.path), eo);
      if (!r.ok() || !r->Succeeded()) {
        out[f.path] = r.ok() ? fmt::format("(could not read the file: {})", remote::DescribeEnd(*r, eo))
                             : "(could not read the file: " + r.error().message + ")";
        continue;
      }
      before = std::move(r->out);
    }
    if (f.action != plan::Action::kRemove && i < d.files.size()) after = std::string(d.files[i].Content());
    if (plan::LooksBinary(before) || plan::LooksBinary(after)) {
      out[f.path] = "(binary content differs)";
      continue;
    }
    // Lines are matched on their real text and printed masked, so a changed secret shows as a
    // changed line without its value.
    out[f.path] = plan::MaskedUnifiedDiff(f.action == plan::Action::kCreate ? "/dev/null" : "a" + f.path,
                                          f.action == plan::Action::kRemove ? "/dev/null" : "b" + f.path, before, after);
  }
  return out;
}

}  // namespace

std::vector<NodePlanRead> ReadPlans(remote::Connector& connector, std::span<const remote::Target> targets,
                                    const std::map<std::string, plan::DesiredNode>& desired,
                                    const ReadPlansOptions& o) {
  std::vector<NodePlanRead> reads(targets.size());
  for (std::size_t i = 0; i < targets.size(); ++i) reads[i].node = targets[i].node;
  remote::Fleet fleet(connector, std::vector<remote::Target>(targets.begin(), targets.end()), o.fanout);
  fleet.Each([&](std::size_t i, remote::Session& s) {
    const plan::DesiredNode& d = desired.at(s.target().node);
    Result<plan::NodePlan> p = ReadNodePlan(s, d, s.target().sudo, &reads[i].state_sha256);
    if (!p.ok()) {
      reads[i].error = p.error().message;
      return false;
    }
    if (o.diffs) reads[i].diffs = Diffs(s, d, *p);
    reads[i].plan = std::move(*p);
    return true;
  });
  for (std::size_t i = 0; i < reads.size(); ++i) {
    if (reads[i].plan || !reads[i].error.empty()) continue;
    reads[i].error = fleet.lost(i) ? fleet.lost(i)->message : "node " + reads[i].node + ": not reached";
  }
  return reads;
}

PlanCounts CountPlans(std::span<const NodePlanRead> reads) {
  PlanCounts c;
  for (const NodePlanRead& r : reads) {
    if (!r.plan) continue;
    c.add += r.plan->Count(plan::Action::kCreate);
    c.change += r.plan->Count(plan::Action::kChange);
    c.destroy += r.plan->Count(plan::Action::kRemove);
    c.changed_nodes += r.plan->HasChanges();
  }
  for (const NodePlanRead& r : reads) c.failed += !r.error.empty();
  return c;
}

plan::SavedPlan SavedPlanFrom(std::span<const NodePlanRead> reads,
                              const std::map<std::string, plan::DesiredNode>& desired, std::string created,
                              std::string inventory, std::string inventory_sha256, std::string parts) {
  plan::SavedPlan saved;
  saved.created = std::move(created);
  saved.inventory = std::move(inventory);
  saved.inventory_sha256 = std::move(inventory_sha256);
  saved.parts = std::move(parts);
  for (const NodePlanRead& r : reads) {
    if (!r.plan->HasChanges()) continue;
    saved.nodes.push_back({r.node, plan::DesiredDigest(desired.at(r.node)), r.state_sha256,
                           r.plan->Count(plan::Action::kCreate), r.plan->Count(plan::Action::kChange),
                           r.plan->Count(plan::Action::kRemove)});
  }
  return saved;
}

}  // namespace gpuforge::apply
