// The pci-tree section of the gather script and its parser.

#include "facts/pci_tree.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "facts/text.h"
#include "gpuforge/facts/parse.h"

namespace gpuforge::facts {

namespace {

using text::LineError;
using text::Quote;

// Why the script looks the way it does:
// - readlink -f of /sys/bus/pci/devices/<bdf> is the path NCCL's getPciPath() resolves with
//   realpath(3) (src/graph/xml.cc), so both see the same chain of bridges.
// - The walk up stops at the first directory that is not a bus id (the host bridge, or a
//   hypervisor's bus on a VM), which is where NCCL stops too ("checkBDFFormat").
// - max_link_* of every hop: NCCL takes min(device, port above) for link_speed/link_width.
// - cpumap of each NUMA node: what NCCL puts in <cpu affinity> (ncclTopoGetXmlFromCpu).
constexpr std::string_view kScript = R"SH(gf_pcitree() {
  for d in /sys/bus/pci/devices/*; do
    [ -r "$d/class" ] || continue
    c=$(cat "$d/class" 2>/dev/null)
    v=$(cat "$d/vendor" 2>/dev/null)
    case "$c" in
      0x03*) [ "$v" = 0x10de ] || continue ;;
      0x02*) ;;
      *) continue ;;
    esac
    p=$(readlink -f "$d" 2>/dev/null) || continue
    b=${d##*/}
    printf 'path %s\n' "$p"
    gf_attr "numa $b" "$d/numa_node"
    for n in "$d"/infiniband/*; do
      [ -e "$n" ] && printf 'rdma %s %s\n' "$b" "${n##*/}"
    done
    q=$p
    while [ -n "$q" ]; do
      f=${q##*/}
      case "$f" in
        [0-9a-f][0-9a-f][0-9a-f][0-9a-f]:[0-9a-f][0-9a-f]:[0-9a-f][0-9a-f].[0-7]) ;;
        *) break ;;
      esac
      for a in class vendor device subsystem_vendor subsystem_device current_link_speed max_link_speed current_link_width max_link_width; do
        gf_attr "fn $f $a" "$q/$a"
      done
      q=${q%/*}
    done
  done
  for n in /sys/devices/system/node/node[0-9]*; do
    [ -r "$n/cpumap" ] && gf_attr "cpumap ${n##*/node}" "$n/cpumap"
  done
  v=$(sed -n 's/^vendor_id.*: *//p' /proc/cpuinfo 2>/dev/null | head -n 1)
  [ -n "$v" ] && printf 'cpu_vendor %s\n' "$v"
  v=$(uname -m 2>/dev/null) && printf 'arch %s\n' "$v"
  return 0
}
gf_dir pci-tree /sys/bus/pci/devices gf_pcitree
)SH";

constexpr std::size_t kMaxFunctions = 8192;
constexpr std::uint32_t kNvidiaVendor = 0x10de;

bool IsBdf(std::string_view s) {
  std::optional<std::string> n = NormalizeBusId(s);
  return n && *n == s;
}

// "ffffffff,00000000": 32-bit hex words, as the kernel prints a cpumask.
bool IsCpumap(std::string_view s) {
  return !s.empty() && s.size() <= 1200 && std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || c == ',';
  });
}

struct Attrs {
  model::PciFunction fn;
  bool has_class = false;
  bool has_vendor = false;
  std::size_t first_line = 0;
};

Status SetAttr(Attrs& a, std::string_view attr, std::string_view value, std::size_t line) {
  auto bad = [&](std::string_view what) {
    return LineError(line, fmt::format("{} {}: expected {}, got {}", a.fn.bdf, attr, what,
                                       Quote(value)));
  };
  model::PciFunction& f = a.fn;
  if (attr == "class" || attr == "vendor" || attr == "device" || attr == "subsystem_vendor" ||
      attr == "subsystem_device") {
    std::optional<std::uint64_t> v = value.starts_with("0x") ? text::ToHex(value) : std::nullopt;
    if (!v || *v > 0xffffff) return bad("a hex number");
    auto u = static_cast<std::uint32_t>(*v);
    if (attr == "class") {
      f.class_code = u;
      a.has_class = true;
    } else if (attr == "vendor") {
      f.vendor = u;
      a.has_vendor = true;
    } else if (attr == "device") {
      f.device = u;
    } else if (attr == "subsystem_vendor") {
      f.subsystem_vendor = u;
    } else {
      f.subsystem_device = u;
    }
  } else if (attr == "current_link_speed" || attr == "max_link_speed") {
    Result<std::optional<double>> gts = ParseLinkSpeed(value);
    if (!gts) return LineError(line, fmt::format("{} {}: {}", f.bdf, attr, gts.error().message));
    (attr == "current_link_speed" ? f.link_speed_gts : f.max_link_speed_gts) = *gts;
  } else if (attr == "current_link_width" || attr == "max_link_width") {
    std::optional<int> w = text::ToIntIn(value, 0, 255);
    if (!w) return bad("a lane count");
    // 255 is what some bridges report for "unknown".
    if (*w != 255) (attr == "current_link_width" ? f.link_width : f.max_link_width) = *w;
  }
  return Status::Ok();
}

// Splits a resolved sysfs path into the host bridge and the BDFs below it.
Status ReadPath(std::string_view p, std::size_t line, model::PciEndpoint& e) {
  constexpr std::string_view kRoot = "/sys/devices/";
  if (!p.starts_with(kRoot)) {
    return LineError(line, fmt::format("expected a path under /sys/devices, got {}", Quote(p)));
  }
  std::vector<std::string_view> parts = text::Split(p.substr(kRoot.size()), '/');
  std::size_t first = parts.size();
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (IsBdf(parts[i])) {
      first = i;
      break;
    }
  }
  if (first == parts.size() || first == 0) {
    return LineError(line, fmt::format("no host bridge and bus id in {}", Quote(p)));
  }
  for (std::size_t i = first; i < parts.size(); ++i) {
    if (!IsBdf(parts[i])) {
      return LineError(line, fmt::format("{} below bus id {} is not a bus id", Quote(parts[i]),
                                         parts[first]));
    }
  }
  if (parts.size() - first > kMaxPciTreeDepth) {
    return LineError(line, fmt::format("path deeper than {} bus ids", kMaxPciTreeDepth));
  }
  if (!text::IsToken(parts[first - 1], 64)) {
    return LineError(line, fmt::format("host bridge {} is not a name", Quote(parts[first - 1])));
  }
  e.host_bridge = std::string(parts[first - 1]);
  for (std::size_t i = first; i < parts.size(); ++i) e.path.emplace_back(parts[i]);
  e.bdf = e.path.back();
  return Status::Ok();
}

}  // namespace

std::string_view PciTreeScript() { return kScript; }

Result<std::optional<double>> ParseLinkSpeed(std::string_view v) {
  if (v.starts_with("Unknown")) return std::optional<double>();
  auto [num, unit] = text::HeadTail(v);
  std::optional<double> gts = text::ToDouble(num);
  if (!gts || *gts < 0 || *gts > 1000 || !unit.starts_with("GT/s")) {
    return Error{fmt::format("expected '<n> GT/s', got {}", Quote(v))};
  }
  return std::optional<double>(*gts);
}

Result<model::PciTree> ParsePciTree(std::string_view input) {
  if (Status s = text::CheckInput(input, kMaxSectionBytes); !s) return s.error();
  model::PciTree t;
  std::map<std::string, model::PciEndpoint> endpoints;
  std::map<std::string, Attrs> fns;
  std::map<std::string, std::string> numa;  // bdf -> value text, checked below
  std::map<std::string, std::vector<std::string>> rdma;
  std::vector<std::string_view> lines = text::Lines(input);
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (text::Trim(lines[i]).empty()) continue;
    auto [key, rest] = text::HeadTail(lines[i]);
    if (key == "path") {
      model::PciEndpoint e;
      if (Status s = ReadPath(rest, i, e); !s) return s.error();
      if (endpoints.count(e.bdf)) return LineError(i, fmt::format("{} listed twice", e.bdf));
      if (endpoints.size() == kMaxPciTreeEndpoints) {
        return LineError(i, fmt::format("more than {} GPUs and NICs", kMaxPciTreeEndpoints));
      }
      std::string bdf = e.bdf;
      endpoints.emplace(bdf, std::move(e));
      continue;
    }
    if (key == "fn") {
      auto [bdf, r2] = text::HeadTail(rest);
      auto [attr, value] = text::HeadTail(r2);
      if (!IsBdf(bdf) || !text::IsToken(attr, 32)) {
        return LineError(i, fmt::format("expected 'fn <bus id> <attribute> <value>', got {}",
                                        Quote(lines[i])));
      }
      auto [it, fresh] = fns.try_emplace(std::string(bdf));
      if (fresh) {
        if (fns.size() > kMaxFunctions) {
          return LineError(i, fmt::format("more than {} PCI functions", kMaxFunctions));
        }
        it->second.fn.bdf = std::string(bdf);
        it->second.first_line = i;
      }
      if (Status s = SetAttr(it->second, attr, value, i); !s) return s.error();
      continue;
    }
    if (key == "numa" || key == "rdma") {
      auto [bdf, value] = text::HeadTail(rest);
      if (!IsBdf(bdf) || !text::IsToken(value, 64)) {
        return LineError(i, fmt::format("expected '{} <bus id> <value>', got {}", key,
                                        Quote(lines[i])));
      }
      if (key == "numa") {
        numa[std::string(bdf)] = std::string(value);
      } else {
        rdma[std::string(bdf)].emplace_back(value);
      }
      continue;
    }
    if (key == "cpumap") {
      auto [node, mask] = text::HeadTail(rest);
      std::optional<int> n = text::ToIntIn(node, 0, 4095);
      if (!n || !IsCpumap(mask)) {
        return LineError(i, fmt::format("expected 'cpumap <node> <hex mask>', got {}",
                                        Quote(lines[i])));
      }
      t.cpumaps.emplace_back(*n, std::string(mask));
      continue;
    }
    if (key == "cpu_vendor" || key == "arch") {
      if (!text::IsToken(rest, 32)) {
        return LineError(i, fmt::format("{}: expected a name, got {}", key, Quote(rest)));
      }
      (key == "arch" ? t.arch : t.cpu_vendor) = std::string(rest);
      continue;
    }
    // Lines of a newer script are not ours to read.
  }
  for (auto& [bdf, e] : endpoints) {
    for (const std::string& hop : e.path) {
      auto f = fns.find(hop);
      if (f == fns.end() || !f->second.has_class || !f->second.has_vendor) {
        return Error{fmt::format("{}: no class or vendor of {} on its path (truncated output?)",
                                 bdf, hop)};
      }
    }
    const model::PciFunction& self = fns[bdf].fn;
    std::uint32_t base = self.class_code >> 16;
    if (base == 0x03 && self.vendor == kNvidiaVendor) {
      e.kind = model::PciEndpointKind::kGpu;
    } else if (base == 0x02) {
      e.kind = model::PciEndpointKind::kNic;
    } else {
      continue;  // the script lists only GPUs and NICs; anything else is not ours to place
    }
    if (auto n = numa.find(bdf); n != numa.end()) {
      std::optional<int> v = text::ToIntIn(n->second, -1, 4095);
      if (!v) return Error{fmt::format("{} numa_node: expected a NUMA node, got {}", bdf,
                                       Quote(n->second))};
      if (*v >= 0) e.numa_node = *v;
    }
    if (auto r = rdma.find(bdf); r != rdma.end()) e.rdma_devices = r->second;
    t.endpoints.push_back(std::move(e));
  }
  for (auto& [bdf, a] : fns) t.functions.push_back(std::move(a.fn));
  std::sort(t.cpumaps.begin(), t.cpumaps.end());
  return t;
}

nlohmann::ordered_json PciTreeToJson(const model::PciTree& t) {
  using J = nlohmann::ordered_json;
  auto opt = [](const auto& v) { return v ? J(*v) : J(nullptr); };
  J fns = J::array();
  for (const model::PciFunction& f : t.functions) {
    fns.push_back({{"bdf", f.bdf},
                   {"class", fmt::format("0x{:06x}", f.class_code)},
                   {"vendor", fmt::format("0x{:04x}", f.vendor)},
                   {"device", fmt::format("0x{:04x}", f.device)},
                   {"subsystem_vendor", fmt::format("0x{:04x}", f.subsystem_vendor)},
                   {"subsystem_device", fmt::format("0x{:04x}", f.subsystem_device)},
                   {"link_speed_gts", opt(f.link_speed_gts)},
                   {"max_link_speed_gts", opt(f.max_link_speed_gts)},
                   {"link_width", opt(f.link_width)},
                   {"max_link_width", opt(f.max_link_width)}});
  }
  J eps = J::array();
  for (const model::PciEndpoint& e : t.endpoints) {
    eps.push_back({{"bdf", e.bdf},
                   {"kind", e.kind == model::PciEndpointKind::kGpu ? "gpu" : "nic"},
                   {"host_bridge", e.host_bridge},
                   {"path", e.path},
                   {"numa_node", opt(e.numa_node)},
                   {"rdma_devices", e.rdma_devices}});
  }
  J maps = J::array();
  for (const auto& [node, mask] : t.cpumaps) maps.push_back({{"node", node}, {"cpumap", mask}});
  return {{"functions", std::move(fns)},
          {"endpoints", std::move(eps)},
          {"cpumaps", std::move(maps)},
          {"cpu_vendor", t.cpu_vendor},
          {"arch", t.arch}};
}

int DistanceRank(std::string_view d) {
  if (d == "PIX") return 0;
  if (d == "PXB") return 1;
  if (d == "PHB") return 2;
  return 3;
}

std::optional<std::string> PciDistance(const model::PciTree& t, std::string_view a,
                                       std::string_view b) {
  const model::PciEndpoint* x = t.Endpoint(a);
  const model::PciEndpoint* y = t.Endpoint(b);
  if (!x || !y) return std::nullopt;
  if (x->numa_node && y->numa_node && *x->numa_node != *y->numa_node) return "SYS";
  if (x->host_bridge != y->host_bridge) return "PHB";
  std::vector<std::string> cx = model::NcclPciChain(*x);
  std::vector<std::string> cy = model::NcclPciChain(*y);
  // Deepest switch both hang below (the endpoints themselves excluded).
  std::size_t common = 0;
  while (common + 1 < cx.size() && common + 1 < cy.size() && cx[common] == cy[common]) ++common;
  if (common == 0) return "PHB";
  bool same_parent = common == cx.size() - 1 && common == cy.size() - 1;
  return same_parent ? "PIX" : "PXB";
}

}  // namespace gpuforge::facts
