// What commands read on this machine: the inventory, the desired state of the targets, the
// agent binary, --only, the inventory's digest, the local user and the clock (the files apply
// pushes from this machine: controller_inputs.cc).

#include <fmt/chrono.h>
#include <fmt/format.h>
#include <pwd.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>

#include "cli/commands.h"
#include "gpuforge/base/read_file.h"
#include "gpuforge/base/sha256.h"
#include "gpuforge/inventory/loader.h"
#include "gpuforge/plan/controller_files.h"
#include "gpuforge/render/render.h"

namespace gpuforge::cli {

std::optional<model::Cluster> LoadInventory(Context& ctx, const std::string& path) {
  inventory::LoadOutcome outcome = inventory::LoadFile(path);
  std::string diags = outcome.FormatDiagnostics();
  if (!diags.empty()) {
    if (ctx.err_style.color) {
      // Colour the severity words only; the rest stays as the test-pinned text.
      std::string coloured;
      std::size_t pos = 0;
      while (pos < diags.size()) {
        std::size_t nl = diags.find('\n', pos);
        std::string line = diags.substr(pos, nl == std::string::npos ? std::string::npos : nl - pos + 1);
        for (auto [word, paint] : {std::pair{std::string_view(": error: "), 0}, std::pair{std::string_view(": warning: "), 1}}) {
          if (auto at = line.find(word); at != std::string::npos) {
            std::string w(word.substr(2, word.size() - 4));
            line.replace(at + 2, w.size(), paint == 0 ? ctx.err_style.Red(w) : ctx.err_style.Yellow(w));
            break;
          }
        }
        coloured += line;
        pos = nl == std::string::npos ? diags.size() : nl + 1;
      }
      diags = coloured;
    }
    ctx.Err(diags);
  }
  if (!outcome.ok()) return std::nullopt;
  return std::move(*outcome.cluster);
}

std::optional<std::map<std::string, plan::DesiredNode>> DesiredNodesFor(Context& ctx, const model::Cluster& cluster,
                                                                        std::span<const remote::Target> targets,
                                                                        const std::string& inventory,
                                                                        const plan::Parts& parts,
                                                                        const std::string& facts_dir) {
  render::Options ro;
  ro.inventory_label = InventoryLabel(inventory);
  for (const remote::Target& t : targets) ro.nodes.push_back(t.node);
  std::optional<render::Measured> measured;
  if (!facts_dir.empty()) {
    measured = LoadMeasured(ctx, cluster, facts_dir);
    if (!measured) return std::nullopt;
  }
  Result<render::Output> out = measured ? render::Render(cluster, ro, *measured) : render::Render(cluster, ro);
  if (!out.ok()) {
    ctx.Error(out.error().message);
    return std::nullopt;
  }
  PrintRenderNotes(ctx, *out);
  std::optional<plan::AgentBinary> agent;
  if (parts.count(plan::Part::kAgent)) {
    Result<plan::AgentBinary> a = LoadAgent();
    if (!a.ok()) {
      ctx.Error(a.error().message);
      return std::nullopt;
    }
    agent = std::move(*a);
  }
  std::optional<plan::ControllerFiles> local;
  if (parts.count(plan::Part::kFiles)) {
    local = LoadControllerFiles(ctx, cluster, inventory);
    if (!local) return std::nullopt;
  }
  std::map<std::string, plan::DesiredNode> m;
  for (const remote::Target& t : targets) {
    const model::Node* n = cluster.FindNode(t.node);
    m[t.node] = plan::DesiredNodeState(cluster, *n, plan::DesiredFiles(*out, t.node), parts, agent ? &*agent : nullptr,
                                       local ? &*local : nullptr);
  }
  return m;
}

Result<plan::AgentBinary> LoadAgent() {
  // The build writes a copy without debug information beside the binary (CMakeLists.txt);
  // an installed or copied binary without one pushes itself.
  std::error_code ec;
  std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return Error{fmt::format("agent: cannot find this binary (/proc/self/exe): {}", ec.message())};
  std::filesystem::path stripped = self.parent_path() / "gpuforge-agent";
  std::filesystem::path source = std::filesystem::is_regular_file(stripped, ec) ? stripped : self;
  std::ifstream in(source, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  if (!in && !in.eof()) return Error{fmt::format("agent: cannot read {}", source.string())};
  auto blob = std::make_shared<plan::Blob>();
  blob->bytes = ss.str();
  // The digest of the very bytes that will be uploaded, so the two cannot differ.
  blob->sha256 = base::Sha256Hex(blob->bytes);
  struct utsname u {};
  if (::uname(&u) != 0) return Error{"agent: uname failed"};
  return plan::AgentBinary{std::move(blob), u.machine};
}

std::optional<plan::Parts> PartsFrom(Context& ctx, const std::string& only) {
  if (only.empty()) return plan::AllParts();
  Result<plan::Parts> p = plan::ParseParts(only);
  if (!p.ok()) {
    ctx.Error("--only: " + p.error().message);
    return std::nullopt;
  }
  return *p;
}

void PrintRenderNotes(Context& ctx, const render::Output& out) {
  if (ctx.verbosity < 0) return;
  for (const render::Skip& n : out.notes) {
    ctx.Err(fmt::format("gpuforge: {} {}{}: {}\n", ctx.err_style.Yellow("note:"), n.node.empty() ? "" : n.node + ":", n.path,
                        n.reason));
  }
}

std::string InventoryLabel(const std::string& path) {
  return path == "-" ? std::string(base::kStdinLabel) : std::filesystem::path(path).filename().string();
}

std::optional<std::string> FileSha256(Context& ctx, const std::string& path) {
  // A saved plan's inventory is read again by apply: standard input or a pipe cannot be.
  if (Status s = base::CheckInputFile({path, "inventory", 64u << 20, true}); !s.ok()) {
    ctx.Error(fmt::format("{}; a saved plan names an inventory that apply reads again", s.error().message));
    return std::nullopt;
  }
  Result<std::string> sha = base::Sha256FileHex(path);
  if (!sha.ok()) {
    ctx.Error(fmt::format("{}: cannot read it", path));
    return std::nullopt;
  }
  return *sha;
}

std::string LocalUserAtHost() {
  char host[256] = {};
  if (::gethostname(host, sizeof(host) - 1) != 0) host[0] = '\0';
  std::string user;
  if (const char* env = std::getenv("USER"); env != nullptr && *env != '\0') {
    user = env;
  } else if (const passwd* pw = ::getpwuid(::geteuid()); pw != nullptr && pw->pw_name != nullptr) {
    user = pw->pw_name;  // cron and systemd units often run without USER
  } else {
    user = fmt::format("uid{}", ::geteuid());
  }
  return user + "@" + host;
}

std::string NowUtc() {
  return fmt::format("{:%Y-%m-%dT%H:%M:%SZ}", std::chrono::floor<std::chrono::seconds>(std::chrono::system_clock::now()));
}

}  // namespace gpuforge::cli
