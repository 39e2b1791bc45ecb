// Golden copies of the NCCL and OS files of every example inventory, per node, so a template
// or value change shows up as a reviewable diff (GPUFORGE_UPDATE_GOLDEN=1 rewrites them).
// Slurm, Kubernetes and monitoring files have golden tests of their own.

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include "gpuforge/inventory/loader.h"
#include "gpuforge/render/render.h"

namespace gpuforge {
namespace {

namespace fs = std::filesystem;

// The NCCL and OS families' node files.
bool IsNcclOrOs(const render::RenderedFile& f) {
  if (f.node.empty()) return false;
  for (const char* p : {"/etc/nccl.conf", "/etc/nccl-topology.xml", "/etc/gpuforge/kernel-cmdline.recommended"}) {
    if (f.path == p) return true;
  }
  for (const char* dir : {"/etc/modules-load.d/", "/etc/security/limits.d/", "/etc/sysctl.d/", "/etc/systemd/system-preset/",
                          "/etc/systemd/system/nvidia-persistenced.service.d/"}) {
    if (f.path.starts_with(dir)) return true;
  }
  return false;
}

std::string ReadFile(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), {});
}

class NcclOsGolden : public ::testing::TestWithParam<std::string> {};

TEST_P(NcclOsGolden, EveryNodeFileMatchesItsGoldenCopy) {
  inventory::LoadOutcome loaded =
      inventory::LoadFile(fmt::format("{}/inventories/examples/{}.yaml", GPUFORGE_SOURCE_DIR, GetParam()));
  ASSERT_TRUE(loaded.ok()) << loaded.FormatDiagnostics();
  render::Options o;
  o.templates_dir = std::string(GPUFORGE_SOURCE_DIR) + "/templates";
  o.inventory_label = GetParam() + ".yaml";
  Result<render::Output> out = render::Render(*loaded.cluster, o);
  ASSERT_TRUE(out.ok()) << out.error().message;

  const fs::path golden = fs::path(GPUFORGE_TEST_DATA_DIR) / "render" / GetParam();
  const char* env = std::getenv("GPUFORGE_UPDATE_GOLDEN");
  const bool update = env != nullptr && std::string(env) == "1";
  std::set<std::string> produced;
  for (const render::RenderedFile& f : out->files) {
    if (!IsNcclOrOs(f)) continue;
    const fs::path rel = fs::path(f.node) / fs::path(f.path).relative_path();
    produced.insert(rel.string());
    if (update) {
      fs::create_directories((golden / rel).parent_path());
      std::ofstream(golden / rel, std::ios::binary) << f.content;
      continue;
    }
    ASSERT_TRUE(fs::exists(golden / rel)) << rel << " has no golden copy; run with GPUFORGE_UPDATE_GOLDEN=1";
    EXPECT_EQ(f.content, ReadFile(golden / rel))
        << rel << " differs from its golden copy; if intended, run with GPUFORGE_UPDATE_GOLDEN=1 and review the diff";
  }
  EXPECT_GE(produced.size(), 5u) << "the example should produce NCCL and OS files";
  for (const fs::directory_entry& e : fs::recursive_directory_iterator(golden)) {
    if (!e.is_regular_file()) continue;
    std::string rel = fs::relative(e.path(), golden).string();
    if (rel.starts_with("_cluster/")) continue;
    render::RenderedFile probe;
    probe.node = rel.substr(0, rel.find('/'));
    probe.path = rel.substr(rel.find('/'));
    if (IsNcclOrOs(probe)) {
      EXPECT_TRUE(produced.count(rel)) << rel << " is a stale golden copy";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Examples, NcclOsGolden,
                         ::testing::Values("a100-roce-k8s", "h200-ib-32gpu", "h200-single-node"),
                         [](const ::testing::TestParamInfo<std::string>& p) {
                           std::string s = p.param;
                           std::replace(s.begin(), s.end(), '-', '_');
                           return s;
                         });

}  // namespace
}  // namespace gpuforge
