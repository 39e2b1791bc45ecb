// RoCE host configuration (issue #13, part 3) and the nccl.conf corrections (part 4). The
// script and sysctl file are checked by their consumers: sh -n and shellcheck parse the
// script; in a network namespace of its own, the real `ip` and `sysctl` apply the link, route
// and sysctl parts to veth devices named like the example's ports, and the kernel's view is
// read back.

#include <gtest/gtest.h>
#include <fmt/format.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "gpuforge/inventory/loader.h"
#include "gpuforge/render/render.h"

namespace gpuforge::render {
namespace {

namespace fs = std::filesystem;
const std::string kSrc = GPUFORGE_SOURCE_DIR;

Options Opts() {
  Options o;
  o.templates_dir = kSrc + "/templates";
  o.inventory_label = "example.yaml";
  return o;
}

const RenderedFile* Find(const Output& out, const std::string& node, const std::string& path) {
  for (const RenderedFile& f : out.files) {
    if (f.node == node && f.path == path) return &f;
  }
  return nullptr;
}

Output RenderExample() {
  auto in = inventory::LoadFile(kSrc + "/inventories/examples/a100-roce-k8s.yaml");
  EXPECT_TRUE(in.ok()) << in.FormatDiagnostics();
  Result<Output> out = Render(*in.cluster, Opts());
  EXPECT_TRUE(out.ok()) << out.error().message;
  return std::move(*out);
}

Output RenderText(const std::string& yaml) {
  auto in = inventory::LoadString(yaml, "t.yaml");
  EXPECT_TRUE(in.ok()) << in.FormatDiagnostics();
  if (!in.ok()) return {};
  Result<Output> out = Render(*in.cluster, Opts());
  EXPECT_TRUE(out.ok()) << out.error().message;
  return out.ok() ? std::move(*out) : Output{};
}

// Runs `sh -c script` and returns {exit status, stdout+stderr}.
std::pair<int, std::string> Shell(const std::string& command) {
  std::string out;
  FILE* p = ::popen((command + " 2>&1").c_str(), "r");
  if (p == nullptr) return {-1, "popen failed"};
  char buf[4096];
  while (std::size_t n = std::fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  int st = ::pclose(p);
  return {WIFEXITED(st) ? WEXITSTATUS(st) : -1, out};
}

fs::path Scratch(const std::string& name) {
  fs::path d = fs::temp_directory_path() / fmt::format("gpuforge-roce-{}-{}", name, ::getpid());
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

void Write(const fs::path& p, const std::string& text) {
  std::ofstream(p, std::ios::binary) << text;
}

TEST(RenderRoce, ExampleRendersMtuQosAndTrafficClass) {
  Output out = RenderExample();
  const RenderedFile* script = Find(out, "gpu01", "/usr/local/sbin/gpuforge-roce-setup");
  ASSERT_NE(script, nullptr);
  EXPECT_EQ(script->mode, "0755");
  EXPECT_TRUE(script->content.starts_with("#!/bin/bash\n"));  // like every rendered script (engine_test)
  // Both cabled ports: MTU 9000 and their addresses, one routing table each, DSCP 26 on
  // priority 3 with PFC on priority 3 only and ECN on.
  EXPECT_NE(script->content.find("port_link 'ens1f0np0' 9000 '198.18.8.1/24'"), std::string::npos) << script->content;
  EXPECT_NE(script->content.find("port_link 'ens1f1np1' 9000 '198.18.8.101/24'"), std::string::npos);
  EXPECT_NE(script->content.find("port_route 'ens1f0np0' '198.18.8.1' '198.18.8.0/24' 100 1000"), std::string::npos);
  EXPECT_NE(script->content.find("port_route 'ens1f1np1' '198.18.8.101' '198.18.8.0/24' 101 1001"), std::string::npos);
  EXPECT_NE(script->content.find("port_qos 'ens1f0np0' 26 3 0,0,0,1,0,0,0,0 '0:off 1:off 2:off 3:on 4:off 5:off 6:off "
                                 "7:off' 1"),
            std::string::npos);
  // The spare card (no network, no address) is left alone.
  EXPECT_EQ(script->content.find("ens2f0np0"), std::string::npos);
  // gpu04 gets its own addresses.
  const RenderedFile* s4 = Find(out, "gpu04", "/usr/local/sbin/gpuforge-roce-setup");
  ASSERT_NE(s4, nullptr);
  EXPECT_NE(s4->content.find("'198.18.8.104/24'"), std::string::npos);

  const RenderedFile* unit = Find(out, "gpu01", "/etc/systemd/system/gpuforge-roce.service");
  ASSERT_NE(unit, nullptr);
  EXPECT_NE(unit->content.find("ExecStart=/usr/local/sbin/gpuforge-roce-setup\n"), std::string::npos);
  // #28 item 6: after each port's device, not only network.target, and tried again on failure.
  EXPECT_NE(unit->content.find("\nAfter=network.target sys-subsystem-net-devices-ens1f0np0.device "
                               "sys-subsystem-net-devices-ens1f1np1.device\n"),
            std::string::npos)
      << unit->content;
  EXPECT_NE(unit->content.find("\nRestart=on-failure\n"), std::string::npos) << unit->content;

  const RenderedFile* notes = Find(out, "gpu01", "/etc/gpuforge/roce-notes.txt");
  ASSERT_NE(notes, nullptr);
  for (const char* want : {"# Switch contract:", "DSCP 26 classified to switch priority 3",
                           "PFC: enabled (no-drop) on priority 3, and only on it", "ECN marking (WRED/ECN)",
                           "at least 9000 bytes", "NCCL_IB_TC 104", "ens1f0np0, ens1f1np1 share 198.18.8.0/24",
                           "mlnx_qos from the mlnx-tools package", "dcb from iproute2"}) {
    EXPECT_NE(notes->content.find(want), std::string::npos) << want << "\n" << notes->content;
  }

  const RenderedFile* conf = Find(out, "gpu01", "/etc/nccl.conf");
  ASSERT_NE(conf, nullptr);
  EXPECT_NE(conf->content.find("\nNCCL_IB_TC=104\n"), std::string::npos) << conf->content;
  EXPECT_NE(conf->content.find("\nNCCL_IB_HCA==mlx5_0:1,mlx5_1:1\n"), std::string::npos) << conf->content;
  // The k8s control node has no RoCE ports: no RoCE files.
  EXPECT_EQ(Find(out, "k8s-cp01", "/usr/local/sbin/gpuforge-roce-setup"), nullptr);
}

// NCCL 2.21 (the example's pin) reads every nccl.conf line with '=' as a setting, comment or
// not (src/misc/param.cc setEnvFile; '#' skipping came in 2.26), and has no NCCL_CONF_FILE
// (2.23+). Checked the way that parser reads the file.
TEST(RenderRoce, NcclConfCommentsHoldNoEqualsAndTheHeaderFitsTheVersion) {
  Output out = RenderExample();
  const RenderedFile* conf = Find(out, "gpu01", "/etc/nccl.conf");
  ASSERT_NE(conf, nullptr);
  std::istringstream in(conf->content);
  std::string line;
  int settings = 0;
  while (std::getline(in, line)) {
    if (line.starts_with("#")) {
      EXPECT_EQ(line.find('='), std::string::npos) << "NCCL 2.21 would read this comment as a setting: " << line;
    } else if (line.find('=') != std::string::npos) {
      ++settings;
      EXPECT_TRUE(line.starts_with("NCCL_")) << line;
    }
  }
  EXPECT_GE(settings, 4);
  EXPECT_EQ(conf->content.find("reads $NCCL_CONF_FILE"), std::string::npos) << conf->content;
  EXPECT_NE(conf->content.find("NCCL 2.21.5 reads ~/.nccl.conf, then this file"), std::string::npos) << conf->content;

  std::string base = R"(cluster: {name: t}
profiles:
  p: {gpus: {model: H100, count: 8}}
nodes: [{name: n1, profile: p}]
software: {nccl: {version: "VERSION"}}
)";
  auto header = [&](const std::string& version) {
    std::string yaml = base;
    yaml.replace(yaml.find("VERSION"), 7, version);
    Output o = RenderText(yaml);
    const RenderedFile* f = Find(o, "n1", "/etc/nccl.conf");
    return f == nullptr ? std::string() : f->content;
  };
  EXPECT_NE(header("2.23.4").find("NCCL 2.23.4 reads $NCCL_CONF_FILE (else ~/.nccl.conf)"), std::string::npos);
  EXPECT_NE(header("2.28.9").find("reads $NCCL_CONF_FILE"), std::string::npos);
  EXPECT_EQ(header("2.22.3").find("reads $NCCL_CONF_FILE"), std::string::npos);
}

TEST(RenderRoce, HcaFromTheInventoryBecomesExactAndExclusionsToo) {
  std::string yaml = R"(cluster: {name: t}
networks: {ib: {role: compute, kind: infiniband, rate: 400Gb/s}}
profiles:
  p:
    gpus: {model: H100, count: 8}
    nics: [{name: "mlx5_[0-1]", kind: infiniband, rate: 400Gb/s, network: ib}]
nodes: [{name: n1, profile: p}]
software: {nccl: {env: {NCCL_IB_HCA: "HCA"}}}
)";
  auto hca = [&](const std::string& v) {
    std::string y = yaml;
    y.replace(y.find("HCA\""), 3, v);
    Output o = RenderText(y);
    const RenderedFile* f = Find(o, "n1", "/etc/nccl.conf");
    if (f == nullptr) return std::string();
    std::size_t at = f->content.find("\nNCCL_IB_HCA=");
    return at == std::string::npos ? std::string() : f->content.substr(at + 13, f->content.find('\n', at + 1) - at - 13);
  };
  EXPECT_EQ(hca("mlx5_1"), "=mlx5_1");
  EXPECT_EQ(hca("=mlx5_1:1"), "=mlx5_1:1");
  EXPECT_EQ(hca("^mlx5_1"), "^=mlx5_1");
  EXPECT_EQ(hca("^=mlx5_1"), "^=mlx5_1");
}

TEST(RenderRoce, GidIndexOnlyWhenTheNetworkPinsItAndRelaxedOrderingOnVms) {
  std::string yaml = R"(cluster: {name: t}
networks: {r: {role: compute, kind: roce, rate: 400Gb/s, roce: {dscp: 24, pfc_priority: 4, gid_index: 5}}}
profiles:
  p:
    virtual: true
    gpus: {model: H100, count: 8}
    nics: [{name: mlx5_0, kind: roce, rate: 400Gb/s, network: r, netdev: eth1}]
nodes: [{name: n1, profile: p, port_addresses: {mlx5_0: 198.18.20.1/24}}]
)";
  Output o = RenderText(yaml);
  const RenderedFile* f = Find(o, "n1", "/etc/nccl.conf");
  ASSERT_NE(f, nullptr);
  EXPECT_NE(f->content.find("\nNCCL_IB_GID_INDEX=5\n"), std::string::npos) << f->content;
  EXPECT_NE(f->content.find("\nNCCL_IB_TC=96\n"), std::string::npos) << f->content;
  EXPECT_NE(f->content.find("\nNCCL_IB_PCI_RELAXED_ORDERING=1\n"), std::string::npos) << f->content;
  const RenderedFile* s = Find(o, "n1", "/usr/local/sbin/gpuforge-roce-setup");
  ASSERT_NE(s, nullptr);
  EXPECT_NE(s->content.find("port_qos 'eth1' 24 4 0,0,0,0,1,0,0,0"), std::string::npos) << s->content;
  // Bare metal: NCCL's default (2, use it when available) stays.
  std::string bare = yaml;
  bare.erase(bare.find("    virtual: true\n"), 18);
  Output b = RenderText(bare);
  const RenderedFile* g = Find(b, "n1", "/etc/nccl.conf");
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(g->content.find("RELAXED_ORDERING"), std::string::npos);
}

// systemd reads the unit: `systemd-analyze verify` with the script's path swapped for /bin/true.
TEST(RenderRoce, SystemdAcceptsTheUnit) {
  if (!fs::exists("/usr/bin/systemd-analyze")) GTEST_SKIP() << "no systemd-analyze";
  Output out = RenderExample();
  const RenderedFile* unit = Find(out, "gpu01", "/etc/systemd/system/gpuforge-roce.service");
  ASSERT_NE(unit, nullptr);
  std::string text = unit->content;
  const std::string script = "/usr/local/sbin/gpuforge-roce-setup";
  for (std::size_t at; (at = text.find("ExecStart=" + script)) != std::string::npos;) {
    text.replace(at + 10, script.size(), "/bin/true");
  }
  fs::path dir = Scratch("unit");
  Write(dir / "gpuforge-roce.service", text);
  auto [rc, output] = Shell(fmt::format("SYSTEMD_UNIT_PATH='{0}': timeout 30 systemd-analyze verify '{0}/gpuforge-roce.service' 2>&1",
                                        dir.string()));
  EXPECT_EQ(rc, 0) << output << "\n" << text;
  EXPECT_EQ(output.find("Unknown key"), std::string::npos) << output;
  fs::remove_all(dir);
}

TEST(RenderRoce, ScriptAndSysctlFileParse) {
  Output out = RenderExample();
  const RenderedFile* script = Find(out, "gpu01", "/usr/local/sbin/gpuforge-roce-setup");
  ASSERT_NE(script, nullptr);
  fs::path dir = Scratch("parse");
  Write(dir / "setup", script->content);
  auto [rc, text] = Shell(fmt::format("sh -n '{}'", (dir / "setup").string()));
  EXPECT_EQ(rc, 0) << text;
  if (Shell("command -v shellcheck").first == 0) {
    auto [src, stext] = Shell(fmt::format("shellcheck -s sh '{}'", (dir / "setup").string()));
    EXPECT_EQ(src, 0) << stext;
  }
  // An unknown part is refused before anything runs.
  auto [urc, utext] = Shell(fmt::format("sh '{}' bogus", (dir / "setup").string()));
  EXPECT_EQ(urc, 2) << utext;
  EXPECT_NE(utext.find("unknown part 'bogus'"), std::string::npos) << utext;
  fs::remove_all(dir);
}

// The real consumer: in a network and mount namespace of its own (nothing reaches this
// machine's interfaces), two veth devices named like gpu01's RoCE ports get the rendered link
// and route parts and the rendered sysctl file; `ip -d link`, `ip addr`, `ip rule`, `ip route`
// and `sysctl` read the result back. 198.18.0.0/15 addresses only.
TEST(RenderRoce, NetnsAppliesLinkRouteAndSysctlToVeths) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root for a network namespace";
  auto [probe_rc, probe] = Shell("unshare --net --mount true");
  if (probe_rc != 0) GTEST_SKIP() << "unshare --net --mount is not permitted here: " << probe;
  for (const char* tool : {"ip", "sysctl", "mount"}) {
    if (Shell(fmt::format("command -v {}", tool)).first != 0) GTEST_SKIP() << tool << " is not installed";
  }
  Output out = RenderExample();
  const RenderedFile* script = Find(out, "gpu01", "/usr/local/sbin/gpuforge-roce-setup");
  const RenderedFile* sysctl = Find(out, "gpu01", "/etc/sysctl.d/91-gpuforge-roce.conf");
  ASSERT_NE(script, nullptr);
  ASSERT_NE(sysctl, nullptr);
  fs::path dir = Scratch("netns");
  Write(dir / "setup", script->content);
  Write(dir / "sysctl.conf", sysctl->content);
  // sysfs is mounted again inside so /sys/class/net shows this namespace's devices.
  // The commands go to a file, so no shell outside the namespace expands them.
  std::string inner = fmt::format(
      "set -e; mount -t sysfs sysfs /sys; "
      "ip link add ens1f0np0 type veth peer name peer0; ip link add ens1f1np1 type veth peer name peer1; "
      "ip link set peer0 up; ip link set peer1 up; "
      "sh {0}/setup link route; sh {0}/setup link route; "  // twice: it must be idempotent
      "sysctl -q -p {0}/sysctl.conf; "
      "echo '== link'; ip -d link show ens1f0np0; ip -d link show ens1f1np1; "
      "echo '== addr'; ip -4 -o addr show; "
      "echo '== rule'; ip rule show; "
      "echo '== t100'; ip route show table 100; echo '== t101'; ip route show table 101; "
      "echo '== sysctl'; for i in ens1f0np0 ens1f1np1; do for k in arp_ignore arp_announce rp_filter; do "
      "echo \"$i.$k=$(sysctl -n net.ipv4.conf.$i.$k)\"; done; done\n",
      dir.string());
  Write(dir / "inner.sh", inner);
  // #28 item 6: only the second port is there. The first is named, and the second still gets
  // its MTU and address: the script used to stop at the first missing port.
  Write(dir / "missing.sh",
        fmt::format("mount -t sysfs sysfs /sys; ip link add ens1f1np1 type veth peer name peer1; ip link set peer1 up; "
                    "sh {}/setup link route; echo \"rc=$?\"; ip -d link show ens1f1np1; ip -4 -o addr show\n",
                    dir.string()));
  auto [rc, text] = Shell(fmt::format("unshare --net --mount sh '{}/inner.sh'", dir.string()));
  ASSERT_EQ(rc, 0) << text;
  auto section = [&](const std::string& name) {
    std::size_t a = text.find("== " + name + "\n");
    if (a == std::string::npos) return std::string();
    std::size_t b = text.find("\n== ", a + 1);
    return text.substr(a, b == std::string::npos ? std::string::npos : b - a);
  };
  std::string link = section("link"), addr = section("addr"), rule = section("rule");
  EXPECT_NE(link.find("ens1f0np0@peer0: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 9000"), std::string::npos) << text;
  EXPECT_NE(link.find("ens1f1np1@peer1: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 9000"), std::string::npos) << text;
  EXPECT_NE(link.find("veth"), std::string::npos) << "ip -d prints the link kind: " << text;
  EXPECT_NE(addr.find("ens1f0np0    inet 198.18.8.1/24"), std::string::npos) << text;
  EXPECT_NE(addr.find("ens1f1np1    inet 198.18.8.101/24"), std::string::npos) << text;
  EXPECT_NE(rule.find("1000:\tfrom 198.18.8.1 lookup 100"), std::string::npos) << text;
  EXPECT_NE(rule.find("1001:\tfrom 198.18.8.101 lookup 101"), std::string::npos) << text;
  // Run twice, yet one rule each.
  EXPECT_EQ(rule.find("from 198.18.8.1 lookup 100"), rule.rfind("from 198.18.8.1 lookup 100")) << text;
  EXPECT_NE(section("t100").find("198.18.8.0/24 dev ens1f0np0 scope link src 198.18.8.1"), std::string::npos) << text;
  EXPECT_NE(section("t101").find("198.18.8.0/24 dev ens1f1np1 scope link src 198.18.8.101"), std::string::npos) << text;
  std::string sys = section("sysctl");
  for (const char* want : {"ens1f0np0.arp_ignore=1", "ens1f0np0.arp_announce=2", "ens1f0np0.rp_filter=2",
                           "ens1f1np1.arp_ignore=1", "ens1f1np1.arp_announce=2", "ens1f1np1.rp_filter=2"}) {
    EXPECT_NE(sys.find(want), std::string::npos) << want << "\n" << text;
  }
  // A port that is not there is an error naming it, not a silent success, and not the end of the
  // other ports' configuration.
  auto [mrc, mtext] = Shell(fmt::format("unshare --net --mount sh '{}/missing.sh'", dir.string()));
  EXPECT_NE(mtext.find("rc=1"), std::string::npos) << mtext;
  EXPECT_NE(mtext.find("there is no interface ens1f0np0"), std::string::npos) << mtext;
  EXPECT_NE(mtext.find("failed: ens1f0np0:link ens1f0np0:route (every other port and part was configured)"),
            std::string::npos)
      << mtext;
  EXPECT_NE(mtext.find("ens1f1np1@peer1: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 9000"), std::string::npos) << mtext;
  EXPECT_NE(mtext.find("ens1f1np1    inet 198.18.8.101/24"), std::string::npos) << mtext;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace gpuforge::render
