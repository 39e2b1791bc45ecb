#include "gpuforge/facts/measure_fabric.h"

#include <fmt/format.h>

#include "gpuforge/base/text.h"
#include "gpuforge/facts/collect.h"

namespace gpuforge::facts {

namespace {

constexpr std::string_view kMarker = "@@gpuforge-subnet ";

}  // namespace

// iblinkinfo and ibnetdiscover open /dev/infiniband/umad*, root's by default (rdma-core
// udev rules 90-rdma-umad.rules: mode 0600), so the command runs through sudo where the
// target's user is not root. stderr goes to a file so a warning never lands in what is parsed;
// its first line explains a failure.
std::string SubnetScript() {
  return R"SH(LC_ALL=C
export LC_ALL
PATH="$PATH:/usr/local/sbin:/usr/sbin:/sbin"
export PATH
if command -v timeout >/dev/null 2>&1; then gf_t="timeout 300"; else gf_t=""; fi
gf_e=$(mktemp 2>/dev/null || echo /tmp/gpuforge-subnet.$$)
gf_tool() {
  gf_n=$1
  shift
  if command -v "$1" >/dev/null 2>&1; then
    gf_o=$($gf_t "$@" 2>"$gf_e")
    gf_rc=$?
    printf '@@gpuforge-subnet tool=%s rc=%s@@\n' "$gf_n" "$gf_rc"
    if [ "$gf_rc" = 0 ]; then printf '%s\n' "$gf_o"; else head -n 3 "$gf_e"; fi
  else
    printf '@@gpuforge-subnet tool=%s rc=absent@@\n' "$gf_n"
  fi
}
gf_tool iblinkinfo iblinkinfo --line
gf_tool ibnetdiscover ibnetdiscover
rm -f "$gf_e"
printf '@@gpuforge-subnet end@@\n'
)SH";
}

std::vector<IbSubnet> ParseSubnetOutput(std::string_view node, std::string_view output,
                                        std::vector<std::string>* problems) {
  std::vector<IbSubnet> out;
  struct Part {
    std::string tool, rc;
    std::string_view body;
  };
  std::vector<Part> parts;
  bool ended = false;
  std::size_t pos = 0;
  std::size_t body_start = std::string_view::npos;
  auto close = [&](std::size_t end) {
    if (!parts.empty() && body_start != std::string_view::npos) parts.back().body = output.substr(body_start, end - body_start);
  };
  while (pos < output.size()) {
    std::size_t nl = output.find('\n', pos);
    std::size_t end = nl == std::string_view::npos ? output.size() : nl;
    std::string_view line = output.substr(pos, end - pos);
    if (line.starts_with(kMarker) && line.ends_with("@@")) {
      close(pos);
      std::string_view inner = line.substr(kMarker.size(), line.size() - kMarker.size() - 2);
      if (inner == "end") {
        ended = true;
        break;
      }
      Part p;
      for (std::string_view w : {inner.substr(0, inner.find(' ')), inner.substr(inner.find(' ') + 1)}) {
        if (w.starts_with("tool=")) p.tool = std::string(w.substr(5));
        if (w.starts_with("rc=")) p.rc = std::string(w.substr(3));
      }
      parts.push_back(std::move(p));
      body_start = nl == std::string_view::npos ? output.size() : nl + 1;
    }
    pos = nl == std::string_view::npos ? output.size() : nl + 1;
  }
  if (!ended) {
    problems->push_back(fmt::format("subnet tools on {}: output ends before the end marker (cut off?)", node));
    return out;
  }
  for (const Part& p : parts) {
    const std::string src = fmt::format("{} on {}", p.tool, node);
    if (p.rc == "absent") {
      problems->push_back(fmt::format("{}: not installed (Debian/Ubuntu: apt install infiniband-diags)", src));
      continue;
    }
    if (p.rc != "0") {
      std::string_view body = p.body;
      while (!body.empty() && (body.back() == '\n' || body.back() == '\r' || body.back() == ' ')) body.remove_suffix(1);
      body = body.substr(0, body.find('\n'));  // stderr's first line says why
      std::string first = text::Printable(body, 200);
      problems->push_back(fmt::format("{}: exit status {}{}", src, text::Printable(p.rc, 16),
                                      first.empty() ? "" : ": " + first));
      continue;
    }
    Result<IbSubnet> s = p.tool == "iblinkinfo"      ? ParseIblinkinfo(p.body, src)
                         : p.tool == "ibnetdiscover" ? ParseIbnetdiscover(p.body, src)
                                                      : Result<IbSubnet>(Error{fmt::format("{}: unknown tool", src)});
    if (!s) {
      problems->push_back(s.error().message);
      continue;
    }
    out.push_back(std::move(*s));
  }
  return out;
}

Measured MeasureFabric(remote::Connector& connector, std::span<const remote::Target> targets,
                       const model::Cluster& c, const MeasureOptions& o) {
  Measured m;
  if (o.gather_nodes && !targets.empty()) {
    CollectOptions co;
    co.timeout = o.timeout;
    co.fanout = o.fanout;
    Collected got = Collect(connector, targets, c, co);
    for (Gathered& g : got.gathered) {
      if (g.facts.ok()) {
        ++m.nodes_gathered;
        m.inputs.nodes.push_back(std::move(*g.facts));
      } else {
        m.inputs.unreached.emplace_back(g.node, g.facts.error().message);
      }
    }
  }
  if (o.subnet_node) {
    remote::ExecOptions eo;
    eo.timeout = o.timeout;
    eo.output_cap = kMaxSubnetBytes;
    eo.input = SubnetScript();
    eo.cancel = o.fanout.cancel;
    eo.sudo = true;
    const std::string& node = o.subnet_node->node;
    Result<std::unique_ptr<remote::Session>> s = connector.Connect(*o.subnet_node);
    if (!s) {
      m.problems.push_back(fmt::format("subnet tools on {}: {}", node, s.error().message));
    } else {
      Result<remote::ExecResult> r = (*s)->Exec("sh -s", eo);
      if (!r) {
        m.problems.push_back(fmt::format("subnet tools on {}: {}", node, r.error().message));
      } else if (r->end != remote::ExecEnd::kExited) {
        m.problems.push_back(fmt::format("subnet tools on {}: {}", node, remote::DescribeEnd(*r, eo)));
      } else {
        m.inputs.subnets = ParseSubnetOutput(node, r->out, &m.problems);
      }
    }
  }
  return m;
}

}  // namespace gpuforge::facts
