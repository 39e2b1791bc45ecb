#include "gpuforge/base/names.h"

#include <gtest/gtest.h>

namespace gpuforge::names {
namespace {

TEST(Names, UserAsUseraddAcceptsIt) {
  EXPECT_FALSE(CheckUser("root"));
  EXPECT_FALSE(CheckUser("_svc-gpu01"));
  EXPECT_TRUE(CheckUser(""));
  EXPECT_TRUE(CheckUser("Admin"));
  EXPECT_TRUE(CheckUser("1ops"));
  EXPECT_TRUE(CheckUser("$(id)"));
  EXPECT_TRUE(CheckUser(std::string(33, 'a')));
  EXPECT_FALSE(CheckUser(std::string(32, 'a')));
}

TEST(Names, JumpIsWhatSshDashJReads) {
  EXPECT_FALSE(CheckJump("bastion"));
  EXPECT_FALSE(CheckJump("ops@bastion.example.net:2222"));
  EXPECT_FALSE(CheckJump("198.18.0.1:22"));
  // The port: a number from 1 to 65535, nothing after it.
  EXPECT_TRUE(CheckJump("bastion:0"));
  EXPECT_TRUE(CheckJump("bastion:65536"));
  EXPECT_TRUE(CheckJump("bastion:"));
  EXPECT_TRUE(CheckJump("bastion:22x"));
  // ssh -J splits a bare IPv6 address at its first ':' (OpenSSH misc.c hpdelim).
  EXPECT_TRUE(CheckJump("fe80::1"));
  // The user is split at the last '@', as ssh does.
  std::optional<std::string> bad = CheckJump("$(id)@bastion");
  ASSERT_TRUE(bad);
  EXPECT_NE(bad->find("the part before '@' is not a user name"), std::string::npos) << *bad;
  EXPECT_TRUE(CheckJump("ops@"));
  EXPECT_TRUE(CheckJump("ops@host;reboot"));
}

TEST(Names, CpuModelIsPrintableText) {
  EXPECT_FALSE(CheckCpuModel("AMD EPYC 9654 96-Core Processor"));
  EXPECT_FALSE(CheckCpuModel("Intel(R) Xeon(R) Platinum 8480+ @ 2.0GHz"));
  EXPECT_TRUE(CheckCpuModel(""));
  EXPECT_TRUE(CheckCpuModel("EPYC\n# injected"));
  EXPECT_TRUE(CheckCpuModel("\"quoted\""));
  EXPECT_TRUE(CheckCpuModel(std::string(129, 'x')));
  EXPECT_FALSE(CheckCpuModel(std::string(128, 'x')));
}

}  // namespace
}  // namespace gpuforge::names
