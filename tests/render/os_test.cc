// OS files checked against their consumers (#14 OS): the kernel's documented IOMMU values,
// systemctl itself for the persistenced drop-in, and who gets memlock.

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "gpuforge/inventory/loader.h"
#include "gpuforge/render/render.h"
#include "testbed/testbed.h"

namespace gpuforge::render {
namespace {

namespace fs = std::filesystem;
const std::string kSrc = GPUFORGE_SOURCE_DIR;

Output RenderExample(const std::string& name) {
  auto loaded = inventory::LoadFile(kSrc + "/inventories/examples/" + name);
  EXPECT_TRUE(loaded.ok()) << loaded.FormatDiagnostics();
  Options o;
  o.templates_dir = kSrc + "/templates";
  o.inventory_label = name;
  Result<Output> out = Render(*loaded.cluster, o);
  EXPECT_TRUE(out.ok()) << (out.ok() ? "" : out.error().message);
  return out.ok() ? std::move(*out) : Output{};
}

const RenderedFile* FindFile(const Output& out, const std::string& node, const std::string& path) {
  for (const RenderedFile& f : out.files) {
    if (f.node == node && f.path == path) return &f;
  }
  return nullptr;
}

// tests/data/kernel-parameters/iommu.txt: NAME VALUE... (README there cites the kernel).
std::map<std::string, std::set<std::string>> DocumentedValues() {
  std::map<std::string, std::set<std::string>> out;
  std::ifstream in(kSrc + "/tests/data/kernel-parameters/iommu.txt");
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream words(line);
    std::string name, v;
    words >> name;
    while (words >> v) out[name].insert(v);
  }
  return out;
}

TEST(RenderOs, KernelCmdlineUsesOnlyDocumentedValues) {
  const auto documented = DocumentedValues();
  ASSERT_EQ(documented.size(), 3u);
  std::set<std::string> seen;  // parameters recommended, over both CPU vendors
  for (const char* example : {"h200-ib-32gpu.yaml", "a100-roce-k8s.yaml"}) {
    const Output out = RenderExample(example);
    for (const RenderedFile& f : out.files) {
      if (f.path != "/etc/gpuforge/kernel-cmdline.recommended") continue;
      std::istringstream lines(f.content);
      std::string line;
      while (std::getline(lines, line)) {
        if (line.empty() || line.front() == '#') continue;
        std::istringstream words(line);
        std::string word;
        while (words >> word) {
          const std::size_t eq = word.find('=');
          ASSERT_NE(eq, std::string::npos) << f.node << ": " << word;
          const std::string name = word.substr(0, eq);
          ASSERT_TRUE(documented.count(name)) << f.node << ": " << name << " is not an IOMMU parameter we know";
          std::istringstream values(word.substr(eq + 1));
          for (std::string v; std::getline(values, v, ',');) {
            EXPECT_TRUE(documented.at(name).count(v)) << example << " " << f.node << ": " << name << "=" << v
                                                      << " is not a documented value (kernel-parameters.txt)";
          }
          seen.insert(name);
        }
      }
    }
  }
  EXPECT_TRUE(seen.count("intel_iommu")) << "the Intel example recommends the Intel IOMMU";
  EXPECT_TRUE(seen.count("iommu"));
  EXPECT_FALSE(seen.count("amd_iommu")) << "on AMD the IOMMU is on by default; amd_iommu has no 'on'";
}

// The unit Debian/Ubuntu and the CUDA repository ship: static (no [Install]) and started with
// --no-persistence-mode, as the distributions have it.
constexpr const char* kStaticUnit =
    "[Unit]\nDescription=NVIDIA Persistence Daemon\nWants=syslog.target\n\n[Service]\nType=forking\n"
    "ExecStart=/usr/bin/nvidia-persistenced --user nvidia-persistenced --no-persistence-mode --verbose\n"
    "ExecStopPost=/bin/rm -rf /var/run/nvidia-persistenced\n";

void Write(const fs::path& p, const std::string& content) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << content;
}

TEST(RenderOs, PersistencedDropInMakesThePresetEnableTheStaticUnit) {
  if (!testbed::RunCommand({"systemctl", "--version"}).ok()) GTEST_SKIP() << "no systemctl here";
  const Output out = RenderExample("h200-single-node.yaml");
  const RenderedFile* dropin = nullptr;
  const RenderedFile* preset = nullptr;
  for (const RenderedFile& f : out.files) {
    if (f.path == "/etc/systemd/system/nvidia-persistenced.service.d/gpuforge.conf") dropin = &f;
    if (f.path == "/etc/systemd/system-preset/50-gpuforge.preset") preset = &f;
  }
  ASSERT_NE(dropin, nullptr);
  ASSERT_NE(preset, nullptr);
  EXPECT_EQ(dropin->mode, "0644");
  const fs::path root = fs::temp_directory_path() / fmt::format("gpuforge-persistenced-{}", ::getpid());
  fs::remove_all(root);
  Write(root / "usr/lib/systemd/system/nvidia-persistenced.service", kStaticUnit);
  Write(root / "etc/systemd/system-preset/50-gpuforge.preset", preset->content);
  const fs::path wants = root / "etc/systemd/system/multi-user.target.wants/nvidia-persistenced.service";
  auto preset_unit = [&] {
    return testbed::RunCommand({"systemctl", "--root=" + root.string(), "preset", "nvidia-persistenced.service"});
  };
  // The preset alone does nothing to a static unit: the bug this file fixes.
  ASSERT_TRUE(preset_unit().ok());
  EXPECT_FALSE(fs::is_symlink(wants));
  Write(root / "etc/systemd/system/nvidia-persistenced.service.d/gpuforge.conf", dropin->content);
  Result<testbed::CommandOutput> r = preset_unit();
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->exit_code, 0) << r->output;
  EXPECT_TRUE(fs::is_symlink(wants)) << r->output;
  // systemd's own parser reads the drop-in without a complaint about it (the daemon binary is
  // not on this machine; that one line is expected).
  Result<testbed::CommandOutput> v = testbed::RunCommand(
      {"env", "SYSTEMD_UNIT_PATH=" + (root / "etc/systemd/system").string() + ":" + (root / "usr/lib/systemd/system").string() + ":",
       "systemd-analyze", "verify", "--man=no", "--generators=no", (root / "usr/lib/systemd/system/nvidia-persistenced.service").string()});
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(v->output.find("gpuforge.conf:"), std::string::npos) << v->output;
  EXPECT_NE(dropin->content.find("\nExecStart=\nExecStart=/usr/bin/nvidia-persistenced --user nvidia-persistenced --persistence-mode"),
            std::string::npos)
      << "ExecStart is reset before it is set again, or systemd refuses a second ExecStart for Type=forking";
  fs::remove_all(root);
}

TEST(RenderOs, MemlockUnlimitedOnlyOnGpuNodes) {
  const Output out = RenderExample("h200-ib-32gpu.yaml");
  const RenderedFile* gpu = FindFile(out, "gpu001", "/etc/security/limits.d/90-gpuforge.conf");
  const RenderedFile* head = FindFile(out, "head01", "/etc/security/limits.d/90-gpuforge.conf");
  ASSERT_NE(gpu, nullptr);
  ASSERT_NE(head, nullptr);
  EXPECT_NE(gpu->content.find("*    hard    memlock    unlimited\n"), std::string::npos) << gpu->content;
  EXPECT_EQ(head->content.find("memlock"), std::string::npos) << head->content;
  EXPECT_NE(head->content.find("*    hard    nofile     1048576\n"), std::string::npos) << head->content;
}

TEST(RenderOs, MemlockForANamedGroupOnly) {
  auto loaded = inventory::LoadFile(kSrc + "/inventories/examples/h200-ib-32gpu.yaml");
  ASSERT_TRUE(loaded.ok());
  loaded.cluster->software.memlock_group = "hpc";
  Result<Output> out = Render(*loaded.cluster, Options{});
  ASSERT_TRUE(out.ok());
  const RenderedFile* gpu = FindFile(*out, "gpu001", "/etc/security/limits.d/90-gpuforge.conf");
  ASSERT_NE(gpu, nullptr);
  EXPECT_NE(gpu->content.find("@hpc    hard    memlock    unlimited\n"), std::string::npos) << gpu->content;
  EXPECT_EQ(gpu->content.find("*    hard    memlock"), std::string::npos) << gpu->content;
  EXPECT_EQ(FindFile(*out, "head01", "/etc/security/limits.d/90-gpuforge.conf")->content.find("memlock"), std::string::npos);
}

}  // namespace
}  // namespace gpuforge::render
