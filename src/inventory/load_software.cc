// The 'software' section: OS, driver, CUDA, NCCL, RDMA stack, scheduler, repositories and
// packages.

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "gpuforge/base/names.h"
#include "gpuforge/inventory/schema.h"
#include "inventory/sections.h"

namespace gpuforge::inventory::internal {

using quantity::Dimension;

namespace {

bool HasControl(const std::string& s) {
  return std::any_of(s.begin(), s.end(), [](char ch) { return static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f; });
}

// MariaDB user and database names as slurmdbd.conf carries them unquoted: [A-Za-z0-9_],
// 1..32 characters (MySQL's user name limit; MariaDB takes 80, a database 64).
bool SqlName(const std::string& s) {
  return !s.empty() && s.size() <= 32 &&
         std::all_of(s.begin(), s.end(), [](char ch) { return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_'; });
}

}  // namespace

// software.scheduler.accounting: slurmdbd on `host` (default: the controller), storing into
// the MariaDB/MySQL server at storage_host (default: localhost, the slurmdbd node itself).
void Loader::LoadAccounting(const YAML::Node& a) {
  const std::string what = "software.scheduler.accounting";
  model::Scheduler& s = cluster_.software.scheduler;
  if (!r_.CheckMap(a, what, schema::kAccounting)) return;
  if (s.kind != model::SchedulerKind::kSlurm) {
    r_.Error(a, "'accounting' in software.scheduler is Slurm's (slurmdbd); this scheduler is not Slurm");
    return;
  }
  model::Scheduler::Accounting acct;
  acct.where = r_.Pos(a);
  bool ok = true;
  acct.host = s.controller;
  if (auto h = r_.Str(a, "host", what)) {
    YAML::Node hn = Get(a, "host");
    if (names::CheckHostname(*h)) {
      CheckWith(hn, names::CheckHostname, *h, "accounting host");
      ok = false;
    } else if (FindNode(*h) == nullptr && !broken_nodes_.count(*h) && !MaybeFromFailedEntry(*h)) {
      r_.Error(hn, fmt::format("accounting host '{}' is not a node in the inventory: slurmdbd runs on one of its nodes", *h));
      ok = false;
    }
    acct.host = *h;
  }
  if (auto h = r_.Str(a, "storage_host", what)) {
    if (names::CheckAddress(*h)) {
      CheckWith(Get(a, "storage_host"), names::CheckAddress, *h, "accounting storage_host");
      ok = false;
    }
    acct.storage_host = *h;
  }
  if (auto p = r_.Int(a, "storage_port", what, 1, 65535)) acct.storage_port = static_cast<int>(*p);
  for (auto [key, into] : {std::pair{"storage_user", &acct.storage_user}, std::pair{"database", &acct.database}}) {
    auto v = r_.Str(a, key, what);
    if (!v) continue;
    if (!SqlName(*v)) {
      r_.Error(Get(a, key), fmt::format("'{}' in {} must be 1 to 32 of [A-Za-z0-9_] (slurmdbd.conf holds it unquoted)", key, what));
      ok = false;
    }
    *into = *v;
  }
  // Read by plan and apply on this machine only, like munge_key.
  if (auto f = r_.Str(a, "storage_pass_file", what, true)) {
    YAML::Node fn = Get(a, "storage_pass_file");
    if (f->empty() || HasControl(*f)) {
      r_.Error(fn, fmt::format("'storage_pass_file' in {} must name a file (no control characters)", what));
      ok = false;
    } else {
      std::filesystem::path p(*f);
      if (p.is_relative()) p = std::filesystem::path(r_.file()).parent_path() / p;
      acct.storage_pass_file = p.lexically_normal().string();
      acct.storage_pass_where = r_.Pos(fn);
    }
  } else {
    ok = false;
  }
  if (ok) s.accounting = std::move(acct);
}

void Loader::LoadScheduler(const YAML::Node& n) {
  const std::string what = "software.scheduler";
  if (!r_.CheckMap(n, what, schema::kScheduler)) return;
  model::Scheduler& s = cluster_.software.scheduler;
  s.where = r_.Pos(n);
  if (auto k = r_.Choice(n, "kind", what, {"slurm", "kubernetes", "none"}, true)) {
    s.kind = *k == "slurm"        ? model::SchedulerKind::kSlurm
             : *k == "kubernetes" ? model::SchedulerKind::kKubernetes
                                  : model::SchedulerKind::kNone;
  }
  if (auto c = r_.Str(n, "controller", what)) {
    YAML::Node cn = Get(n, "controller");
    if (names::CheckHostname(*c)) {
      CheckWith(cn, names::CheckHostname, *c, "scheduler controller");
    } else if (FindNode(*c) == nullptr && !broken_nodes_.count(*c) && !MaybeFromFailedEntry(*c)) {
      std::vector<std::string> known;
      if (cluster_.nodes.size() < 5000) {
        for (const auto& x : cluster_.nodes) known.push_back(x.name);
      }
      r_.Error(cn, fmt::format("scheduler controller '{}' is not a node in the inventory{}", *c, DidYouMean(*c, known)));
    }
    s.controller = *c;
  }
  if (auto g = r_.Choice(n, "gres_autodetect", what, {"nvml", "off"})) s.gres_autodetect_nvml = *g == "nvml";
  if (auto g = r_.Choice(n, "configless", what, {"auto", "on", "off"}); g && *g != "auto") s.configless = *g == "on";
  if (auto v = r_.Bool(n, "volcano", what)) s.volcano = *v;
  if (auto p = r_.Choice(n, "topology_manager_policy", what, {"none", "best-effort", "restricted", "single-numa-node"})) {
    s.topology_manager_policy = *p;
  }
  if (auto p = r_.Choice(n, "cpu_manager_policy", what, {"none", "static"})) s.cpu_manager_policy = *p;
  YAML::Node res = Get(n, "reserved");
  if (Has(n, "reserved") && r_.CheckMap(res, what + ".reserved", schema::kReserved)) {
    if (auto c = r_.Int(res, "cpus", what + ".reserved", 0, 1024)) s.reserved_cpus = static_cast<int>(*c);
    s.reserved_memory_bytes = r_.Qty(res, "memory", what + ".reserved", Dimension::kSize);
  }
  if (auto k = r_.Str(n, "munge_key", what)) {
    // Read by plan and apply on this machine only (never reaches a shell), so any file name
    // goes but for control characters, which would garble the messages that name it.
    YAML::Node kn = Get(n, "munge_key");
    if (k->empty() || std::any_of(k->begin(), k->end(), [](char ch) { return static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f; })) {
      r_.Error(kn, "'munge_key' in software.scheduler must name a file (no control characters)");
    } else {
      std::filesystem::path p(*k);
      if (p.is_relative()) p = std::filesystem::path(r_.file()).parent_path() / p;
      s.munge_key = p.lexically_normal().string();
      s.munge_key_where = r_.Pos(kn);
    }
  }
  YAML::Node hc = Get(n, "health_check");
  if (Has(n, "health_check") && r_.CheckMap(hc, what + ".health_check", schema::kHealthCheck)) {
    const std::string hwhat = what + ".health_check";
    model::Scheduler::HealthCheck h;
    h.where = r_.Pos(hc);
    bool ok = true;
    // slurm.conf(5): HealthCheckInterval in seconds; slurm.h keeps it in a uint16_t
    // (slurm_conf_t.health_check_interval), so 65535 is the most Slurm can hold.
    if (auto i = r_.Qty(hc, "interval", hwhat, Dimension::kDuration, true)) {
      if (!(*i >= 1 && *i <= 65535) || *i != std::floor(*i)) {
        r_.Error(Get(hc, "interval"), fmt::format("'interval' in {} must be whole seconds from 1s to 65535s (Slurm keeps "
                                                  "HealthCheckInterval in 16 bits)", hwhat));
        ok = false;
      } else {
        h.interval_s = static_cast<int>(*i);
      }
    } else {
      ok = false;
    }
    YAML::Node st = Get(hc, "node_state");
    if (Has(hc, "node_state") && r_.CheckSeq(st, hwhat + ".node_state")) {
      std::set<std::string> seen;
      for (const YAML::Node& w : st) {
        auto v = r_.ScalarOf(w, "a node_state of " + hwhat);
        if (!v) continue;
        // Slurm 22.05's HealthCheckNodeState words (slurm.conf(5)).
        static const std::vector<std::string> kWords = {"alloc", "any", "cycle", "idle", "mixed"};
        if (std::find(kWords.begin(), kWords.end(), *v) == kWords.end()) {
          r_.Error(w, fmt::format("node_state '{}' is not one of alloc, any, cycle, idle, mixed{}", *v, DidYouMean(*v, kWords)));
          continue;
        }
        if (!seen.insert(*v).second) continue;
        std::string up;
        for (char ch : *v) up += static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
        h.node_state.push_back(up);
      }
    }
    if (ok) s.health_check = std::move(h);
  }
  if (Has(n, "accounting")) LoadAccounting(Get(n, "accounting"));
  YAML::Node parts = Get(n, "partitions");
  if (Has(n, "partitions") && r_.CheckSeq(parts, what + ".partitions")) {
    std::set<std::string> seen;
    for (const YAML::Node& p : parts) {
      if (!r_.CheckMap(p, "a partition", schema::kPartition)) continue;
      model::Partition part;
      auto name = r_.Str(p, "name", "a partition", true);
      if (!name) continue;
      CheckWith(Get(p, "name"), names::CheckName, *name, "partition name");
      if (!seen.insert(*name).second) r_.Error(Get(p, "name"), fmt::format("partition '{}' is declared twice", *name));
      part.name = *name;
      std::string pwhat = fmt::format("partition '{}'", *name);
      if (auto d = r_.Bool(p, "default", pwhat)) part.is_default = *d;
      part.max_time_s = r_.Qty(p, "max_time", pwhat, Dimension::kDuration);
      if (!Has(p, "nodes")) {
        r_.Missing(p, "nodes", pwhat);
        continue;
      }
      YAML::Node nodes_node = Get(p, "nodes");
      auto nodes = Expand(nodes_node, fmt::format("nodes of {}", pwhat));
      if (!nodes) continue;
      std::vector<std::string> missing;
      for (const std::string& node : *nodes) {
        if (FindNode(node) == nullptr && !broken_nodes_.count(node) && !MaybeFromFailedEntry(node)) {
          missing.push_back(node);
        }
      }
      if (missing.size() == 1) {
        r_.Error(nodes_node, fmt::format("{} lists node '{}', which is not in the inventory", pwhat, missing.front()));
      } else if (!missing.empty()) {
        r_.Error(nodes_node, fmt::format("{} lists {} nodes that are not in the inventory, the first '{}'", pwhat,
                                         missing.size(), missing.front()));
      }
      part.nodes = std::move(*nodes);
      s.partitions.push_back(std::move(part));
    }
  }
}

void Loader::LoadSoftware(const YAML::Node& n) {
  if (!r_.CheckMap(n, "software", schema::kSoftware)) return;
  model::Software& sw = cluster_.software;
  sw.where = r_.Pos(n);
  auto version = [&](const YAML::Node& map, std::string_view key, std::string_view what) -> std::string {
    auto v = r_.Str(map, key, what);
    if (!v) return "";
    CheckWith(Get(map, key), names::CheckVersion, *v, fmt::format("'{}' in {}", key, what));
    return *v;
  };
  YAML::Node os = Get(n, "os");
  if (Has(n, "os") && r_.CheckMap(os, "software.os", schema::kOs)) {
    if (auto d = r_.Choice(os, "distro", "software.os", {"ubuntu", "debian", "rhel", "rocky", "almalinux"}, true)) sw.os_distro = *d;
    sw.os_version = version(os, "version", "software.os");
    sw.os_kernel = version(os, "kernel", "software.os");  // #14: decides DMA-BUF (model/driver_stack.h)
    if (auto g = r_.Str(os, "memlock_group", "software.os")) {  // #14: memlock for a group only
      CheckWith(Get(os, "memlock_group"), names::CheckName, *g, "'memlock_group' in software.os");
      sw.memlock_group = *g;
    }
  }
  YAML::Node drv = Get(n, "driver");
  if (Has(n, "driver") && r_.CheckMap(drv, "software.driver", schema::kDriver)) {
    sw.driver_branch = version(drv, "branch", "software.driver");
    sw.driver_version = version(drv, "version", "software.driver");
    if (auto m = r_.Choice(drv, "kernel_modules", "software.driver", {"open", "proprietary"}, false)) sw.driver_kernel_modules = *m;
  }
  sw.cuda_version = version(n, "cuda", "software");
  YAML::Node nccl = Get(n, "nccl");
  if (Has(n, "nccl") && r_.CheckMap(nccl, "software.nccl", schema::kNccl)) {
    sw.nccl_where = r_.Pos(nccl);
    sw.nccl_version = version(nccl, "version", "software.nccl");
    if (auto f = r_.Str(nccl, "topo_file", "software.nccl")) {
      CheckWith(Get(nccl, "topo_file"), names::CheckPath, *f, "'topo_file' in software.nccl");
      sw.nccl_topo_file = *f;
    }
    YAML::Node env = Get(nccl, "env");
    if (Has(nccl, "env") && r_.CheckOpenMap(env, "software.nccl.env")) {
      for (auto it = env.begin(); it != env.end(); ++it) {
        YAML::Node key = it->first;
        YAML::Node value = it->second;
        if (!key.IsScalar()) continue;
        const std::string& k = key.Scalar();
        CheckWith(key, names::CheckEnvName, k, "NCCL environment variable");
        auto v = r_.ScalarOf(value, fmt::format("NCCL environment variable {}", k));
        if (!v) continue;
        if (!CheckSafe(value, *v, fmt::format("value of {}", k),
                       "NCCL settings are written to nccl.conf and job environments")) {
          continue;
        }
        if (k == "NCCL_TOPO_FILE" && !sw.nccl_topo_file.empty() && *v != sw.nccl_topo_file) {
          r_.Error(value, fmt::format("NCCL_TOPO_FILE is '{}' here but software.nccl.topo_file is '{}'; say it once", *v, sw.nccl_topo_file));
        }
        sw.nccl_env.emplace_back(k, *v);
      }
    }
  }
  YAML::Node rdma = Get(n, "rdma");
  if (Has(n, "rdma") && r_.CheckMap(rdma, "software.rdma", schema::kRdma)) {
    if (auto k = r_.Choice(rdma, "kind", "software.rdma", {"rdma-core", "mlnx-ofed", "doca-ofed"}, true)) sw.ofed_kind = *k;
    sw.rdma_core_version = version(rdma, "version", "software.rdma");
    sw.rdma_where = r_.Pos(rdma);
    if (auto g = r_.Choice(rdma, "gpudirect", "software.rdma", {"dma-buf", "peermem"}, false)) sw.gpudirect = *g;
  }
  if (Has(n, "scheduler")) LoadScheduler(Get(n, "scheduler"));
  YAML::Node mon = Get(n, "monitoring");
  if (Has(n, "monitoring") && r_.CheckMap(mon, "software.monitoring", schema::kMonitoring)) {
    // host: the plan installs dcgm-exporter as a service; external: the site runs it (a
    // container, the GPU Operator), and gets the counters file only (docs/render.md).
    if (auto e = r_.Choice(mon, "dcgm_exporter", "software.monitoring", {"host", "external"}, false)) {
      sw.dcgm_exporter = *e;
      if (*e == "host" && sw.cuda_version.empty()) {
        r_.Error(Get(mon, "dcgm_exporter"),
                 "dcgm_exporter: host needs software.cuda: the exporter reads nvidia-dcgm's host engine, and DCGM is "
                 "planned only with CUDA");
      }
    }
  }
  YAML::Node repos = Get(n, "repositories");
  if (Has(n, "repositories") && r_.CheckSeq(repos, "software.repositories")) {
    std::set<std::string> seen;
    for (const YAML::Node& y : repos) {
      if (!r_.CheckMap(y, "a repository", schema::kRepository)) continue;
      model::Repository repo;
      repo.where = r_.Pos(y);
      auto name = r_.Str(y, "name", "a repository", true);
      if (!name) continue;
      CheckWith(Get(y, "name"), names::CheckName, *name, "repository name");
      if (!seen.insert(*name).second) r_.Error(Get(y, "name"), fmt::format("repository '{}' is declared twice", *name));
      repo.name = *name;
      const std::string what = fmt::format("repository '{}'", *name);
      if (auto url = r_.Str(y, "url", what, true)) {
        CheckWith(Get(y, "url"), names::CheckUrl, *url, fmt::format("'url' of {}", what));
        repo.url = *url;
      }
      if (auto suite = r_.Str(y, "suite", what)) {
        CheckWith(Get(y, "suite"), names::CheckPath, "/" + *suite, fmt::format("'suite' of {}", what));
        repo.suite = *suite;
      }
      YAML::Node comps = Get(y, "components");
      if (Has(y, "components") && r_.CheckSeq(comps, fmt::format("'components' of {}", what))) {
        for (const YAML::Node& c : comps) {
          auto v = r_.ScalarOf(c, fmt::format("a component of {}", what));
          if (!v) continue;
          CheckWith(c, names::CheckName, *v, fmt::format("a component of {}", what));
          repo.components.push_back(*v);
        }
      }
      if (auto key = r_.Str(y, "signed_by", what)) {
        CheckWith(Get(y, "signed_by"), names::CheckPath, *key, fmt::format("'signed_by' of {}", what));
        repo.signed_by = *key;
      }
      if (auto t = r_.Bool(y, "trusted", what)) repo.trusted = *t;
      if (repo.trusted && !repo.signed_by.empty()) {
        r_.Error(Get(y, "trusted"), fmt::format("{} is both trusted (no signature check) and signed_by a key; pick one", what));
      }
      sw.repositories.push_back(std::move(repo));
    }
  }
  YAML::Node pkgs = Get(n, "packages");
  if (Has(n, "packages") && r_.CheckSeq(pkgs, "software.packages")) {
    std::set<std::string> seen;
    for (const YAML::Node& y : pkgs) {
      if (!r_.CheckMap(y, "a package", schema::kExtraPackage)) continue;
      model::ExtraPackage pkg;
      pkg.where = r_.Pos(y);
      auto name = r_.Str(y, "name", "a package", true);
      if (!name) continue;
      // Debian policy's package name alphabet (RPM's is wider; this is the common part).
      const unsigned char first = name->empty() ? 0 : static_cast<unsigned char>((*name)[0]);
      const bool ok = !name->empty() && name->size() <= 128 && (std::islower(first) != 0 || std::isdigit(first) != 0) &&
                      name->find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789.+-") == std::string::npos;
      if (!ok) {
        r_.Error(Get(y, "name"), fmt::format("package name '{}' must be [a-z0-9.+-], starting with a letter or digit", *name));
        continue;
      }
      if (!seen.insert(*name).second) r_.Error(Get(y, "name"), fmt::format("package '{}' is listed twice", *name));
      pkg.name = *name;
      pkg.version = version(y, "version", fmt::format("package '{}'", *name));
      if (auto unit = r_.Str(y, "service", fmt::format("package '{}'", *name))) {
        CheckWith(Get(y, "service"), names::CheckName, *unit, fmt::format("'service' of package '{}'", *name));
        pkg.service = *unit;
      }
      sw.packages.push_back(std::move(pkg));
    }
  }
}

}  // namespace gpuforge::inventory::internal
