#include <fmt/format.h>

#include <algorithm>
#include <mutex>

#include "gpuforge/facts/drift.h"
#include "gpuforge/facts/gather.h"
#include "gpuforge/remote/fanout.h"
#include "gpuforge/validate/agent.h"
#include "gpuforge/validate/runner.h"
#include "validate/verdicts.h"

namespace gpuforge::validate {
namespace {

using internal::Mark;

bool Interrupted(const std::atomic<bool>* cancel) { return cancel != nullptr && cancel->load(); }

Verdict Unreachable(const std::string& node, const std::string& why) {
  Verdict v;
  v.check = "ssh";
  v.node = node;
  v.entity = "node";
  Mark(v, "node.unreachable");
  v.detail = why;
  v.next_step = "gpuforge run INVENTORY --nodes " + node + " -- true";
  return v;
}

}  // namespace

std::vector<Verdict> RunPlan(remote::Connector& connector, std::span<const remote::Target> targets,
                             const model::Cluster& c, const Thresholds& t, const ValidatePlan& plan,
                             const plan::AgentBinary* agent, const PlanRunOptions& o) {
  remote::FanoutOptions fo;
  fo.width = o.fanout;
  fo.cancel = o.run.cancel;
  fo.on_progress = o.on_progress;
  std::mutex mu;
  std::vector<std::vector<Verdict>> per_node(targets.size());
  std::vector<AgentOnNode> agents(targets.size());
  std::vector<facts::Gathered> gathered;
  remote::Fleet fleet(connector, std::vector<remote::Target>(targets.begin(), targets.end()), fo);
  // Node-local checks, in parallel across nodes.
  fleet.Each([&](std::size_t i, remote::Session& s) {
    const std::string& node = s.target().node;
    bool agent_ok = agent == nullptr;
    if (agent != nullptr) {
      Result<AgentOnNode> path = EnsureAgent(s, *agent);
      if (path.ok()) {
        agents[i] = *path;
        agent_ok = true;
      } else {
        per_node[i].push_back(Unreachable(node, path.error().message));
        per_node[i].back().check = "agent";
        Mark(per_node[i].back(), "agent.missing");
        per_node[i].back().next_step = "gpuforge apply INVENTORY --only agent --nodes " + node;
      }
    }
    for (const PlannedRun& run : plan.runs) {
      if (run.node != node || ShapeOf(run) != Shape::kNode) continue;
      if (run.check == "facts") {
        remote::ExecOptions eo;
        eo.input = facts::GatherScript();
        eo.output_cap = facts::kMaxGatherBytes;
        eo.timeout = std::chrono::seconds(run.timeout_s);
        Result<remote::ExecResult> r = s.Exec("sh -s", eo);
        std::lock_guard lock(mu);
        if (!r.ok()) {
          gathered.push_back({node, r.error()});
        } else {
          gathered.push_back({node, facts::ParseGather(node, r->out)});
        }
        continue;
      }
      if (!agent_ok) continue;
      std::vector<Verdict> v = RunCheck(s, agents[i], c, t, run, o.run);
      per_node[i].insert(per_node[i].end(), v.begin(), v.end());
    }
    return true;
  });
  std::vector<Verdict> verdicts;
  for (std::size_t i = 0; i < targets.size(); ++i) {
    if (fleet.lost(i) && per_node[i].empty()) per_node[i].push_back(Unreachable(targets[i].node, fleet.lost(i)->message));
  }
  // Nodes finish gathering in any order; the report follows the inventory's.
  std::stable_sort(gathered.begin(), gathered.end(), [&](const facts::Gathered& a, const facts::Gathered& b) {
    auto at = [&](const std::string& node) {
      return std::find_if(targets.begin(), targets.end(), [&](const remote::Target& x) { return x.node == node; }) -
             targets.begin();
    };
    return at(a.node) < at(b.node);
  });
  // Facts: drift is judged across the nodes gathered (one profile's nodes against each other too).
  std::vector<Verdict> fact_verdicts;
  if (std::any_of(plan.runs.begin(), plan.runs.end(), [](const PlannedRun& r) { return r.check == "facts"; })) {
    std::vector<std::string> ok_nodes;
    std::vector<facts::Gathered> good;
    for (facts::Gathered& g : gathered) {
      if (g.facts.ok()) {
        ok_nodes.push_back(g.node);
        good.push_back(std::move(g));
      } else {
        Verdict v;
        v.check = "facts";
        v.node = g.node;
        v.entity = "node";
        Mark(v, "facts.unavailable");
        v.detail = g.facts.error().message;
        v.next_step = "gpuforge facts INVENTORY --nodes " + g.node;
        fact_verdicts.push_back(std::move(v));
      }
    }
    std::vector<facts::Drift> drift = facts::FindDrift(c, good);
    std::vector<Verdict> judged = JudgeDrift(c, drift, ok_nodes);
    fact_verdicts.insert(fact_verdicts.end(), judged.begin(), judged.end());
  }
  // Pairs, one at a time so that they do not share links or ports.
  std::vector<Verdict> pair_verdicts;
  for (const PlannedRun& run : plan.runs) {
    if (ShapeOf(run) != Shape::kPair || Interrupted(o.run.cancel)) continue;
    std::size_t ci = 0, si = 0;
    for (std::size_t i = 0; i < targets.size(); ++i) {
      if (targets[i].node == run.node) ci = i;
      if (targets[i].node == run.peer) si = i;
    }
    if (agents[ci].empty() || agents[si].empty()) {
      Verdict v = Unreachable(run.node, "no agent on " + (agents[ci].empty() ? run.node : run.peer));
      v.check = run.check;
      v.entity = run.entity;
      Mark(v, "pair.peer_unavailable");
      pair_verdicts.push_back(std::move(v));
      continue;
    }
    Result<std::unique_ptr<remote::Session>> client = connector.Connect(targets[ci]);
    Result<std::unique_ptr<remote::Session>> server = connector.Connect(targets[si]);
    if (!client.ok() || !server.ok()) {
      pair_verdicts.push_back(Unreachable(client.ok() ? run.peer : run.node,
                                          client.ok() ? server.error().message : client.error().message));
      continue;
    }
    std::vector<Verdict> v = RunPair(**client, agents[ci], **server, agents[si], c, t, run, o.run);
    pair_verdicts.insert(pair_verdicts.end(), v.begin(), v.end());
  }
  // Group checks (multi-node NCCL): every member at once, on fresh sessions.
  for (const PlannedRun& run : plan.runs) {
    if (ShapeOf(run) != Shape::kGroup || Interrupted(o.run.cancel)) continue;
    std::vector<std::unique_ptr<remote::Session>> owned;
    std::vector<remote::Session*> sessions;
    std::vector<AgentOnNode> member_agents;
    std::string missing;
    for (const std::string& member : run.group) {
      std::size_t i = 0;
      while (i < targets.size() && targets[i].node != member) ++i;
      if (i == targets.size() || agents[i].empty()) {
        missing = member;
        break;
      }
      Result<std::unique_ptr<remote::Session>> s = connector.Connect(targets[i]);
      if (!s.ok()) {
        missing = member + " (" + s.error().message + ")";
        break;
      }
      sessions.push_back(s->get());
      owned.push_back(std::move(*s));
      member_agents.push_back(agents[i]);
    }
    if (!missing.empty()) {
      Verdict v = Unreachable(run.node, "no agent on " + missing);
      v.check = run.check;
      v.entity = run.entity;
      Mark(v, "group.member_unavailable");
      pair_verdicts.push_back(std::move(v));
      continue;
    }
    std::vector<Verdict> v =
        RunGroupCheck(sessions, member_agents, c, t, run, o.run);
    pair_verdicts.insert(pair_verdicts.end(), v.begin(), v.end());
  }
  // What validate pushed goes when the run ends (even after Ctrl-C): nothing of it is left to
  // trust later, and a machine running validate on itself keeps no copy. `gpuforge apply --only
  // agent` installs the managed one, which stays, when repeated runs should not push.
  RemovePushedAgents(fleet, agents);
  fleet.Close();

  // In order: per node as planned (facts first), then pairs, then what could not run, then what
  // was left out (the reports count it in one line).
  for (const Verdict& v : fact_verdicts) verdicts.push_back(v);
  for (const auto& list : per_node) verdicts.insert(verdicts.end(), list.begin(), list.end());
  verdicts.insert(verdicts.end(), pair_verdicts.begin(), pair_verdicts.end());
  verdicts.insert(verdicts.end(), plan.not_applicable.begin(), plan.not_applicable.end());
  verdicts.insert(verdicts.end(), plan.left_out.begin(), plan.left_out.end());
  return verdicts;
}

}  // namespace gpuforge::validate
