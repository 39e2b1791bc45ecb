#include "gpuforge/plan/file_plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstring>

#include "gpuforge/base/fold.h"
#include "gpuforge/base/sha256.h"
#include "gpuforge/model/slurm_roles.h"
#include "gpuforge/plan/controller_files.h"

namespace gpuforge::plan {

std::vector<DesiredFile> DesiredFiles(const render::Output& rendered, std::string_view node) {
  std::vector<DesiredFile> out;
  if (node.empty()) return out;
  // rendered.files is sorted by (node, path) (render.h): the node's files are one run of it,
  // found in log time, so planning every node stays linear in the files (#14, Scale).
  auto first = std::lower_bound(rendered.files.begin(), rendered.files.end(), node,
                                [](const render::RenderedFile& f, std::string_view n) { return f.node < n; });
  for (auto it = first; it != rendered.files.end() && it->node == node; ++it) {
    const render::RenderedFile& f = *it;
    DesiredFile d;
    d.path = f.path;
    d.content = f.content;
    d.mode = static_cast<unsigned>(std::strtoul(f.mode.c_str(), nullptr, 8));
    d.owner = f.owner;
    out.push_back(std::move(d));
  }
  std::sort(out.begin(), out.end(), [](const DesiredFile& a, const DesiredFile& b) { return a.path < b.path; });
  return out;
}

std::string DesiredFile::Sha256() const { return blob ? blob->sha256 : base::Sha256Hex(content); }

const char* ToString(Impact i) {
  switch (i) {
    case Impact::kLive: return "live";
    case Impact::kNewSessions: return "new-sessions";
    case Impact::kReload: return "reload";
    case Impact::kRestart: return "restart";
    case Impact::kReboot: return "reboot";
  }
  return "?";
}

const char* ToString(Action a) {
  switch (a) {
    case Action::kNone: return "none";
    case Action::kCreate: return "create";
    case Action::kChange: return "change";
    case Action::kRemove: return "remove";
  }
  return "?";
}

// Kubernetes (render/kubernetes.cc, #14): the kubelet reads its unit and config drop-ins only
// at start. A changed CPU or memory manager policy makes it refuse its old state files
// ("configured policy ... differs from state checkpoint"), so they go while it is stopped;
// on a drained node it writes them afresh.
constexpr std::string_view kKubeletHandler =
    "systemctl daemon-reload && systemctl stop kubelet && rm -f /var/lib/kubelet/cpu_manager_state "
    "/var/lib/kubelet/memory_manager_state && systemctl start kubelet";

constexpr std::string_view kRoceHandler =
    "systemctl daemon-reload && systemctl enable gpuforge-roce.service && systemctl restart gpuforge-roce.service";

// Enabling is the services part's (systemctl enable reads the drop-in's [Install] from disk);
// this makes the running daemon take the new ExecStart. Only where systemd is running
// (sd_booted(3): /run/systemd/system), so a host without it has nothing to reload.
constexpr std::string_view kPersistencedHandler =
    "if [ -d /run/systemd/system ]; then systemctl daemon-reload && systemctl try-restart nvidia-persistenced.service; fi";

constexpr std::string_view kDcgmExporterHandler =
    "if [ -d /run/systemd/system ] && systemctl cat nvidia-dcgm-exporter.service >/dev/null 2>&1; then "
    "systemctl daemon-reload && systemctl try-restart nvidia-dcgm-exporter.service; fi";

constexpr std::string_view kMungeHandler = "systemctl restart munge.service";

constexpr std::string_view kAccountingControllerRow = "@accounting-controller:/etc/slurm/slurm.conf";

// slurmdbd and its MariaDB read their files only at start. slurmctld keeps the records of jobs
// that end while slurmdbd is away and sends them when it is back (slurm.conf(5)
// MaxDBDMsgs), so neither restart touches running jobs.
constexpr std::string_view kMariadbHandler = "systemctl restart mariadb.service";
constexpr std::string_view kSlurmdbdHandler = "systemctl restart slurmdbd.service";

std::span<const ImpactRule> ImpactTable() {
  // Order matters twice: the first matching prefix wins, and handlers run in this order.
  static constexpr std::array kTable = {
      ImpactRule{"/etc/nccl.conf", Impact::kLive, "", "next job"},
      ImpactRule{"/etc/nccl/", Impact::kLive, "", "next job"},
      ImpactRule{"/etc/sysctl.d/", Impact::kLive, "sysctl --system", "sysctl --system"},
      ImpactRule{"/etc/security/limits.d/", Impact::kNewSessions, "", "new login sessions"},
      // Loading the modules now is the modules resource's job, which is not built yet.
      ImpactRule{"/etc/modules-load.d/", Impact::kReboot, "", "modules load at next boot"},
      // munged reads its key only at start. Debian's munge package starts munged with a key
      // of its own making before apply writes the cluster's, so this restart runs even when
      // the services step started munge in this run (it is not "systemctl restart munge").
      // slurmctld and slurmd ask munged per credential and need no restart; it runs before their
      // handlers, so a restarted slurmd finds the new key.
      ImpactRule{"/etc/munge/munge.key", Impact::kReload, kMungeHandler, "restart munged (no drain: jobs keep running)"},
      // Before slurmdbd's: a restarted slurmdbd finds the server already running its settings.
      ImpactRule{model::kMariadbConfDebian, Impact::kReload, kMariadbHandler,
                 "restart mariadb (no drain: slurmctld queues job records meanwhile)"},
      ImpactRule{model::kMariadbConfRhel, Impact::kReload, kMariadbHandler,
                 "restart mariadb (no drain: slurmctld queues job records meanwhile)"},
      ImpactRule{model::kSlurmdbdConfPath, Impact::kReload, kSlurmdbdHandler,
                 "restart slurmdbd (no drain: slurmctld queues job records meanwhile)"},
      ImpactRule{model::kSlurmdbdPassPath, Impact::kReload, kSlurmdbdHandler,
                 "restart slurmdbd (no drain: slurmctld queues job records meanwhile)"},
      // Rows whose prefix starts with '@' match no path: the desired state picks them per node
      // (ImpactOnAccountingController) and they stand here for their handler's place in order.
      // slurmctld loads its accounting_storage plugin only at start: with slurm.conf turned from
      // no accounting to slurmdbd, a real 22.05 slurmctld took `scontrol reconfigure`, showed
      // the new AccountingStorageType and never registered with slurmdbd; restarted, it did
      // (RenderSlurmDaemonsAccounting.TurningAccountingOnNeedsASlurmctldRestart). Running jobs
      // survive it (their state is in StateSaveLocation).
      ImpactRule{kAccountingControllerRow, Impact::kReload, "systemctl restart slurmctld",
                 "restart slurmctld (accounting: it loads the plugin only at start; jobs keep running)"},
      ImpactRule{"/etc/slurm/slurm.conf", Impact::kReload, "scontrol reconfigure", "scontrol reconfigure"},
      ImpactRule{"/etc/slurm/topology.conf", Impact::kReload, "scontrol reconfigure", "scontrol reconfigure"},
      // slurmd reads gres.conf, cgroup.conf and job_container.conf only at start.
      ImpactRule{"/etc/slurm/gres.conf", Impact::kRestart, "systemctl restart slurmd",
                 "drain first, restart slurmd"},
      ImpactRule{"/etc/slurm/cgroup.conf", Impact::kRestart, "systemctl restart slurmd",
                 "drain first, restart slurmd"},
      // Configless slurmd (render/slurm.cc): the drop-in changes slurmd's command line.
      ImpactRule{"/etc/systemd/system/slurmd.service.d/", Impact::kRestart,
                 "systemctl daemon-reload && systemctl restart slurmd", "drain first, daemon-reload, restart slurmd"},
      ImpactRule{"/etc/systemd/system/kubelet.service.d/", Impact::kRestart, kKubeletHandler,
                 "drain first, restart kubelet"},
      ImpactRule{"/etc/kubernetes/kubelet.conf.d/", Impact::kRestart, kKubeletHandler, "drain first, restart kubelet"},
      ImpactRule{"/etc/slurm/job_container.conf", Impact::kRestart, "systemctl restart slurmd",
                 "drain first, restart slurmd"},
      ImpactRule{"/usr/local/lib/gpuforge/", Impact::kLive, "", "validate runs it"},
      // RoCE ports (render/roce.cc): re-running the script changes MTU and addresses under jobs.
      ImpactRule{"/usr/local/sbin/gpuforge-roce-setup", Impact::kRestart, kRoceHandler,
                 "drain first, re-applies MTU, addresses and QoS on the RoCE ports"},
      ImpactRule{"/etc/systemd/system/gpuforge-roce.service", Impact::kRestart, kRoceHandler,
                 "drain first, re-applies MTU, addresses and QoS on the RoCE ports"},
      // The persistenced drop-in (render/os.cc): systemd reads it at daemon-reload; the
      // daemon takes --persistence-mode only when it starts again.
      ImpactRule{"/etc/systemd/system/nvidia-persistenced.service.d/", Impact::kRestart, kPersistencedHandler,
                 "daemon-reload, restart nvidia-persistenced (persistence mode on)"},
      // dcgm-exporter reads its counters file and command line only when it starts
      // (render/monitoring.cc); try-restart leaves an exporter that is not running alone, and
      // where no host unit exists (Kubernetes: the GPU Operator's pod) nothing is restarted.
      ImpactRule{"/etc/dcgm-exporter/", Impact::kReload, kDcgmExporterHandler,
                 "restart the exporter (no drain: a gap in GPU metrics only)"},
      ImpactRule{"/etc/systemd/system/nvidia-dcgm-exporter.service.d/", Impact::kReload, kDcgmExporterHandler,
                 "daemon-reload, restart the exporter (no drain: a gap in GPU metrics only)"},
      ImpactRule{"", Impact::kLive, "", "next use"},
  };
  return kTable;
}

bool IsHandler(std::string_view command) {
  for (const ImpactRule& r : ImpactTable()) {
    if (!r.handler.empty() && r.handler == command) return true;
  }
  return false;
}

bool IsLeftoverTemporary(std::string_view path) {
  std::size_t slash = path.rfind('/');
  std::string_view base = slash == std::string_view::npos ? path : path.substr(slash + 1);
  auto suffix_ok = [](std::string_view x) {
    return x.size() >= 6 && x.size() <= 16 &&
           std::all_of(x.begin(), x.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; });
  };
  for (std::string_view mark : {std::string_view(".gpuforge-rollback."), std::string_view(".gpuforge-")}) {
    std::size_t at = base.rfind(mark);
    if (at == std::string_view::npos || at == 0 || !suffix_ok(base.substr(at + mark.size()))) continue;
    std::string_view name = base.substr(0, at);
    if (mark == ".gpuforge-") return name.size() >= 2 && name.front() == '.';  // ".NAME"
    return true;                                                                // "NAME.gpuforge-rollback.X"
  }
  return false;
}

const ImpactRule* ImpactWithoutSlurmd(std::string_view path) {
  static constexpr ImpactRule kServed{"", Impact::kReload, "scontrol reconfigure",
                                      "slurmctld serves it (configless); each slurmd takes it at its restart"};
  return model::IsSlurmdOnlyFile(path) ? &kServed : nullptr;
}

const ImpactRule* ImpactOnAccountingController(std::string_view path) {
  static const ImpactRule* const row = [] {
    for (const ImpactRule& r : ImpactTable()) {
      if (r.prefix == kAccountingControllerRow) return &r;
    }
    return static_cast<const ImpactRule*>(nullptr);
  }();
  return path == "/etc/slurm/slurm.conf" ? row : nullptr;
}

const ImpactRule& ImpactFor(std::string_view path) {
  for (const ImpactRule& r : ImpactTable()) {
    if (r.prefix.empty()) return r;
    if (r.prefix.back() == '/' ? path.starts_with(r.prefix) : path == r.prefix) return r;
  }
  return ImpactTable().back();
}

const char* ToString(ItemChange::Kind k) {
  switch (k) {
    case ItemChange::Kind::kPackage: return "package";
    case ItemChange::Kind::kModule: return "module";
    case ItemChange::Kind::kSysctl: return "sysctl";
    case ItemChange::Kind::kService: return "service";
  }
  return "?";
}

std::size_t NodePlan::Count(Action a) const {
  return static_cast<std::size_t>(std::count_if(files.begin(), files.end(), [a](const FileChange& f) { return f.action == a; }) +
                                  std::count_if(items.begin(), items.end(), [a](const ItemChange& i) { return i.action == a; }));
}

Impact NodePlan::WorstImpact() const {
  Impact worst = Impact::kLive;
  for (const FileChange& f : files) {
    if (f.action != Action::kNone) worst = std::max(worst, f.impact);
  }
  for (const ItemChange& i : items) {
    if (i.action != Action::kNone) worst = std::max(worst, i.impact);
  }
  return worst;
}

std::vector<std::string> NodePlan::Handlers() const {
  std::vector<std::string> out;
  for (const ImpactRule& r : ImpactTable()) {
    if (r.handler.empty()) continue;
    std::string h(r.handler);
    if (std::find(out.begin(), out.end(), h) != out.end()) continue;
    bool needed = std::any_of(files.begin(), files.end(),
                              [&](const FileChange& f) { return f.action != Action::kNone && f.handler == h; }) ||
                  std::find(pending.begin(), pending.end(), h) != pending.end();
    if (needed) out.push_back(std::move(h));
  }
  return out;
}

Result<NodePlan> PlanNode(std::string_view node, std::span<const DesiredFile> desired,
                          std::span<const ActualFile> actual) {
  if (desired.size() != actual.size()) {
    return Error{fmt::format("node {}: {} states for {} files", node, actual.size(), desired.size())};
  }
  NodePlan p;
  p.node = std::string(node);
  for (std::size_t i = 0; i < desired.size(); ++i) {
    const DesiredFile& d = desired[i];
    const ActualFile& a = actual[i];
    if (a.kind == ActualFile::Kind::kOther) {
      return Error{fmt::format("node {}: {} is not a regular file (a link or a directory); gpuforge does not replace it",
                               node, d.path)};
    }
    const ImpactRule& rule = d.impact != nullptr ? *d.impact : ImpactFor(d.path);
    FileChange c;
    c.path = d.path;
    c.mode_to = d.mode;
    c.owner_to = std::string(d.OwnerUser());
    c.secret = d.secret || IsSecretPath(d.path);
    c.impact = rule.impact;
    c.handler = std::string(rule.handler);
    c.note = std::string(rule.note);
    if (a.kind == ActualFile::Kind::kAbsent) {
      c.action = Action::kCreate;
    } else {
      c.mode_from = a.mode;
      c.owner_from = a.owner;
      c.content = a.size != d.Content().size() || a.sha256 != d.Sha256();
      c.mode = a.mode != d.mode;
      c.owner = a.owner != d.OwnerUser();
      c.action = c.content || c.mode || c.owner ? Action::kChange : Action::kNone;
    }
    p.files.push_back(std::move(c));
  }
  return p;
}

std::vector<FoldedPlan> FoldPlans(std::span<const NodePlan> plans) {
  // Fold on the whole plan, not on its text: two nodes fold only when every file's action,
  // differences and old mode/owner agree.
  std::vector<std::pair<std::string, std::string>> keyed;
  for (std::size_t i = 0; i < plans.size(); ++i) {
    std::string key;
    for (const FileChange& f : plans[i].files) {
      key += fmt::format("{}\x1f{}\x1f{}{}{}\x1f{:o}\x1f{}\x1e", f.path, ToString(f.action), f.content, f.mode, f.owner,
                         f.mode_from, f.owner_from);
    }
    for (const ItemChange& it : plans[i].items) {
      key += fmt::format("{}\x1f{}\x1f{}\x1f{}\x1f{}\x1e", ToString(it.kind), it.id, ToString(it.action), it.from, it.to);
    }
    keyed.emplace_back(plans[i].node, key);
  }
  std::vector<FoldedPlan> out;
  for (const base::Folded& g : base::FoldIdentical(keyed)) {
    const NodePlan* first = nullptr;
    for (std::size_t i = 0; i < plans.size() && first == nullptr; ++i) {
      if (keyed[i].second == g.text) first = &plans[i];
    }
    out.push_back({g.nodes, g.count, first});
  }
  return out;
}

}  // namespace gpuforge::plan
