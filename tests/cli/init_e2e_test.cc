// `gpuforge init` over real sshd (tests/testbed), #33: five test hosts whose stand-in
// nvidia-smi prints eight recorded H200s; on one of them it prints seven, another has a
// stand-in ConnectX-7 HCA in its sysfs (tests/testbed/hca_standin.sh) that the others lack,
// and a sixth host's sshd is stopped. The draft groups the three alike, names the two that
// differ first, lists the one not reached without inventing it, loads, and `facts --check`
// finds every node as the draft describes it. A second run refuses to overwrite; --diff
// compares instead; and --subnet-from runs the subnet tools over SSH on the node it names and
// cables the HCA it finds there.

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "remote/command.h"
#include "report/consumers.h"
#include "testbed/fixture.h"
#include "testbed/standins.h"

namespace gpuforge::cli {
namespace {

using gpuforge::testing::Ran;
using gpuforge::testing::Sh;
using InitE2e = testbed::TestbedTest;

constexpr const char* kCsv = "/usr/share/gpuforge-testbed/nvidia-smi/query-gpu.csv";
const std::string kHcaStandin = std::string(GPUFORGE_SOURCE_DIR) + "/tests/testbed/hca_standin.sh";

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST_F(InitE2e, DraftsGroupedNamesTheOutlierAndListsTheUnreached) {
  if (!Bring(testbed::WithStandInGpu(6))) return;
  // Every host's stand-in prints eight H200s (the recorded one, at eight bus ids); tb04 loses
  // its last one, and tb05 gets an NDR HCA: the outliers.
  for (std::size_t i = 0; i < 5; ++i) {
    Out(i, std::string("f=") + kCsv +
               " && row=$(sed -n 2p $f) && head -1 $f >$f.new && for i in 0 1 2 3 4 5 6 7; do "
               "echo \"$row\" | sed \"s/^0, /$i, /; s/-444444444444,/-44444444444$i,/; "
               "s/00000000:00:06.0/00000000:1$i:00.0/\" >>$f.new; done && mv $f.new $f");
  }
  Out(3, std::string("cp ") + kCsv + " /root/query-gpu.csv.8 && sed -i '$d' " + kCsv);
  Result<testbed::CommandOutput> hca = testbed::SshFed(*tb_, 4, "sh -s mlx5_0 0002:c903:0001:0001", "",
                                                      "< " + remote::ShellQuote(kHcaStandin));
  ASSERT_TRUE(hca.ok()) << hca.error().message;
  ASSERT_EQ(hca->exit_code, 0) << hca->output;
  ASSERT_TRUE(tb_->StopHost(5).ok());

  std::string nodes, addrs;
  for (const testbed::Host& h : tb_->hosts()) {
    nodes += (nodes.empty() ? "" : ",") + h.name;
    addrs += (addrs.empty() ? "" : ",") + h.address;
  }
  const std::string dir = std::filesystem::path(tb_->paths().inventory).parent_path().string();
  const std::string out = dir + "/drafted.yaml";
  testbed::CommandOutput init =
      Gpuforge(fmt::format("init --nodes {} --addresses {} --user root --identity-file {} --name tb --out {}", nodes,
                           addrs, tb_->paths().identity, out));
  // A node not reached is exit 1, with the file written and naming it.
  ASSERT_EQ(init.exit_code, 1) << init.output;
  EXPECT_NE(init.output.find("wrote " + out + ": 5 nodes in 3 profiles (2 outliers); 1 not reached"), std::string::npos)
      << init.output;
  const std::string yaml = Slurp(out);
  EXPECT_NE(yaml.find("# READ FIRST"), std::string::npos) << yaml;
  EXPECT_NE(yaml.find("#   tb04 (profile h200x8-tb04): 7 GPUs where h200x8 has 8"), std::string::npos) << yaml;
  EXPECT_NE(yaml.find("# NOT IN THIS FILE"), std::string::npos) << yaml;
  EXPECT_NE(yaml.find("#   tb05 (profile h200x8-tb05): 1 NIC where h200x8 has 0"), std::string::npos) << yaml;
  EXPECT_NE(yaml.find("#   tb06: "), std::string::npos) << yaml;
  EXPECT_NE(yaml.find("- name: \"tb[01-03]\""), std::string::npos) << yaml;
  EXPECT_EQ(yaml.find("- name: \"tb06\""), std::string::npos) << "an unreached node is not invented: " << yaml;
  // The HCA as its sysfs reads: kind, port and rate, each with its source.
  EXPECT_NE(yaml.find("mlx5_0"), std::string::npos) << yaml;
  EXPECT_NE(yaml.find("/sys/class/infiniband/mlx5_0/ports/1/rate: 400 Gb/sec (4X NDR)"), std::string::npos) << yaml;
  EXPECT_NE(yaml.find("model: H200  # nvidia-smi: NVIDIA H200"), std::string::npos) << yaml;

  // It loads, and round-trips through `inventory show`.
  Ran show = Sh(fmt::format("{} inventory show {} --format json 2>&1 </dev/null", GPUFORGE_BINARY, out));
  ASSERT_EQ(show.code, 0) << show.out;
  EXPECT_NE(show.out.find("\"h200x8-tb04\""), std::string::npos) << show.out;
  Ran lint = Sh(fmt::format("{} lint {} --color never 2>&1 </dev/null", GPUFORGE_BINARY, out));
  EXPECT_NE(lint.code, 2) << lint.out;

  // Every node as drafted: facts --check finds nothing the inventory describes differently.
  // What the inventory cannot describe (a login shell's memlock limit, persistence mode) is
  // not init's to fix, so those codes are allowed here and nothing else.
  testbed::CommandOutput check =
      Gpuforge(fmt::format("facts {} --check --nodes tb[01-05] --format json", out), "", testbed::Stderr::kDropped);
  ASSERT_NE(check.exit_code, 2) << check.output;
  EXPECT_NE(check.output.find("\"port_guid\": \"0x0002c90300010001\""), std::string::npos)
      << "tb05's stand-in HCA is in its facts: " << check.output;
  for (std::string_view code : {"gpu.count", "gpu.model", "cpu.low", "cpu.differs", "memory.low", "memory.differs",
                                "nic.missing", "ib.port_down", "ib.port_polling", "ib.link_width", "ib.link_rate",
                                "topology.gpu_numa", "topology.nic_numa", "version.driver",
                                "version.cuda", "version.nccl"}) {
    EXPECT_EQ(check.output.find(fmt::format("\"{}\"", code)), std::string::npos) << code << "\n" << check.output;
  }

  // Never overwrite: the second run is refused before any node is asked, the file unchanged.
  testbed::CommandOutput again = Gpuforge(fmt::format("init --nodes {} --addresses {} --user root --out {}", nodes, addrs, out));
  EXPECT_EQ(again.exit_code, 2) << again.output;
  EXPECT_NE(again.output.find("already exists; init never overwrites"), std::string::npos) << again.output;
  EXPECT_EQ(Slurp(out), yaml);

  // --diff: the live nodes against the draft, through facts' drift codes. tb04 gets its eighth
  // GPU back, so its own profile (seven) now drifts.
  Out(3, std::string("cp /root/query-gpu.csv.8 ") + kCsv);
  testbed::CommandOutput diff = Gpuforge(fmt::format("init --diff {} --nodes tb04", out));
  EXPECT_EQ(diff.exit_code, 1) << diff.output;
  EXPECT_NE(diff.output.find("gpu.count"), std::string::npos) << diff.output;

  // --subnet-from: the subnet tools run over SSH on that node. A stand-in iblinkinfo on tb05
  // prints one switch cabled to two HCAs: tb05's own (its sysfs node GUID, from the stand-in
  // HCA) and one of a host that is not drafted. tb05's cable becomes a live link to a live
  // switch on a live network; the other HCA and ibnetdiscover's absence are notes naming their
  // source; the file loads, and exit 0 (a drafted subnet with notes is not a failure).
  Out(4,
      "printf '%s\\n' '#!/bin/sh' \"cat <<'X'\" "
      "'0x98039b0300a00001 \"MF0;leaf01:MQM9700/U1\"  4    1[  ] ==( 4X        106.25 Gbps Active/  LinkUp)==>  "
      "0x0002c90300010001     10    1[  ] \"tb05 mlx5_0\" ( )' "
      "'0x98039b0300a00001 \"MF0;leaf01:MQM9700/U1\"  4    2[  ] ==( 4X        106.25 Gbps Active/  LinkUp)==>  "
      "0x0002c90300020001     11    1[  ] \"stor01 mlx5_0\" ( )' "
      "'0x98039b0300a00001 \"MF0;leaf01:MQM9700/U1\"  4    3[  ] ==(                Down/ Polling)==>             [  ] "
      "\"\" ( )' X >/usr/local/sbin/iblinkinfo && chmod 755 /usr/local/sbin/iblinkinfo");
  const testbed::Host& tb05 = tb_->hosts()[4];
  const std::string ib_out = dir + "/drafted-ib.yaml";
  testbed::CommandOutput ib =
      Gpuforge(fmt::format("init --nodes tb05 --addresses {} --user root --identity-file {} --subnet-from tb05 --out {}",
                           tb05.address, tb_->paths().identity, ib_out));
  EXPECT_EQ(ib.exit_code, 0) << ib.output;
  EXPECT_NE(ib.output.find("the subnet (iblinkinfo on tb05) gave 1 switch and 1 cable"), std::string::npos) << ib.output;
  EXPECT_NE(ib.output.find("ibnetdiscover on tb05: not installed"), std::string::npos) << ib.output;
  const std::string ib_yaml = Slurp(ib_out);
  EXPECT_NE(ib_yaml.find("# note: iblinkinfo on tb05:2: 'stor01 mlx5_0' (0x0002c90300020001) is on the subnet but is no "
                         "InfiniBand NIC of a drafted node"),
            std::string::npos)
      << ib_yaml;
  EXPECT_NE(ib_yaml.find("network: ib"), std::string::npos) << ib_yaml;
  EXPECT_NE(ib_yaml.find("name: leaf01"), std::string::npos) << ib_yaml;
  EXPECT_NE(ib_yaml.find("0x98039b0300a00001"), std::string::npos) << ib_yaml;
  EXPECT_NE(ib_yaml.find("tb05:mlx5_0"), std::string::npos) << ib_yaml;
  EXPECT_NE(ib_yaml.find("leaf01:1"), std::string::npos) << ib_yaml;
  Ran ib_show = Sh(fmt::format("{} inventory show {} --format json 2>&1 </dev/null", GPUFORGE_BINARY, ib_out));
  ASSERT_EQ(ib_show.code, 0) << ib_show.out;
  EXPECT_NE(ib_show.out.find("\"leaf01\""), std::string::npos) << ib_show.out;

  // And cabling, against the draft and the same subnet over SSH, finds that cable OK.
  testbed::CommandOutput cab = Gpuforge(fmt::format("cabling {} --subnet-from tb05", ib_out));
  EXPECT_NE(cab.exit_code, 2) << cab.output;
  EXPECT_NE(cab.output.find("OK"), std::string::npos) << cab.output;
  // The same drafting with the port gone down: the check is not one that cannot fail.
  Out(4, "echo '1: DOWN' >/sys/class/infiniband/mlx5_0/ports/1/state && "
         "echo '3: Disabled' >/sys/class/infiniband/mlx5_0/ports/1/phys_state");
  testbed::CommandOutput down = Gpuforge(fmt::format("facts {} --check --nodes tb05", ib_out));
  EXPECT_EQ(down.exit_code, 1) << down.output;
  EXPECT_NE(down.output.find("ib.port_down"), std::string::npos) << down.output;
  EXPECT_NE(down.output.find("mlx5_0 port 1"), std::string::npos) << down.output;
}

}  // namespace
}  // namespace gpuforge::cli
