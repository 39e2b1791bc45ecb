// `gpuforge init` over real sshd (tests/testbed), #33: four test hosts whose stand-in
// nvidia-smi prints eight recorded H200s; on one of them it prints seven, and a fifth host's
// sshd is stopped. The draft groups the three alike, names the one that differs first, lists
// the one not reached without inventing it, loads, and `facts --check` finds the majority as
// the draft describes it. A second run refuses to overwrite; --diff compares instead; and
// --subnet-from runs the subnet tools over SSH on the node it names.

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "report/consumers.h"
#include "testbed/fixture.h"

namespace gpuforge::cli {
namespace {

using gpuforge::testing::Ran;
using gpuforge::testing::Sh;
using InitE2e = testbed::TestbedTest;

constexpr const char* kCsv = "/usr/share/gpuforge-testbed/nvidia-smi/query-gpu.csv";

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST_F(InitE2e, DraftsGroupedNamesTheOutlierAndListsTheUnreached) {
  if (!Bring(testbed::WithStandInGpu(5))) return;
  // Every host's stand-in prints eight H200s (the recorded one, at eight bus ids); tb04 loses
  // its last one: the outlier.
  for (std::size_t i = 0; i < 4; ++i) {
    Out(i, std::string("f=") + kCsv +
               " && row=$(sed -n 2p $f) && head -1 $f >$f.new && for i in 0 1 2 3 4 5 6 7; do "
               "echo \"$row\" | sed \"s/^0, /$i, /; s/-444444444444,/-44444444444$i,/; "
               "s/00000000:00:06.0/00000000:1$i:00.0/\" >>$f.new; done && mv $f.new $f");
  }
  Out(3, std::string("cp ") + kCsv + " /root/query-gpu.csv.8 && sed -i '$d' " + kCsv);
  ASSERT_TRUE(tb_->StopHost(4).ok());

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
  EXPECT_NE(init.output.find("wrote " + out + ": 4 nodes in 2 profiles (1 outlier); 1 not reached"), std::string::npos)
      << init.output;
  const std::string yaml = Slurp(out);
  EXPECT_NE(yaml.find("# READ FIRST"), std::string::npos) << yaml;
  EXPECT_NE(yaml.find("#   tb04 (profile h200x8-tb04): 7 GPUs where h200x8 has 8"), std::string::npos) << yaml;
  EXPECT_NE(yaml.find("# NOT IN THIS FILE"), std::string::npos) << yaml;
  EXPECT_NE(yaml.find("#   tb05: "), std::string::npos) << yaml;
  EXPECT_NE(yaml.find("- name: \"tb[01-03]\""), std::string::npos) << yaml;
  EXPECT_EQ(yaml.find("- name: \"tb05\""), std::string::npos) << "an unreached node is not invented: " << yaml;
  EXPECT_NE(yaml.find("model: H200  # nvidia-smi: NVIDIA H200"), std::string::npos) << yaml;

  // It loads, and round-trips through `inventory show`.
  Ran show = Sh(fmt::format("{} inventory show {} --format json 2>&1 </dev/null", GPUFORGE_BINARY, out));
  ASSERT_EQ(show.code, 0) << show.out;
  EXPECT_NE(show.out.find("\"h200x8-tb04\""), std::string::npos) << show.out;
  Ran lint = Sh(fmt::format("{} lint {} --color never 2>&1 </dev/null", GPUFORGE_BINARY, out));
  EXPECT_NE(lint.code, 2) << lint.out;

  // The majority as drafted: facts --check finds nothing the inventory describes differently.
  // What the inventory cannot describe (a login shell's memlock limit, persistence mode) is
  // not init's to fix, so those codes are allowed here and nothing else.
  testbed::CommandOutput check =
      Gpuforge(fmt::format("facts {} --check --nodes tb[01-04] --format json", out), "", testbed::Stderr::kDropped);
  ASSERT_NE(check.exit_code, 2) << check.output;
  for (std::string_view code : {"gpu.count", "gpu.model", "cpu.low", "cpu.differs", "memory.low", "memory.differs",
                                "nic.missing", "topology.gpu_numa", "topology.nic_numa", "version.driver",
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

  // --subnet-from: the subnet tools run over SSH on that node. A stand-in iblinkinfo on tb01
  // prints one switch cabled to two HCAs; these hosts have no InfiniBand NIC (their facts list
  // none), so no cable is one init may draft: the file is still written, each HCA a note naming
  // the line, ibnetdiscover's absence a note, and the run exits 1 saying so.
  Out(0,
      "printf '%s\\n' '#!/bin/sh' \"cat <<'X'\" "
      "'0x98039b0300a00001 \"MF0;leaf01:MQM9700/U1\"  4    1[  ] ==( 4X        106.25 Gbps Active/  LinkUp)==>  "
      "0x0002c90300010001     10    1[  ] \"tb01 mlx5_0\" ( )' "
      "'0x98039b0300a00001 \"MF0;leaf01:MQM9700/U1\"  4    2[  ] ==( 4X        106.25 Gbps Active/  LinkUp)==>  "
      "0x0002c90300020001     11    1[  ] \"tb02 mlx5_0\" ( )' X >/usr/local/sbin/iblinkinfo && "
      "chmod 755 /usr/local/sbin/iblinkinfo");
  const testbed::Host& tb01 = tb_->hosts()[0];
  const std::string ib_out = dir + "/drafted-ib.yaml";
  testbed::CommandOutput ib =
      Gpuforge(fmt::format("init --nodes tb01 --addresses {} --user root --identity-file {} --subnet-from tb01 --out {}",
                           tb01.address, tb_->paths().identity, ib_out));
  EXPECT_EQ(ib.exit_code, 1) << ib.output;
  EXPECT_NE(ib.output.find("no cable of the subnet could be drafted"), std::string::npos) << ib.output;
  EXPECT_NE(ib.output.find("ibnetdiscover on tb01: not installed"), std::string::npos) << ib.output;
  const std::string ib_yaml = Slurp(ib_out);
  EXPECT_NE(ib_yaml.find("# note: iblinkinfo on tb01:1: 'tb01 mlx5_0' (0x0002c90300010001) is on the subnet but is no "
                         "InfiniBand NIC of a drafted node"),
            std::string::npos)
      << ib_yaml;
  EXPECT_NE(ib_yaml.find("# TODO switches:"), std::string::npos) << ib_yaml;
  Ran ib_show = Sh(fmt::format("{} inventory show {} 2>&1 </dev/null", GPUFORGE_BINARY, ib_out));
  EXPECT_EQ(ib_show.code, 0) << ib_show.out;
}

}  // namespace
}  // namespace gpuforge::cli
