#include "gpuforge/model/roce.h"

#include <fmt/format.h>

#include <charconv>

namespace gpuforge::model {

namespace {

std::string Quad(std::uint32_t a) {
  return fmt::format("{}.{}.{}.{}", a >> 24, (a >> 16) & 0xff, (a >> 8) & 0xff, a & 0xff);
}

// One decimal field without sign or leading zero ("0" itself is fine), at most `max`.
std::optional<unsigned> Field(std::string_view s, unsigned max) {
  if (s.empty() || s.size() > 3 || (s.size() > 1 && s[0] == '0')) return std::nullopt;
  unsigned v = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || ptr != s.data() + s.size() || v > max) return std::nullopt;
  return v;
}

}  // namespace

std::string Ipv4Prefix::Address() const { return Quad(address); }

std::string Ipv4Prefix::Subnet() const {
  std::uint32_t mask = length == 0 ? 0 : ~std::uint32_t{0} << (32 - length);
  return fmt::format("{}/{}", Quad(address & mask), length);
}

std::string Ipv4Prefix::ToString() const { return fmt::format("{}/{}", Quad(address), length); }

std::optional<Ipv4Prefix> ParseIpv4Prefix(std::string_view s) {
  std::size_t slash = s.find('/');
  if (slash == std::string_view::npos) return std::nullopt;
  std::optional<unsigned> len = Field(s.substr(slash + 1), 32);
  if (!len || *len == 0) return std::nullopt;
  std::string_view quad = s.substr(0, slash);
  std::uint32_t addr = 0;
  for (int i = 0; i < 4; ++i) {
    std::size_t dot = quad.find('.');
    if ((i < 3) != (dot != std::string_view::npos)) return std::nullopt;
    std::optional<unsigned> f = Field(quad.substr(0, dot), 255);
    if (!f) return std::nullopt;
    addr = addr << 8 | *f;
    quad = dot == std::string_view::npos ? std::string_view() : quad.substr(dot + 1);
  }
  return Ipv4Prefix{addr, static_cast<int>(*len)};
}

std::vector<RocePort> RocePorts(const Cluster& c, const Node& n) {
  std::vector<RocePort> out;
  const Profile& p = c.ProfileOf(n);
  for (const NicSpec& nic : p.nics) {
    if (nic.kind != NetKind::kRoce) continue;
    const Network* net = nic.network.empty() ? nullptr : c.FindNetwork(nic.network);
    auto addr = n.port_addresses.find(nic.name);
    bool on_roce = net != nullptr && net->kind == NetKind::kRoce;
    if (!on_roce && addr == n.port_addresses.end()) continue;
    RocePort port;
    port.nic = &nic;
    port.network = net;
    if (net != nullptr && net->roce) port.settings = *net->roce;
    if (addr != n.port_addresses.end()) port.address = ParseIpv4Prefix(addr->second);
    port.table = kRoceTableBase + static_cast<int>(out.size());
    port.rule_pref = kRoceRulePrefBase + static_cast<int>(out.size());
    out.push_back(port);
  }
  return out;
}

}  // namespace gpuforge::model
