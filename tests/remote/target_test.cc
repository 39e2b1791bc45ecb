#include "gpuforge/remote/target.h"

#include <gtest/gtest.h>

#include "gpuforge/inventory/loader.h"

namespace gpuforge::remote {
namespace {

model::Cluster Load(const std::string& nodes, const std::string& defaults = "") {
  std::string yaml = "version: 1\ncluster: {name: t}\n" + defaults +
                     "profiles:\n  p: {cpu: {model: x, sockets: 1, cores_per_socket: 1, threads_per_core: 1}, "
                     "memory: 1GiB}\nnodes:\n" +
                     nodes;
  inventory::LoadOutcome o = inventory::LoadString(yaml, "t.yaml");
  EXPECT_TRUE(o.ok()) << o.FormatDiagnostics();
  return *o.cluster;
}

TEST(RemoteTarget, ResolvedSettingsBecomeTheEndpoint) {
  model::Cluster c = Load(
      "  - {name: bastion, address: 198.18.0.1, profile: p, ssh: {user: jump, port: 2200}}\n"
      "  - {name: gpu1, address: 198.18.0.11, profile: p, ssh: {user: ops, sudo: true, jump: bastion, identity_file: ~/.ssh/k}}\n"
      "  - {name: gpu2, address: 198.18.0.12, profile: p, ssh: {jump: 'alice@gw.example:2022'}}\n",
      "defaults: {ssh: {port: 2222}}\n");
  Result<std::vector<Target>> t = TargetsFor(c, {"gpu1", "gpu2"});
  ASSERT_TRUE(t.ok()) << t.error().message;
  ASSERT_EQ(t->size(), 2u);
  const Target& a = (*t)[0];
  EXPECT_EQ(Describe(a.endpoint), "ops@198.18.0.11:2222");
  EXPECT_TRUE(a.sudo);
  EXPECT_EQ(a.identity_file, "~/.ssh/k");
  ASSERT_TRUE(a.jump.has_value());
  EXPECT_EQ(Describe(*a.jump), "jump@198.18.0.1:2200");
  const Target& b = (*t)[1];
  EXPECT_EQ(Describe(b.endpoint), "root@198.18.0.12:2222");
  EXPECT_FALSE(b.sudo);
  ASSERT_TRUE(b.jump.has_value());
  EXPECT_EQ(Describe(*b.jump), "alice@gw.example:2022");
}

TEST(RemoteTarget, SudoIsMeaninglessForRoot) {
  model::Cluster c = Load("  - {name: gpu1, address: 198.18.0.11, profile: p, ssh: {sudo: true}}\n");
  Result<Target> t = TargetFor(c, c.nodes[0]);
  ASSERT_TRUE(t.ok());
  EXPECT_FALSE(t->sudo);
}

TEST(RemoteTarget, UnknownNodeAndSelfJumpAreErrors) {
  model::Cluster c = Load("  - {name: gpu1, address: 198.18.0.11, profile: p, ssh: {jump: gpu1}}\n");
  Result<std::vector<Target>> unknown = TargetsFor(c, {"gpu9"});
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.error().message, "'gpu9' is not a node of the inventory");
  Result<Target> self = TargetFor(c, c.nodes[0]);
  ASSERT_FALSE(self.ok());
  EXPECT_EQ(self.error().message, "node gpu1: ssh.jump names the node itself");
}

TEST(RemoteTarget, SudoMustBeABoolean) {
  std::string yaml =
      "version: 1\ncluster: {name: t}\nprofiles:\n  p: {memory: 1GiB}\nnodes:\n"
      "  - {name: gpu1, address: 198.18.0.11, profile: p, ssh: {sudo: 'yes please'}}\n";
  inventory::LoadOutcome o = inventory::LoadString(yaml, "t.yaml");
  EXPECT_FALSE(o.ok());
  EXPECT_NE(o.FormatDiagnostics().find("t.yaml:6:"), std::string::npos) << o.FormatDiagnostics();
}

}  // namespace
}  // namespace gpuforge::remote
