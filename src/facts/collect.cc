#include "gpuforge/facts/collect.h"

#include <fmt/format.h>

#include "gpuforge/facts/gather.h"

namespace gpuforge::facts {

Collected Collect(remote::Connector& connector, std::span<const remote::Target> targets, const model::Cluster& c,
                  const CollectOptions& o) {
  remote::ExecOptions eo;
  eo.timeout = o.timeout;
  eo.output_cap = kMaxGatherBytes;
  eo.input = GatherScript();
  eo.cancel = o.fanout.cancel;

  Collected out;
  out.checked = o.check;
  for (const remote::Target& t : targets) {
    out.gathered.push_back({t.node, Error{fmt::format("node {}: not gathered", t.node)}});
  }
  std::vector<Gathered>& gathered = out.gathered;
  if (o.keep_raw) out.raw.resize(gathered.size());
  {
    remote::Fleet fleet(connector, std::vector<remote::Target>(targets.begin(), targets.end()), o.fanout);
    fleet.Each([&](std::size_t i, remote::Session& s) {
      // The script arrives on stdin, so the command line stays short and shell-free.
      Result<remote::ExecResult> r = s.Exec("sh -s", eo);
      if (!r.ok()) {
        gathered[i].facts = r.error();
        return false;
      }
      if (r->end != remote::ExecEnd::kExited) {
        gathered[i].facts =
            Error{fmt::format("node {}: gather script: {}", s.target().node, remote::DescribeEnd(*r, eo))};
        return false;
      }
      gathered[i].facts = ParseGather(s.target().node, r->out);
      if (o.keep_raw && gathered[i].facts.ok()) out.raw[i] = std::move(r->out);
      return gathered[i].facts.ok();
    });
    for (std::size_t i = 0; i < gathered.size(); ++i) {
      if (fleet.lost(i) && !gathered[i].facts.ok() && gathered[i].facts.error().message.ends_with(": not gathered")) {
        gathered[i].facts = *fleet.lost(i);
      }
    }
  }
  for (const Gathered& g : gathered) out.failed += !g.facts.ok();
  if (o.check) out.drift = FindDrift(c, gathered);
  return out;
}

}  // namespace gpuforge::facts
