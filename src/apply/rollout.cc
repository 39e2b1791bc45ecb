#include "gpuforge/apply/rollout.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>

namespace gpuforge::apply {
namespace {

using State = NodeApply::State;

bool Interrupted(const remote::FanoutOptions& fo) { return fo.cancel != nullptr && fo.cancel->load(); }

// The cluster handlers the applied nodes deferred, in first-asked order, and the node that
// runs them.
std::optional<std::size_t> HandlerRunner(std::span<const NodeOutcome> nodes, const std::string& controller,
                                         std::vector<std::string>* handlers) {
  std::optional<std::size_t> runner;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    if (!nodes[i].result || nodes[i].result->state != State::kApplied) continue;
    for (const std::string& h : nodes[i].result->deferred) {
      if (std::find(handlers->begin(), handlers->end(), h) == handlers->end()) handlers->push_back(h);
      if (!runner || nodes[i].node == controller) runner = i;
    }
  }
  return runner;
}

void RunClusterHandlers(remote::Connector& connector, const remote::Target& target,
                        const std::vector<std::string>& handlers, const remote::FanoutOptions& fo,
                        RolloutResult* out) {
  remote::Fleet one(connector, {target}, fo);
  one.Each([&](std::size_t, remote::Session& s) {
    for (const std::string& h : handlers) {
      remote::ExecOptions eo;
      eo.sudo = s.target().sudo;
      Result<remote::ExecResult> r = s.Exec(h, eo);
      if (r.ok() && r->Succeeded()) {
        out->handler_lines.push_back(fmt::format("ran `{}` once, on {}", h, s.target().node));
        continue;
      }
      out->handler_failed = true;
      std::string why = r.ok() ? remote::DescribeEnd(*r, eo) + ": " + r->err.substr(0, 500) : r.error().message;
      while (!why.empty() && (why.back() == '\n' || why.back() == ' ')) why.pop_back();
      out->handler_lines.push_back(fmt::format("`{}` on {} failed: {}", h, s.target().node, why));
    }
    return true;
  });
  if (one.lost(0)) {
    out->handler_failed = true;
    out->handler_lines.push_back(
        fmt::format("could not run {} on {}: {}", fmt::join(handlers, ", "), target.node, one.lost(0)->message));
  }
}

void Tally(RolloutResult* out) {
  for (const NodeOutcome& n : out->nodes) {
    if (!n.result) {
      ++(n.NotStarted() ? out->not_started : out->failed);
      continue;
    }
    const State s = n.result->state;
    out->applied += s == State::kApplied;
    out->unchanged += s == State::kUnchanged;
    out->failed += s == State::kFailed || s == State::kLocked || s == State::kStale;
    if (n.result->reboot_needed) out->reboot_needed.push_back(n.node);
  }
}

}  // namespace

RolloutResult Rollout(remote::Connector& connector, std::span<const remote::Target> targets,
                      const std::map<std::string, DesiredNode>& desired, const RolloutOptions& o) {
  RolloutResult out;
  out.run_id = o.apply.run_id;
  for (const remote::Target& t : targets) out.nodes.push_back({t.node, std::nullopt, ""});
  const std::size_t batch = o.batch == 0 ? std::max<std::size_t>(targets.size(), 1) : o.batch;
  std::atomic<int> failures = 0;
  auto enough_failed = [&] { return o.max_fail > 0 && failures.load() >= o.max_fail; };
  for (std::size_t first = 0; first < targets.size(); first += batch) {
    if (enough_failed() || Interrupted(o.fanout)) break;
    const std::size_t last = std::min(targets.size(), first + batch);
    remote::Fleet fleet(connector,
                        std::vector<remote::Target>(targets.begin() + static_cast<std::ptrdiff_t>(first),
                                                    targets.begin() + static_cast<std::ptrdiff_t>(last)),
                        o.fanout);
    fleet.Each([&](std::size_t j, remote::Session& s) {
      // --max-fail: a node not yet begun is not begun once enough have failed.
      if (enough_failed()) return false;
      ApplyOptions ao = o.apply;
      ao.sudo = s.target().sudo;
      ao.cancel = o.fanout.cancel;
      if (auto it = o.expect_state_sha256.find(s.target().node); it != o.expect_state_sha256.end()) {
        ao.expect_state_sha256 = it->second;
      }
      std::optional<NodeApply>& result = out.nodes[first + j].result;
      result = ApplyNode(s, desired.at(s.target().node), ao);
      const bool ok = result->state == State::kApplied || result->state == State::kUnchanged;
      if (!ok) ++failures;
      return ok;
    });
    for (std::size_t j = 0; j < fleet.size(); ++j) {
      if (!out.nodes[first + j].result && fleet.lost(j)) {
        out.nodes[first + j].unreachable = fleet.lost(j)->message;
        ++failures;
      }
    }
    fleet.Close();
  }
  std::vector<std::string> handlers;
  if (std::optional<std::size_t> runner = HandlerRunner(out.nodes, o.controller, &handlers)) {
    if (Interrupted(o.fanout)) {
      // No step starts after an interrupt, this one neither; the operator runs it by hand.
      out.handler_failed = true;
      out.handler_lines.push_back(fmt::format("not run: {} (interrupted); run it on {}", fmt::join(handlers, ", "),
                                              targets[*runner].node));
    } else {
      RunClusterHandlers(connector, targets[*runner], handlers, o.fanout, &out);
    }
  }
  Tally(&out);
  return out;
}

}  // namespace gpuforge::apply
