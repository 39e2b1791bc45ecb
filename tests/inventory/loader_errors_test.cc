// The loader on bad input: every mistake the inventory issue lists, each as a small YAML
// document. The message is the interface an operator reads at 2 AM, so for most cases the whole
// formatted output is pinned (file:line:col, message, quoted line, caret, count line); for the
// rest the position and message of every error are.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "gpuforge/inventory/loader.h"

namespace gpuforge::inventory {
namespace {

// A small inventory that loads; each test breaks one thing in it.
constexpr std::string_view kBase = R"y(version: 1
cluster: {name: t}
networks:
  ib: {role: compute, kind: infiniband, rate: 400Gb/s}
profiles:
  p:
    gpus: {model: H200, count: 2, pci: ["0000:18:00.0", "0000:2a:00.0"]}
    nics:
      - {name: "mlx5_[0-1]", kind: infiniband, rate: 400Gb/s, network: ib}
nodes:
  - {name: "gpu[1-2]", address: "10.0.0.[1-2]", profile: p}
switches:
  - {name: leaf1, tier: leaf, network: ib, ports: 8, port_rate: 400Gb/s}
links:
  - {from: "gpu[1-2]:mlx5_0", to: "leaf1:[1-2]"}
)y";

// kBase with the one occurrence of `from` replaced by `to`.
std::string Edit(std::string_view from, std::string_view to, std::string base = std::string(kBase)) {
  std::size_t at = base.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  EXPECT_EQ(base.find(from, at + 1), std::string::npos) << from << " is not unique";
  if (at != std::string::npos) base.replace(at, from.size(), to);
  return base;
}

// The whole formatted output of a load that must fail.
std::string Diagnostics(std::string_view yaml) {
  LoadOutcome out = LoadString(yaml, "inv.yaml");
  EXPECT_FALSE(out.ok());
  EXPECT_FALSE(out.cluster.has_value());
  return out.FormatDiagnostics();
}

// "line:col: message" for every diagnostic of a load that must fail.
std::vector<std::string> Errors(std::string_view yaml) {
  LoadOutcome out = LoadString(yaml, "inv.yaml");
  EXPECT_FALSE(out.ok());
  EXPECT_FALSE(out.cluster.has_value());
  std::vector<std::string> errors;
  for (const Diagnostic& d : out.diags.items()) {
    EXPECT_EQ(d.severity, DiagSeverity::kError);
    EXPECT_EQ(d.pos.file, "inv.yaml");
    errors.push_back(std::to_string(d.pos.line) + ":" + std::to_string(d.pos.col) + ": " + d.message);
  }
  return errors;
}

TEST(LoaderErrors, BaseLoads) {
  LoadOutcome out = LoadString(kBase, "inv.yaml");
  ASSERT_TRUE(out.ok()) << out.FormatDiagnostics();
  EXPECT_EQ(out.cluster->nodes.size(), 2u);
  EXPECT_EQ(out.cluster->links.size(), 2u);
}

TEST(LoaderDiagnostics, UnclosedFlowList) {
  EXPECT_EQ(Diagnostics(Edit(R"y(    gpus: {model: H200, count: 2, pci: ["0000:18:00.0", "0000:2a:00.0"]})y", R"y(    gpus: {model: H200, count: 2}
    memory: 2TB
    numa: [0, 1)y")),
            R"d(inv.yaml:9:11: error: this '[' is never closed: a flow list needs a matching ']'
 9 |     numa: [0, 1
   |           ^
1 error in inv.yaml
)d");
}

TEST(LoaderDiagnostics, MismatchedFlowEnd) {
  EXPECT_EQ(Diagnostics(Edit(R"y(pci: ["0000:18:00.0", "0000:2a:00.0"]})y", R"y(pci: ["0000:18:00.0", "0000:2a:00.0"})y")),
            R"d(inv.yaml:7:71: error: this '}' does not close the '[' opened at line 7, column 40; that one needs a ']'
 7 |     gpus: {model: H200, count: 2, pci: ["0000:18:00.0", "0000:2a:00.0"}
   |                                                                       ^
1 error in inv.yaml
)d");
}

TEST(LoaderDiagnostics, UnclosedFlowMapping) {
  EXPECT_EQ(Diagnostics(Edit(R"y(  ib: {role: compute, kind: infiniband, rate: 400Gb/s})y", R"y(  ib: {role: compute, kind: infiniband, rate: 400Gb/s)y")),
            R"d(inv.yaml:4:7: error: this '{' is never closed: a flow mapping needs a matching '}'
 4 |   ib: {role: compute, kind: infiniband, rate: 400Gb/s
   |       ^
1 error in inv.yaml
)d");
}

TEST(LoaderDiagnostics, BadIndentation) {
  EXPECT_EQ(Diagnostics(R"y(cluster:
  name: t
   site: {pue: 1.2}
profiles: {}
)y"),
            R"d(inv.yaml:3:4: error: bad indentation: this line is indented deeper than line 2, which already has a value, so YAML reads it as more of that value; indent it like the key above
 3 |    site: {pue: 1.2}
   |    ^
1 error in inv.yaml
)d");
}

TEST(LoaderErrors, BadIndentationDedent) {
  EXPECT_EQ(Errors(R"y(cluster:
    name: t
  site: {pue: 1.2}
)y"),
            (std::vector<std::string>{
              R"d(3:3: bad indentation: this line does not line up with the keys above it (YAML: end of map not found))d"}));
}

TEST(LoaderDiagnostics, TabInIndentation) {
  EXPECT_EQ(Diagnostics(R"y(cluster:
	name: t
)y"),
            R"d(inv.yaml:2:1: error: tab character in indentation; YAML indents with spaces only
 2 | 	name: t
   | ^
1 error in inv.yaml
)d");
}

TEST(LoaderDiagnostics, UnquotedHostlistInFlowMapping) {
  EXPECT_EQ(Diagnostics(Edit(R"y({name: leaf1, tier)y", R"y({name: leaf[1-2], tier)y")),
            R"d(inv.yaml:13:12: error: in flow style ({...} or [...]) '[' starts a nested list, so leaf[1-2] is not read as one value; quote it: "leaf[1-2]"
 13 |   - {name: leaf[1-2], tier: leaf, network: ib, ports: 8, port_rate: 400Gb/s}
    |            ^~~~~~~~~
1 error in inv.yaml
)d");
}

TEST(LoaderErrors, BacktickStartsValue) {
  EXPECT_EQ(Errors(Edit(R"y(cluster: {name: t})y", R"y(cluster:
  name: `reboot`)y")),
            (std::vector<std::string>{
              R"d(3:9: '`' cannot start a YAML value; quote the value (and note that inventory names may not contain it))d"}));
}

TEST(LoaderErrors, ColonInPlainValue) {
  EXPECT_EQ(Errors(R"y(cluster:
  name: a: b
)y"),
            (std::vector<std::string>{
              R"d(2:10: unexpected ':' (YAML: illegal map value); a value that contains ': ' must be quoted, and a nested mapping goes on its own, further indented lines)d"}));
}

TEST(LoaderErrors, MapWhereScalarExpected) {
  EXPECT_EQ(Errors(Edit(R"y(cluster: {name: t})y", R"y(cluster: {name: {first: t}})y")),
            (std::vector<std::string>{
              R"d(2:17: 'name' in cluster must be a single value, not a mapping)d"}));
}

TEST(LoaderErrors, ListWhereMapExpected) {
  EXPECT_EQ(Errors(Edit(R"y(cluster: {name: t})y", R"y(cluster: [t])y")),
            (std::vector<std::string>{
              R"d(2:10: cluster must be a mapping of key: value, not a list)d"}));
}

TEST(LoaderDiagnostics, StringWhereIntExpected) {
  EXPECT_EQ(Diagnostics(Edit(R"y(count: 2,)y", R"y(count: two,)y")),
            R"d(inv.yaml:7:32: error: 'count' in gpus of profile 'p' must be a whole number, not 'two'
 7 |     gpus: {model: H200, count: two, pci: ["0000:18:00.0", "0000:2a:00.0"]}
   |                                ^~~
1 error in inv.yaml
)d");
}

TEST(LoaderErrors, IntOutOfRange) {
  EXPECT_EQ(Errors(Edit(R"y(ports: 8,)y", R"y(ports: 100000,)y")),
            (std::vector<std::string>{
              R"d(13:51: 'ports' in switch entry 'leaf1' is 100000; it must be between 1 and 4096)d"}));
}

// An InfiniBand port number is 8 bits with 0 and 255 taken; an Ethernet switch may have more.
TEST(LoaderErrors, InfinibandSwitchPortsStopAt254) {
  EXPECT_EQ(Errors(Edit(R"y(ports: 8,)y", R"y(ports: 256,)y")),
            (std::vector<std::string>{
                R"d(13:51: switch entry 'leaf1' is on InfiniBand network 'ib', whose switches number their ports 1-254; 256 ports cannot be addressed (a director is several switches: list its leaves and spines))d"}));
  EXPECT_TRUE(LoadString(Edit(R"y(ports: 8,)y", R"y(ports: 254,)y"), "inv.yaml").ok());
  std::string eth = Edit("kind: infiniband, rate: 400Gb/s}", "kind: ethernet, rate: 400Gb/s}");
  eth = Edit("kind: infiniband, rate: 400Gb/s, network: ib}", "kind: ethernet, rate: 400Gb/s, network: ib}", eth);
  LoadOutcome big = LoadString(Edit(R"y(ports: 8,)y", R"y(ports: 512,)y", eth), "inv.yaml");
  EXPECT_TRUE(big.ok()) << big.FormatDiagnostics();
}

TEST(LoaderErrors, MissingRequiredKey) {
  EXPECT_EQ(Errors(Edit(R"y(kind: infiniband, rate: 400Gb/s, network: ib})y", R"y(kind: infiniband, network: ib})y")),
            (std::vector<std::string>{
              R"d(9:9: a NIC of profile 'p' is missing required key 'rate')d"}));
}

TEST(LoaderErrors, MissingRequiredTopLevel) {
  EXPECT_EQ(Errors(R"y(cluster: {name: t}
)y"),
            (std::vector<std::string>{
              R"d(1:1: the inventory is missing required key 'profiles')d",
              R"d(1:1: the inventory is missing required key 'nodes')d"}));
}

TEST(LoaderDiagnostics, UnknownKeyDidYouMean) {
  EXPECT_EQ(Diagnostics(Edit(R"y({name: leaf1, tier: leaf,)y", R"y({name: leaf1, teir: leaf,)y")),
            R"d(inv.yaml:13:19: error: unknown key 'teir' in a switch entry; did you mean 'tier'?
 13 |   - {name: leaf1, teir: leaf, network: ib, ports: 8, port_rate: 400Gb/s}
    |                   ^~~~
1 error in inv.yaml
)d");
}

TEST(LoaderErrors, UnknownKeyListsAllowed) {
  EXPECT_EQ(Errors(Edit(R"y(cluster: {name: t})y", R"y(cluster: {name: t, owner: me})y")),
            (std::vector<std::string>{
              R"d(2:20: unknown key 'owner' in cluster (allowed: name, site, economics))d"}));
}

TEST(LoaderDiagnostics, DuplicateKey) {
  EXPECT_EQ(Diagnostics(Edit(R"y(cluster: {name: t})y", R"y(cluster: {name: t, name: u})y")),
            R"d(inv.yaml:2:20: error: duplicate key 'name' in cluster; YAML keeps only one of them
 2 | cluster: {name: t, name: u}
   |                    ^~~~
1 error in inv.yaml
)d");
}

TEST(LoaderErrors, DuplicateNodeName) {
  EXPECT_EQ(Errors(Edit(R"y(nodes:
)y", R"y(nodes:
  - {name: gpu2, address: 10.0.0.9, profile: p}
)y")),
            (std::vector<std::string>{
              R"d(12:12: node 'gpu2' is declared twice (first at inv.yaml:11:12))d"}));
}

TEST(LoaderErrors, DuplicateAddress) {
  EXPECT_EQ(Errors(Edit(R"y(nodes:
)y", R"y(nodes:
  - {name: gpu9, address: 10.0.0.2, profile: p}
)y")),
            (std::vector<std::string>{
              R"d(12:33: address '10.0.0.2' of node gpu2 is already used by a node declared at inv.yaml:11:12)d"}));
}

TEST(LoaderDiagnostics, UndefinedProfile) {
  EXPECT_EQ(Diagnostics(Edit(R"y(profile: p})y", R"y(profile: pp})y")),
            R"d(inv.yaml:11:58: error: node entry 'gpu[1-2]' refers to profile 'pp', which is not defined under 'profiles'; did you mean 'p'?
 11 |   - {name: "gpu[1-2]", address: "10.0.0.[1-2]", profile: pp}
    |                                                          ^~
1 error in inv.yaml
)d");
}

TEST(LoaderErrors, UndefinedNetwork) {
  EXPECT_EQ(Errors(Edit(R"y(tier: leaf, network: ib,)y", R"y(tier: leaf, network: eth,)y")),
            (std::vector<std::string>{
              R"d(13:40: switch entry 'leaf1' is on network 'eth', which is not defined under 'networks')d"}));
}

TEST(LoaderErrors, UndefinedRack) {
  EXPECT_EQ(Errors(Edit(R"y(profile: p})y", R"y(profile: p, rack: r2})y") + R"y(racks: {r1: {power_limit: 20kW}}
)y"),
            (std::vector<std::string>{
              R"d(11:67: node entry 'gpu[1-2]' refers to rack 'r2', which is not declared under 'racks'; did you mean 'r1'?)d"}));
}

TEST(LoaderErrors, UndefinedGroup) {
  EXPECT_EQ(Errors(Edit(R"y(profile: p})y", R"y(profile: p, groups: [trian]})y") + R"y(groups: {train: {vars: {partition: gpu}}}
)y"),
            (std::vector<std::string>{
              R"d(11:70: node entry 'gpu[1-2]' is in group 'trian', which is not defined under 'groups'; did you mean 'train'?)d"}));
}

TEST(LoaderErrors, UndefinedSwitch) {
  EXPECT_EQ(Errors(Edit(R"y(to: "leaf1:[1-2]")y", R"y(to: "leaf2:[1-2]")y")),
            (std::vector<std::string>{
              R"d(15:35: link end 'leaf2:[1-2]': 'leaf2' is neither a node nor a switch; did you mean 'leaf1'?)d"}));
}

TEST(LoaderDiagnostics, LinkToMissingPort) {
  EXPECT_EQ(Diagnostics(Edit(R"y(to: "leaf1:[1-2]")y", R"y(to: "leaf1:[8-9]")y")),
            R"d(inv.yaml:15:35: error: link end 'leaf1:[8-9]': switch leaf1 has ports 1-8; there is no port '9'
 15 |   - {from: "gpu[1-2]:mlx5_0", to: "leaf1:[8-9]"}
    |                                   ^~~~~~~~~~~~~
1 error in inv.yaml
)d");
}

TEST(LoaderErrors, LinkToMissingNic) {
  EXPECT_EQ(Errors(Edit(R"y(from: "gpu[1-2]:mlx5_0")y", R"y(from: "gpu[1-2]:mlx5_2")y")),
            (std::vector<std::string>{
              R"d(15:12: link end 'gpu[1-2]:mlx5_2': node gpu1 (profile 'p') has no NIC 'mlx5_2'; did you mean 'mlx5_0'? (and 1 more problem in this link end))d"}));
}

TEST(LoaderErrors, PortUsedTwice) {
  EXPECT_EQ(Errors(std::string(kBase) + R"y(  - {from: "gpu1:mlx5_1", to: "leaf1:2"}
)y"),
            (std::vector<std::string>{
              R"d(16:31: switch port leaf1:2 is cabled twice, first at inv.yaml:15:35)d"}));
}

TEST(LoaderDiagnostics, NicCabledTwice) {
  EXPECT_EQ(Diagnostics(std::string(kBase) + R"y(  - {from: "gpu[1-2]:mlx5_0", to: "leaf1:[3-4]"}
)y"),
            R"d(inv.yaml:16:12: error: NIC gpu1:mlx5_0 is cabled twice, first at inv.yaml:15:12 (and 1 more like it in this entry)
 16 |   - {from: "gpu[1-2]:mlx5_0", to: "leaf1:[3-4]"}
    |            ^~~~~~~~~~~~~~~~~
1 error in inv.yaml
)d");
}

TEST(LoaderDiagnostics, LinkSidesDiffer) {
  EXPECT_EQ(Diagnostics(Edit(R"y(to: "leaf1:[1-2]")y", R"y(to: "leaf1:[1-3]")y")),
            R"d(inv.yaml:15:35: error: link 'gpu[1-2]:mlx5_0' -> 'leaf1:[1-3]' pairs 2 endpoints with 3; the two sides are zipped in order, so they must expand to the same count
 15 |   - {from: "gpu[1-2]:mlx5_0", to: "leaf1:[1-3]"}
    |                                   ^~~~~~~~~~~~~
1 error in inv.yaml
)d");
}

TEST(LoaderDiagnostics, ReversedRange) {
  EXPECT_EQ(Diagnostics(Edit(R"y({name: "gpu[1-2]")y", R"y({name: "gpu[5-1]")y")),
            R"d(inv.yaml:11:17: error: node name: hostlist "gpu[5-1]": reversed range "5-1"
 11 |   - {name: "gpu[5-1]", address: "10.0.0.[1-2]", profile: p}
    |                 ^
1 error in inv.yaml
)d");
}

TEST(LoaderErrors, EmptyRange) {
  EXPECT_EQ(Errors(Edit(R"y({name: "gpu[1-2]")y", R"y({name: "gpu[]")y")),
            (std::vector<std::string>{
              R"d(11:16: node name: hostlist "gpu[]": empty brackets "[]")d"}));
}

TEST(LoaderErrors, RangePastLimit) {
  EXPECT_EQ(Errors(Edit(R"y({name: "gpu[1-2]", address: "10.0.0.[1-2]",)y", R"y({name: "gpu[1-100000000]",)y")),
            (std::vector<std::string>{
              R"d(11:13: node name: hostlist "gpu[1-100000000]": expansion exceeds the limit of 65536 names)d"}));
}

TEST(LoaderErrors, AddressCountMismatch) {
  EXPECT_EQ(Errors(Edit(R"y("10.0.0.[1-2]")y", R"y("10.0.0.[1-3]")y")),
            (std::vector<std::string>{
              R"d(11:33: node entry 'gpu[1-2]' names 2 nodes but its address list expands to 3 addresses; they are paired in order, so the counts must match)d"}));
}

TEST(LoaderDiagnostics, ShellMetacharactersInName) {
  EXPECT_EQ(Diagnostics(Edit(R"y(switches:
)y", R"y(  - {name: "gpu;rm -rf /", profile: p}
switches:
)y")),
            R"d(inv.yaml:12:16: error: node name 'gpu;rm -rf /' contains ';'; a node name is a host name: letters, digits, '-' and '.' (with hostlist brackets)
 12 |   - {name: "gpu;rm -rf /", profile: p}
    |                ^
1 error in inv.yaml
)d");
}

TEST(LoaderErrors, CommandSubstitutionInName) {
  EXPECT_EQ(Errors(Edit(R"y(switches:
)y", R"y(  - {name: "$(reboot)", profile: p}
switches:
)y")),
            (std::vector<std::string>{
              R"d(12:13: node name '$(reboot)' contains '$'; a node name is a host name: letters, digits, '-' and '.' (with hostlist brackets))d"}));
}

TEST(LoaderErrors, BackticksInName) {
  EXPECT_EQ(Errors(Edit(R"y(switches:
)y", R"y(  - {name: 'gpu`id`', profile: p}
switches:
)y")),
            (std::vector<std::string>{
              R"d(12:16: node name 'gpu`id`' contains '`'; a node name is a host name: letters, digits, '-' and '.' (with hostlist brackets))d"}));
}

TEST(LoaderErrors, SpaceInName) {
  EXPECT_EQ(Errors(Edit(R"y(switches:
)y", R"y(  - {name: "gpu 1", profile: p}
switches:
)y")),
            (std::vector<std::string>{
              R"d(12:16: node name 'gpu 1' contains a space; a node name is a host name: letters, digits, '-' and '.' (with hostlist brackets))d"}));
}

TEST(LoaderErrors, NewlineEscapeInName) {
  EXPECT_EQ(Errors(Edit(R"y(switches:
)y", R"y(  - {name: "gpu1\nreboot", profile: p}
switches:
)y")),
            (std::vector<std::string>{
              R"d(12:17: node name 'gpu1\nreboot' contains a newline; a node name is a host name: letters, digits, '-' and '.' (with hostlist brackets))d"}));
}

TEST(LoaderErrors, LabelStartsWithDash) {
  EXPECT_EQ(Errors(Edit(R"y(switches:
)y", R"y(  - {name: "-gpu1", profile: p}
switches:
)y")),
            (std::vector<std::string>{
              R"d(12:12: node name '-gpu1': host name label '-gpu1' starts or ends with '-')d"}));
}

TEST(LoaderErrors, ShellInAddress) {
  EXPECT_EQ(Errors(Edit(R"y("10.0.0.[1-2]")y", R"y("10.0.0.1;id,10.0.0.2")y")),
            (std::vector<std::string>{
              R"d(11:42: address '10.0.0.1;id,10.0.0.2' contains ';'; an address is an IPv4 or IPv6 address or a host name (with hostlist brackets))d"}));
}

TEST(LoaderDiagnostics, NcclEnvCommandSubstitution) {
  EXPECT_EQ(Diagnostics(std::string(kBase) + R"y(software:
  nccl:
    env: {NCCL_SOCKET_IFNAME: "$(reboot)"}
)y"),
            R"d(inv.yaml:18:32: error: value of NCCL_SOCKET_IFNAME contains '$'; NCCL settings are written to nccl.conf and job environments, so values may hold only letters, digits and _.,:=^/+-%@~
 18 |     env: {NCCL_SOCKET_IFNAME: "$(reboot)"}
    |                                ^
1 error in inv.yaml
)d");
}

TEST(LoaderErrors, NcclEnvSemicolon) {
  EXPECT_EQ(Errors(std::string(kBase) + R"y(software:
  nccl:
    env: {NCCL_SOCKET_IFNAME: "eth0;reboot"}
)y"),
            (std::vector<std::string>{
              R"d(18:36: value of NCCL_SOCKET_IFNAME contains ';'; NCCL settings are written to nccl.conf and job environments, so values may hold only letters, digits and _.,:=^/+-%@~)d"}));
}

TEST(LoaderErrors, NcclEnvQuote) {
  EXPECT_EQ(Errors(std::string(kBase) + R"y(software:
  nccl:
    env: {NCCL_SOCKET_IFNAME: "eth0\"x"}
)y"),
            (std::vector<std::string>{
              R"d(18:36: value of NCCL_SOCKET_IFNAME contains '"'; NCCL settings are written to nccl.conf and job environments, so values may hold only letters, digits and _.,:=^/+-%@~)d"}));
}

TEST(LoaderErrors, NcclEnvNewline) {
  EXPECT_EQ(Errors(std::string(kBase) + R"y(software:
  nccl:
    env: {NCCL_SOCKET_IFNAME: "eth0\nNCCL_DEBUG=INFO"}
)y"),
            (std::vector<std::string>{
              R"d(18:36: value of NCCL_SOCKET_IFNAME contains a newline; NCCL settings are written to nccl.conf and job environments, so values may hold only letters, digits and _.,:=^/+-%@~)d"}));
}

TEST(LoaderErrors, NcclEnvName) {
  EXPECT_EQ(Errors(std::string(kBase) + R"y(software:
  nccl:
    env: {nccl_debug: INFO}
)y"),
            (std::vector<std::string>{
              R"d(18:11: NCCL environment variable: variable name 'nccl_debug' must be upper-case letters, digits and '_')d"}));
}

TEST(LoaderErrors, VarValueShell) {
  EXPECT_EQ(Errors(std::string(kBase) + R"y(defaults:
  vars: {site: "a;b"}
)y"),
            (std::vector<std::string>{
              R"d(17:18: variable 'site' in defaults.vars contains ';'; variables are written into rendered files and commands, so values may hold only letters, digits and _.,:=^/+-%@~)d"}));
}

TEST(LoaderErrors, SshJumpUser) {
  EXPECT_EQ(Errors(std::string(kBase) + R"y(defaults:
  ssh: {jump: "$(id)@bastion"}
)y"),
            (std::vector<std::string>{
              R"d(17:15: 'jump' in defaults.ssh is '$(id)@bastion': the part before '@' is not a user name; a user name is lower-case letters, digits, '_' and '-', starting with a letter or '_', at most 32 characters)d"}));
}

TEST(LoaderErrors, SshUser) {
  EXPECT_EQ(Errors(std::string(kBase) + R"y(defaults:
  ssh: {user: "Root Admin"}
)y"),
            (std::vector<std::string>{
              R"d(17:15: 'user' in defaults.ssh is 'Root Admin'; a user name is lower-case letters, digits, '_' and '-', starting with a letter or '_', at most 32 characters)d"}));
}

TEST(LoaderDiagnostics, QuantityWithoutUnit) {
  EXPECT_EQ(Diagnostics(Edit(R"y(rate: 400Gb/s, network: ib})y", R"y(rate: 400, network: ib})y")),
            R"d(inv.yaml:9:54: error: 'rate' in a NIC of profile 'p': '400' has no unit; write the bandwidth with its unit, like 400Gb/s or 50GB/s
 9 |       - {name: "mlx5_[0-1]", kind: infiniband, rate: 400, network: ib}
   |                                                      ^~~
1 error in inv.yaml
)d");
}

TEST(LoaderDiagnostics, BytesWhereBitsMeant) {
  EXPECT_EQ(Diagnostics(Edit(R"y(port_rate: 400Gb/s})y", R"y(port_rate: 400GB})y")),
            R"d(inv.yaml:13:65: error: 'port_rate' in switch entry 'leaf1': '400GB' has unit 'GB', which is not a bandwidth unit; write it like 400Gb/s or 50GB/s; that is a size: write '400Gb/s' for bits per second (as links are rated) or '400GB/s' for bytes per second
 13 |   - {name: leaf1, tier: leaf, network: ib, ports: 8, port_rate: 400GB}
    |                                                                 ^~~~~
1 error in inv.yaml
)d");
}

TEST(LoaderErrors, UnitCase) {
  EXPECT_EQ(Errors(Edit(R"y(port_rate: 400Gb/s})y", R"y(port_rate: 400gb/s})y")),
            (std::vector<std::string>{
              R"d(13:65: 'port_rate' in switch entry 'leaf1': '400gb/s' has unit 'gb/s', which is not a bandwidth unit; write it like 400Gb/s or 50GB/s; units are case-sensitive: did you mean '400Gb/s'?)d"}));
}

TEST(LoaderErrors, SizeWithoutBytes) {
  EXPECT_EQ(Errors(Edit(R"y(count: 2,)y", R"y(count: 2, memory: 141Gb, tdp: 700W,)y")),
            (std::vector<std::string>{
              R"d(7:43: 'memory' in gpus of profile 'p': '141Gb' has unit 'Gb', which is not a size unit; write it like 141GB or 2TiB; 'b' is bits and sizes are in bytes: did you mean '141GB'?)d"}));
}

TEST(LoaderDiagnostics, GpuPciCountMismatch) {
  EXPECT_EQ(Diagnostics(Edit(R"y(count: 2,)y", R"y(count: 4,)y")),
            R"d(inv.yaml:7:40: error: 'pci' in gpus of profile 'p' lists 2 bus ids for 4 GPUs (count: 4); give one per GPU, in GPU index order
 7 |     gpus: {model: H200, count: 4, pci: ["0000:18:00.0", "0000:2a:00.0"]}
   |                                        ^
1 error in inv.yaml
)d");
}

TEST(LoaderErrors, NicFieldListLength) {
  EXPECT_EQ(Errors(Edit(R"y(network: ib})y", R"y(network: ib, rail: [0, 1, 2]})y")),
            (std::vector<std::string>{
              R"d(9:82: 'rail' of NIC 'mlx5_[0-1]' lists 3 values for 2 NICs; give one value for all, or one per NIC)d"}));
}

TEST(LoaderDiagnostics, UnknownGpuModel) {
  EXPECT_EQ(Diagnostics(Edit(R"y(model: H200)y", R"y(model: H20O)y")),
            R"d(inv.yaml:7:19: error: GPU model 'H20O' is not in gpuforge's catalogue, so 'memory' and 'tdp' must be given; did you mean 'H200'?
 7 |     gpus: {model: H20O, count: 2, pci: ["0000:18:00.0", "0000:2a:00.0"]}
   |                   ^~~~
1 error in inv.yaml
)d");
}

TEST(LoaderDiagnostics, Version2) {
  EXPECT_EQ(Diagnostics(Edit(R"y(version: 1)y", R"y(version: 2)y")),
            R"d(inv.yaml:1:10: error: inventory version 2 is not supported; this gpuforge reads version 1
 1 | version: 2
   |          ^
1 error in inv.yaml
)d");
}

TEST(LoaderDiagnostics, EmptyFile) {
  EXPECT_EQ(Diagnostics(R"y()y"),
            R"d(inv.yaml:1:1: error: the inventory is empty; it needs at least 'cluster', 'profiles' and 'nodes'
 1 | 
   | ^
1 error in inv.yaml
)d");
}

TEST(LoaderErrors, CommentsOnly) {
  EXPECT_EQ(Errors(R"y(# nothing yet
)y"),
            (std::vector<std::string>{
              R"d(1:1: the inventory is empty; it needs at least 'cluster', 'profiles' and 'nodes')d"}));
}

TEST(LoaderErrors, NotAMapping) {
  EXPECT_EQ(Errors(R"y(- a
- b
)y"),
            (std::vector<std::string>{
              R"d(1:1: the inventory must be a mapping of key: value, not a list)d"}));
}

TEST(LoaderErrors, SwitchNamedLikeNode) {
  EXPECT_EQ(Errors(Edit(R"y(links:
  - {from: "gpu[1-2]:mlx5_0", to: "leaf1:[1-2]"}
)y", R"y()y") + R"y(  - {name: gpu1, tier: spine, network: ib, ports: 8, port_rate: 400Gb/s}
)y"),
            (std::vector<std::string>{
              R"d(14:12: switch 'gpu1' has the name of a node; link ends could not tell them apart)d"}));
}

TEST(LoaderErrors, ControllerNotANode) {
  EXPECT_EQ(Errors(std::string(kBase) + R"y(software:
  scheduler: {kind: slurm, controller: head1}
)y"),
            (std::vector<std::string>{
              R"d(17:40: scheduler controller 'head1' is not a node in the inventory)d"}));
}

TEST(LoaderErrors, PartitionUnknownNodes) {
  EXPECT_EQ(Errors(std::string(kBase) + R"y(software:
  scheduler:
    kind: slurm
    partitions: [{name: gpu, nodes: "gpu[1-4]"}]
)y"),
            (std::vector<std::string>{
              R"d(19:37: partition 'gpu' lists 2 nodes that are not in the inventory, the first 'gpu3')d"}));
}

TEST(LoaderErrors, OverridesUnknownKey) {
  EXPECT_EQ(Errors(Edit(R"y(profile: p})y", R"y(profile: p, overrides: {gpu: {count: 4}}})y")),
            (std::vector<std::string>{
              R"d(11:73: unknown key 'gpu' in 'overrides' in node entry 'gpu[1-2]'; did you mean 'gpus'?)d"}));
}

TEST(LoaderErrors, LinkNicToNic) {
  EXPECT_EQ(Errors(std::string(kBase) + R"y(  - {from: "gpu1:mlx5_1", to: "gpu2:mlx5_1"}
)y"),
            (std::vector<std::string>{
              R"d(16:31: link gpu1:mlx5_1 -> gpu2:mlx5_1 joins two NICs; gpuforge models NICs cabled to switch ports)d"}));
}

TEST(LoaderErrors, TwoColonsInEndpoint) {
  EXPECT_EQ(Errors(std::string(kBase) + R"y(  - {from: "gpu1:mlx5_1:1", to: "leaf1:5"}
)y"),
            (std::vector<std::string>{
              R"d(16:12: link end 'gpu1:mlx5_1:1' must be NODE:NIC or SWITCH:PORT, with one ':' (hostlists allowed on both sides, e.g. gpu[01-04]:mlx5_0 or leaf1:[1-4]))d"}));
}

}  // namespace
}  // namespace gpuforge::inventory

namespace gpuforge::inventory {
namespace {

// #28 item 23: what the loader echoes of a hostile inventory. A right-to-left override is shown
// as its bytes, never obeyed; a byte of a multi-byte character is named by its value, not "'?'";
// an 8 MiB scalar is not echoed whole.
TEST(LoaderDiagnostics, HostileBytesAreShownNotObeyedAndLongLinesAreCut) {
  const std::string rlo = Diagnostics(Edit("cluster: {name: t}", "cluster: {name: \"a\xe2\x80\xae" "b\"}"));
  EXPECT_NE(rlo.find("cluster name: name contains the non-ASCII byte 0xE2 at position 2, which is not allowed"),
            std::string::npos)
      << rlo;
  EXPECT_NE(rlo.find(" 2 | cluster: {name: \"a\\xe2\\x80\\xaeb\"}\n"), std::string::npos) << rlo;
  EXPECT_EQ(rlo.find("\xe2\x80\xae"), std::string::npos) << "the override itself reached the output";
  const std::string c1 = Diagnostics(Edit("cluster: {name: t}", "cluster: {name: \"a\xc2\x85" "b\"}"));
  EXPECT_NE(c1.find("contains the non-ASCII byte 0xC2 at position 2"), std::string::npos) << c1;
  EXPECT_EQ(c1.find("contains '?'"), std::string::npos) << c1;

  const std::string big = Diagnostics(Edit("cluster: {name: t}", "cluster: {name: \"" + std::string(8 << 20, 'x') + "\"}"));
  EXPECT_LT(big.size(), 4000u) << big.substr(0, 400);
  EXPECT_NE(big.find(" 2 | cluster: {name: \"" + std::string(143, 'x') + "...\n"), std::string::npos) << big.substr(0, 600);
}

}  // namespace
}  // namespace gpuforge::inventory
