#include "testbed/fixture.h"

#include <fmt/format.h>
#include <stdlib.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "testbed/standins.h"

namespace gpuforge::testbed {
namespace {

// The repository's directory for the program's life; removed by the static's destructor.
struct SharedRepo {
  std::string temp_dir;  // holds dir
  std::string dir;
  std::string error;
  ~SharedRepo() {
    if (!temp_dir.empty()) {
      std::error_code ec;
      std::filesystem::remove_all(temp_dir, ec);
    }
  }
};

void Skip(const std::string& why) { GTEST_SKIP() << why; }

}  // namespace

Options WithStandInGpu(int hosts) {
  Options o;
  o.hosts = hosts;
  o.stand_in_gpu_dir = std::string(GPUFORGE_TEST_DATA_DIR) + "/facts/nvidia-h200-1gpu";
  return o;
}

Result<std::string> StandinRepo() {
  static SharedRepo repo = [] {
    SharedRepo r;
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = fmt::format("{}/gpuforge-standin-repo-XXXXXX", tmp != nullptr && *tmp != '\0' ? tmp : "/tmp");
    if (::mkdtemp(pattern.data()) == nullptr) {
      r.error = fmt::format("mkdtemp {} failed", pattern);
      return r;
    }
    r.temp_dir = pattern;
    r.dir = pattern + "/repo";
    Status built = BuildRepo(r.dir, kPackages);
    if (!built.ok()) r.error = built.error().message;
    return r;
  }();
  if (!repo.error.empty()) return Error{repo.error};
  return repo.dir;
}

bool TestbedTest::Bring(const Options& o) {
  std::string why;
  if (!Available(&why)) {
    Skip(why);
    return false;
  }
  Result<Testbed> tb = Testbed::Start(o);
  EXPECT_TRUE(tb.ok()) << tb.error().message;
  if (!tb.ok()) return false;
  tb_.emplace(std::move(*tb));
  return true;
}

bool TestbedTest::Bring(int hosts, bool netns) {
  Options o;
  o.hosts = hosts;
  o.netns = netns;
  return Bring(o);
}

CommandOutput TestbedTest::Ssh(std::size_t i, const std::string& command, std::chrono::seconds timeout) {
  Result<CommandOutput> r = RunCommand(tb_->SshArgv(i, "root", "{ " + command + "\n} 2>&1"), timeout);
  EXPECT_TRUE(r.ok()) << r.error().message;
  return r.ok() ? *r : CommandOutput{-1, ""};
}

std::string TestbedTest::SshOutput(std::size_t i, const std::string& command) { return Ssh(i, command).output; }

std::string TestbedTest::Out(std::size_t i, const std::string& command) {
  CommandOutput r = Ssh(i, command);
  EXPECT_EQ(r.exit_code, 0) << command << ": " << r.output;
  return r.output;
}

std::string TestbedTest::Inventory() const {
  std::ifstream in(tb_->paths().inventory);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string TestbedTest::WriteFile(const std::string& name, const std::string& text) const {
  const std::string path = tb_->paths().dir + "/" + name;
  std::ofstream(path, std::ios::trunc) << text;
  return path;
}

CommandOutput TestbedTest::Gpuforge(std::string_view args, std::string_view tail, Stderr err,
                                    std::chrono::seconds timeout) {
  const std::string cmd =
      fmt::format("{} {} --known-hosts {} --ssh-config none --color never {} {} </dev/null", GPUFORGE_BINARY, args,
                  tb_->paths().known_hosts, tail, err == Stderr::kMerged ? "2>&1" : "2>/dev/null");
  Result<CommandOutput> r = RunCommand({"/bin/sh", "-c", cmd}, timeout);
  EXPECT_TRUE(r.ok()) << r.error().message;
  return r.ok() ? *r : CommandOutput{-1, ""};
}

}  // namespace gpuforge::testbed
