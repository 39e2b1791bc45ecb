#pragma once

// The Slurm daemons and commands each node of a Slurm cluster runs, derived once from the model:
// render (which nodes get a NodeName line and which files), plan (packages, services, handlers)
// and lint read this one answer, so a node never gets a slurmd that slurm.conf does not name.

#include <string_view>
#include <vector>

#include "gpuforge/model/cluster.h"

namespace gpuforge::model {

// Where gpuforge's health check lives on a slurmd node and what it runs and reads
// (software.scheduler.health_check): render writes the program naming these paths and plan
// pushes the agent, the inventory and the pass marks to them, so both stages read them here.
inline constexpr std::string_view kNodeAgentPath = "/usr/local/lib/gpuforge/gpuforge";
inline constexpr std::string_view kHealthCheckProgramPath = "/usr/local/lib/gpuforge/healthcheck";
inline constexpr std::string_view kHealthCheckInventoryPath = "/etc/gpuforge/cluster.yaml";
inline constexpr std::string_view kHealthCheckModelTablePath = "/etc/gpuforge/gpu-models.yaml";

// gres.conf AutoDetect=nvml (software.scheduler.gres_autodetect: nvml) makes slurmd load
// gpu_nvml.so, which Debian and Ubuntu build apart from slurmd, from the slurm-wlm-contrib
// source: slurm-wlm-nvml-plugin, in Debian's contrib component from 12 (22.05.8-4+deb12u2) and
// Ubuntu's multiverse (seen from 25.10, 24.11.5-4) (packages.debian.org src:slurm-wlm-contrib,
// packages.ubuntu.com). Without it slurmd finds 0 GPUs and every GPU node drains
// (RenderSlurmDaemonsNvml). gpuforge knows no RHEL or EPEL package that carries it.
inline constexpr std::string_view kSlurmNvmlPluginPackage = "slurm-wlm-nvml-plugin";

// Slurm accounting (software.scheduler.accounting): what render writes on the slurmdbd node and
// plan pushes and restarts there. slurmdbd reads slurmdbd.conf from slurm.conf's directory and
// refuses one that is not mode 0600 and owned by SlurmUser (22.05 src/slurmdbd/read_config.c:
// "slurmdbd.conf file ... should be 600", "slurmdbd.conf not owned by SlurmUser"). The database
// password sits in a file of its own that slurmdbd.conf Includes, so slurmdbd.conf can be shown
// and diffed like any rendered file while the password never is.
inline constexpr std::string_view kSlurmdbdConfPath = "/etc/slurm/slurmdbd.conf";
inline constexpr std::string_view kSlurmdbdPassPath = "/etc/slurm/slurmdbd-storage-pass.conf";
inline constexpr std::string_view kSlurmdbdOwner = "slurm:slurm";
inline constexpr unsigned kSlurmdbdMode = 0600;
// The MariaDB server settings slurmdbd checks at start (a database on the slurmdbd node only).
inline constexpr std::string_view kMariadbConfDebian = "/etc/mysql/mariadb.conf.d/60-gpuforge-slurmdbd.cnf";
inline constexpr std::string_view kMariadbConfRhel = "/etc/my.cnf.d/gpuforge-slurmdbd.cnf";

// The files slurmd and its job steps alone read (gres.conf(5), cgroup.conf(5),
// job_container.conf(5)): render gives them to slurmd nodes only (and to the controller in
// configless mode, which serves them), and plan says what a change to them means on a node
// without slurmd. One list for both.
inline constexpr std::string_view kSlurmdOnlyFiles[] = {"/etc/slurm/gres.conf", "/etc/slurm/cgroup.conf",
                                                        "/etc/slurm/job_container.conf"};
inline bool IsSlurmdOnlyFile(std::string_view path) {
  for (std::string_view p : kSlurmdOnlyFiles) {
    if (p == path) return true;
  }
  return false;
}

struct SlurmRole {
  bool slurmctld = false;  // the node software.scheduler.controller names
  bool slurmd = false;     // has a NodeName line in slurm.conf (SlurmdNodes)
  bool client = false;     // users submit from it: every node with a Slurm role
  bool munge = false;      // auth/munge runs wherever any of the above does
  bool slurmdbd = false;   // software.scheduler.accounting.host
  bool database = false;   // the accounting database's MariaDB server runs here (storage_host localhost)
  bool Any() const { return slurmctld || slurmd || client || slurmdbd; }
};

// Nodes slurmd runs on, in inventory order: a compute node, any node with GPUs, or a node a
// partition names (the controller too, when it is one of these). Empty when the scheduler is
// not Slurm.
std::vector<const Node*> SlurmdNodes(const Cluster& c);

// What `n` runs. A login node (role login), a node of role controller, the scheduler's
// controller and every slurmd node are clients; a node with none of these (storage) has no
// Slurm role at all.
SlurmRole SlurmRoleOf(const Cluster& c, const Node& n);

}  // namespace gpuforge::model
