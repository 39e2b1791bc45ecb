// Parsers for the sysfs sections: PCI devices (GPUs and NICs) and InfiniBand ports.

#include <fmt/format.h>

#include <map>

#include "facts/pci_tree.h"
#include "facts/text.h"
#include "gpuforge/facts/parse.h"

namespace gpuforge::facts {

namespace {

using text::LineError;
using text::Quote;

constexpr std::uint32_t kNvidiaVendor = 0x10de;

bool IsName(std::string_view s) { return text::IsToken(s, 64); }

}  // namespace

Result<std::vector<PciDevice>> ParsePciSysfs(std::string_view input) {
  if (Status s = text::CheckInput(input, kMaxSectionBytes); !s) return s.error();
  struct Seen {
    PciDevice dev;
    bool has_class = false;
    bool has_vendor = false;
    std::size_t first_line = 0;
  };
  std::map<std::string, Seen> devices;
  std::vector<std::string_view> lines = text::Lines(input);
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (text::Trim(lines[i]).empty()) continue;
    auto [bdf_text, rest] = text::HeadTail(lines[i]);
    auto [attr, value] = text::HeadTail(rest);
    std::optional<std::string> bdf = NormalizeBusId(bdf_text);
    if (!bdf || attr.empty()) {
      return LineError(
          i, fmt::format("expected '<bus id> <attribute> <value>', got {}", Quote(lines[i])));
    }
    auto [it, fresh] = devices.try_emplace(*bdf);
    Seen& s = it->second;
    if (fresh) s.first_line = i;
    PciDevice& d = s.dev;
    d.bdf = *bdf;
    auto bad = [&](std::string_view what) {
      return LineError(i,
                       fmt::format("{} {}: expected {}, got {}", *bdf, attr, what, Quote(value)));
    };
    if (attr == "class" || attr == "vendor" || attr == "device") {
      std::optional<std::uint64_t> v = value.starts_with("0x") ? text::ToHex(value) : std::nullopt;
      if (!v || *v > 0xffffff) return bad("a hex number");
      if (attr == "class") {
        d.class_code = static_cast<std::uint32_t>(*v);
        s.has_class = true;
      } else if (attr == "vendor") {
        d.vendor = static_cast<std::uint32_t>(*v);
        s.has_vendor = true;
      } else {
        d.device = static_cast<std::uint32_t>(*v);
      }
    } else if (attr == "numa_node") {
      std::optional<std::int64_t> n = text::ToInt(value);
      if (!n || *n < -1 || *n > 4095) return bad("a NUMA node");
      if (*n >= 0) d.numa_node = static_cast<int>(*n);
    } else if (attr == "current_link_speed" || attr == "max_link_speed") {
      Result<std::optional<double>> gts = ParseLinkSpeed(value);
      if (!gts) return LineError(i, fmt::format("{} {}: {}", *bdf, attr, gts.error().message));
      (attr == "current_link_speed" ? d.link_speed_gts : d.max_link_speed_gts) = *gts;
    } else if (attr == "current_link_width" || attr == "max_link_width") {
      std::optional<int> w = text::ToIntIn(value, 0, 255);
      if (!w) return bad("a lane count");
      // 255 is what some bridges report for "unknown".
      if (*w != 255) (attr == "current_link_width" ? d.link_width : d.max_link_width) = *w;
    } else if (attr == "net" || attr == "infiniband") {
      if (!IsName(value)) return bad("an interface name");
      (attr == "net" ? d.netdevs : d.rdma_devices).emplace_back(value);
    }
  }
  std::vector<PciDevice> out;
  for (auto& [bdf, s] : devices) {
    if (!s.has_class || !s.has_vendor) {
      return LineError(s.first_line, fmt::format("{}: no {} line (truncated output?)", bdf,
                                                 s.has_class ? "vendor" : "class"));
    }
    std::uint32_t base = s.dev.class_code >> 16;
    if (base == 0x03 && s.dev.vendor == kNvidiaVendor) {
      s.dev.kind = PciKind::kGpu;
    } else if (base == 0x02) {
      s.dev.kind = PciKind::kNic;
    } else {
      continue;
    }
    out.push_back(std::move(s.dev));
  }
  return out;
}

namespace {

// "400 Gb/sec (4X NDR)", "100 Gb/sec (2X HDR)", "10 Gb/sec (4X)", "2.5 Gb/sec (1X SDR)".
Status ReadRate(std::string_view v, IbPort& p) {
  auto [num, rest] = text::HeadTail(v);
  std::optional<double> gbps = text::ToDouble(num);
  if (!gbps || *gbps < 0 || *gbps > 100000 || !rest.starts_with("Gb/sec")) {
    return Error{fmt::format("expected '<n> Gb/sec (<w>X <speed>)', got {}", Quote(v))};
  }
  p.rate_gbps = *gbps;
  std::size_t open = rest.find('(');
  if (open == std::string_view::npos) return Status::Ok();
  std::size_t close = rest.find(')', open);
  if (close == std::string_view::npos) {
    return Error{fmt::format("expected '<n> Gb/sec (<w>X <speed>)', got {}", Quote(v))};
  }
  auto [width, speed] = text::HeadTail(rest.substr(open + 1, close - open - 1));
  if (width.size() >= 2 && (width.back() == 'X' || width.back() == 'x')) {
    p.width = text::ToIntIn(width.substr(0, width.size() - 1), 1, 64);
  }
  if (text::IsToken(speed, 16)) p.speed = std::string(speed);
  return Status::Ok();
}

// "4: ACTIVE" -> "ACTIVE"
std::string_view StateName(std::string_view v) {
  std::size_t colon = v.find(':');
  return colon == std::string_view::npos ? v : text::Trim(v.substr(colon + 1));
}

}  // namespace

Result<std::vector<IbDevice>> ParseInfinibandSysfs(std::string_view input) {
  if (Status s = text::CheckInput(input, kMaxSectionBytes); !s) return s.error();
  std::map<std::string, IbDevice> devices;
  std::map<std::pair<std::string, int>, IbPort> ports;
  std::vector<std::string_view> lines = text::Lines(input);
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (text::Trim(lines[i]).empty()) continue;
    auto [dev, r1] = text::HeadTail(lines[i]);
    auto [port_text, r2] = text::HeadTail(r1);
    auto [attr, value] = text::HeadTail(r2);
    std::optional<int> port =
        port_text == "-" ? std::optional<int>(0) : text::ToIntIn(port_text, 1, 255);
    if (!IsName(dev) || !port || attr.empty()) {
      return LineError(i, fmt::format("expected '<device> <port|-> <attribute> <value>', got {}",
                                      Quote(lines[i])));
    }
    IbDevice& d = devices[std::string(dev)];
    d.name = std::string(dev);
    if (*port == 0) {
      if (attr == "fw_ver") d.fw_version = std::string(value.substr(0, 64));
      if (attr == "board_id") d.board_id = std::string(value.substr(0, 64));
      if (attr == "node_guid") {
        // sysfs prints the GUID as four colon-separated groups: "0002:c903:0029:3e1e"
        // (drivers/infiniband/core/sysfs.c, node_guid_show); subnet tools print 0x + 16 hex.
        std::string hex;
        for (char ch : value) {
          if (ch == ':') continue;
          hex += static_cast<char>(ch >= 'A' && ch <= 'F' ? ch - 'A' + 'a' : ch);
        }
        if (hex.size() != 16 || !text::ToHex(hex))
          return LineError(i, fmt::format("{} node_guid: expected 'xxxx:xxxx:xxxx:xxxx', got {}", dev, Quote(value)));
        d.node_guid = "0x" + hex;
      }
      if (attr == "net") {
        if (!IsName(value))
          return LineError(
              i, fmt::format("{} net: expected an interface name, got {}", dev, Quote(value)));
        d.netdevs.emplace_back(value);
      }
      continue;
    }
    IbPort& p = ports[{std::string(dev), *port}];
    p.port = *port;
    std::string_view shown = value.substr(0, 64);
    if (attr == "state") p.state = std::string(StateName(shown));
    if (attr == "phys_state") p.phys_state = std::string(StateName(shown));
    if (attr == "link_layer") p.link_layer = std::string(shown);
    if (attr == "gid0") {
      // "fe80:0000:0000:0000:0002:c903:0029:3e1f": eight groups; the low four are the port GUID.
      std::string hex;
      int groups = 0;
      for (std::string_view g : text::Split(text::Trim(value), ':')) {
        ++groups;
        if (groups > 4) hex += std::string(g);
      }
      for (char& ch : hex) ch = static_cast<char>(ch >= 'A' && ch <= 'F' ? ch - 'A' + 'a' : ch);
      if (groups != 8 || hex.size() != 16 || !text::ToHex(hex))
        return LineError(i, fmt::format("{} port {} gid0: expected eight groups of four hex digits, got {}", dev, *port,
                                        Quote(value)));
      p.port_guid = "0x" + hex;
    }
    if (attr == "lid") {
      std::optional<std::uint64_t> lid = text::ToHex(value);
      if (!lid || *lid > 0xffff)
        return LineError(i, fmt::format("{} port {} lid: expected a hex LID, got {}", dev, *port, Quote(value)));
      p.lid = static_cast<int>(*lid);
    }
    if (attr == "rate") {
      p.rate = std::string(shown);
      if (Status st = ReadRate(value, p); !st) {
        return LineError(i, fmt::format("{} port {} rate: {}", dev, *port, st.error().message));
      }
    }
  }
  for (auto& [key, p] : ports) devices[key.first].ports.push_back(std::move(p));
  std::vector<IbDevice> out;
  for (auto& [name, d] : devices) out.push_back(std::move(d));
  return out;
}

}  // namespace gpuforge::facts
