// Slurm accounting (software.scheduler.accounting, #14): the slurm.conf lines that send jobs to
// slurmdbd, slurmdbd.conf on the node slurmdbd runs on, and the MariaDB server settings there
// when the database is local. The database password is no rendered file: plan pushes it from
// the operator's file (plan/controller_files.h) to model::kSlurmdbdPassPath, which
// slurmdbd.conf Includes.

#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <vector>

#include "gpuforge/model/slurm_roles.h"
#include "render/families.h"

namespace gpuforge::render {
namespace {

// slurmdbd's default port (slurmdbd.conf(5) DbdPort, slurm.conf(5) AccountingStoragePort).
constexpr int kDbdPort = 6819;

std::string AddressOf(const model::Node& n) { return n.address.empty() ? n.name : n.address; }

}  // namespace

nlohmann::json SlurmAccountingContext(const model::Cluster& c, const std::vector<std::string>& gres_types) {
  const auto& a = c.software.scheduler.accounting;
  const model::Node* dbd = a ? c.FindNode(a->host) : nullptr;
  if (dbd == nullptr) return {{"accounting", false}};
  // slurm.conf(5) AccountingStorageTRES: gres/gpu is not among the TRES slurmdbd records by
  // default, so sacct and sreport would show no GPUs at all; a count per GPU type too, so
  // GPU-hours on a cluster of mixed generations are told apart.
  std::vector<std::string> tres = {"gres/gpu"};
  for (const std::string& t : gres_types) tres.push_back("gres/gpu:" + t);
  std::sort(tres.begin() + 1, tres.end());
  tres.erase(std::unique(tres.begin(), tres.end()), tres.end());
  return {{"accounting", true},
          {"dbd_host", dbd->name},
          {"dbd_addr", AddressOf(*dbd)},
          {"dbd_port", std::to_string(kDbdPort)},
          {"tres", fmt::format("{}", fmt::join(tres, ","))}};
}

void AddSlurmAccountingJobs(const model::Cluster& c, const Options& o, Plan* plan) {
  const auto& a = c.software.scheduler.accounting;
  if (!a) return;
  const model::Node* dbd = c.FindNode(a->host);
  if (dbd == nullptr) {
    plan->skipped.push_back({"", std::string(model::kSlurmdbdConfPath),
                             fmt::format("software.scheduler.accounting.host '{}' is no node of the inventory", a->host)});
    return;
  }
  const std::vector<const model::Node*> selected = SelectedNodes(c, o);
  if (std::find(selected.begin(), selected.end(), dbd) == selected.end()) return;
  const bool rhel = IsRhelFamily(c.software.os_distro);
  const std::string cnf(rhel ? model::kMariadbConfRhel : model::kMariadbConfDebian);
  nlohmann::json ctx = {{"dbd_host", dbd->name},
                        {"dbd_port", std::to_string(kDbdPort)},
                        {"storage_host", a->storage_host},
                        {"storage_port", std::to_string(a->storage_port)},
                        {"storage_user", a->storage_user},
                        {"database", a->database},
                        {"pass_file", std::string(model::kSlurmdbdPassPath)},
                        {"local_database", a->LocalDatabase()},
                        {"mariadb_conf", cnf}};
  Job conf{dbd->name, std::string(model::kSlurmdbdConfPath), "slurmdbd.conf.mustache", ctx, CommentStyle::kHash,
           fmt::format("{:04o}", model::kSlurmdbdMode)};
  conf.owner = std::string(model::kSlurmdbdOwner);
  plan->jobs.push_back(std::move(conf));
  if (a->LocalDatabase()) {
    plan->jobs.push_back({dbd->name, cnf, "mariadb-slurmdbd.cnf.mustache", ctx, CommentStyle::kHash, "0644"});
  }
}

}  // namespace gpuforge::render
