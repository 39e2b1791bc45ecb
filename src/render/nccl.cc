// NCCL: /etc/nccl.conf and the NCCL topology file, per GPU node.

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <optional>
#include <string_view>
#include <utility>
#include <map>
#include <set>

#include "gpuforge/model/gpu_catalog.h"
#include "gpuforge/model/nccl_defaults.h"
#include "gpuforge/model/roce.h"
#include "render/families.h"
#include "render/quote.h"

namespace gpuforge::render {

namespace {

bool IsRdma(const model::NicSpec& n) { return n.kind != model::NetKind::kEthernet; }

const model::Network* NetworkOf(const model::Cluster& c, const model::NicSpec& n) {
  return n.network.empty() ? nullptr : c.FindNetwork(n.network);
}

// NICs that carry NCCL traffic: RDMA NICs on the compute network (or on no network at all when
// the inventory does not say).
std::vector<const model::NicSpec*> ComputeRdmaNics(const model::Cluster& c, const model::Profile& p) {
  std::vector<const model::NicSpec*> out;
  for (const model::NicSpec& n : p.nics) {
    const model::Network* net = NetworkOf(c, n);
    if (IsRdma(n) && (net == nullptr || net->role == model::NetRole::kCompute)) out.push_back(&n);
  }
  return out;
}

// The interface NCCL bootstraps over: the control network's, else the storage network's.
std::string SocketIfname(const model::Cluster& c, const model::Profile& p) {
  for (model::NetRole role : {model::NetRole::kControl, model::NetRole::kStorage}) {
    for (const model::NicSpec& n : p.nics) {
      const model::Network* net = NetworkOf(c, n);
      if (net != nullptr && net->role == role && !n.netdev.empty()) return n.netdev;
    }
  }
  return "";
}

// NCCL before 2.26 does not skip '#' lines of nccl.conf (src/misc/param.cc setEnvFile sets
// KEY=VALUE from any line holding '='; comment lines were only ignored because they held
// none; '#' skipping came with 2.26, NVIDIA/nccl#1540). So no comment may hold '=': the texts
// here avoid it, and this keeps a value quoted into one (an inventory path) from adding it.
std::string NcclComment(std::string_view why) {
  std::string out(why);
  std::replace(out.begin(), out.end(), '=', ':');
  return out;
}

// "2.21.5" -> {2, 21}; nullopt when it does not start with MAJOR.MINOR.
std::optional<std::pair<int, int>> MajorMinor(std::string_view v) {
  int major = 0, minor = 0;
  auto [p1, e1] = std::from_chars(v.data(), v.data() + v.size(), major);
  if (e1 != std::errc() || p1 == v.data() + v.size() || *p1 != '.') return std::nullopt;
  auto [p2, e2] = std::from_chars(p1 + 1, v.data() + v.size(), minor);
  if (e2 != std::errc() || p2 == p1 + 1) return std::nullopt;
  return std::pair{major, minor};
}

}  // namespace

std::string NcclEnvValue(std::string_view key, std::string_view value) { return model::NcclEnvAsWritten(key, value); }

void AddNcclJobs(const model::Cluster& c, const Options& o, Plan* plan, const MeasuredPci* measured) {
  const model::Software& sw = c.software;
  std::map<std::string, std::string> env_set;
  for (const auto& [k, v] : sw.nccl_env) env_set[k] = v;
  // The cluster's GPU count is a walk over every node: once, not once per node (#14, Scale).
  const int gpus = c.TotalGpus();
  for (const model::Node* n : SelectedNodes(c, o)) {
    const model::Profile& p = c.ProfileOf(*n);
    if (p.gpu_count() == 0) continue;
    std::vector<const model::NicSpec*> rdma = ComputeRdmaNics(c, p);
    bool roce = std::any_of(rdma.begin(), rdma.end(), [](const model::NicSpec* x) { return x->kind == model::NetKind::kRoce; });

    // Topology file: only from the node's measured PCI tree (nccl_topology.cc).
    const std::string& topo_path = sw.nccl_topo_file;
    bool topo = AddNcclTopologyJob(c, measured, *n, p, rdma, plan);

    // nccl.conf: the inventory's own values win; gpuforge fills what the guides recommend.
    nlohmann::json lines = nlohmann::json::array();
    std::set<std::string> written;
    auto line = [&](const std::string& k, const std::string& v, const std::string& why) {
      if (written.count(k)) return;
      written.insert(k);
      lines.push_back({{"key", k}, {"value", v}, {"why", why}});
    };
    for (const auto& [k, v] : sw.nccl_env) {
      if (k == "NCCL_TOPO_FILE") continue;  // below, only when the file is rendered
      if (model::IsNcclInterfaceList(k) && model::NcclEnvAsWritten(k, v) != v) {
        line(k, model::NcclEnvAsWritten(k, v),
             k == "NCCL_IB_HCA" ? "inventory software.nccl.env, made an exact match: NCCL otherwise takes each name as a "
                                  "prefix, and mlx5_1 also selects mlx5_10"
                                : "inventory software.nccl.env, made an exact match: NCCL otherwise takes each name as a "
                                  "prefix, and eth1 also selects eth10");
        continue;
      }
      line(k, v, "inventory software.nccl.env");
    }
    std::vector<model::RocePort> roce_ports = model::RocePorts(c, *n);
    if (!rdma.empty()) {
      std::string hca;
      for (const model::NicSpec* nic : rdma) hca += fmt::format("{}{}:{}", hca.empty() ? "=" : ",", nic->name, nic->port);
      line("NCCL_IB_HCA", hca, "the node's compute RDMA NICs, matched exactly (a bare mlx5_1 would also select mlx5_10)");
      for (const model::RdmaNcclDefault& d : model::kRdmaNcclDefaults) {
        line(std::string(d.var), std::string(d.value), std::string(d.why));
      }
      // RoCE: the traffic class and GID index follow the ports' network settings when every
      // port agrees. No GID index otherwise: NCCL (2.21 and later, net_ib.cc ncclIbGetGidIndex)
      // picks the RoCE v2 GID of the port's IPv4 address itself, and a fixed index such as the
      // guide's 3 exists only once the netdev has an IPv4 address and moves when IPv6 ones come.
      std::set<int> dscps, gids;
      bool unpinned = false;
      for (const model::RocePort& rp : roce_ports) {
        dscps.insert(rp.settings.dscp);
        if (rp.settings.gid_index) gids.insert(*rp.settings.gid_index);
        unpinned = unpinned || !rp.settings.gid_index;
      }
      if (roce && dscps.size() == 1) {
        int dscp = *dscps.begin();
        line("NCCL_IB_TC", std::to_string(model::TrafficClassOf(dscp)),
             fmt::format("RoCE traffic class: DSCP {} shifted left by 2 (the IP TOS byte; NCCL docs, NCCL_IB_TC), so "
                         "the switches classify it to the PFC priority (/etc/gpuforge/roce-notes.txt)",
                         dscp));
      } else if (roce && dscps.size() > 1) {
        plan->skipped.push_back({n->name, "/etc/nccl.conf",
                                 "NCCL_IB_TC not set: this node's RoCE ports are on networks with different DSCPs, and "
                                 "NCCL takes one traffic class for all of them"});
      }
      if (roce && gids.size() == 1 && !unpinned) {
        line("NCCL_IB_GID_INDEX", std::to_string(*gids.begin()), "networks.NAME.roce.gid_index pins it");
      }
      if (c.ProfileOf(*n).virtual_machine) {
        line("NCCL_IB_PCI_RELAXED_ORDERING", "1",
             "a VM (profile virtual): NCCL docs say relaxed ordering greatly helps IB verbs in virtualized "
             "environments; 1 makes NCCL fail when it is unavailable instead of silently going without (default 2)");
      }
    }
    if (std::string ifname = SocketIfname(c, p); !ifname.empty()) {
      line("NCCL_SOCKET_IFNAME", "=" + ifname, "bootstrap over the control/storage network interface");
    }
    if (topo) line("NCCL_TOPO_FILE", topo_path, "rendered beside this file from the node's measured PCI tree");
    std::string algo = gpus >= 128 ? "Tree" : "Ring";
    for (auto& l : lines) l["why"] = NcclComment(l["why"].get<std::string>());
    // NCCL_CONF_FILE arrived in 2.23 (NCCL env docs: "or in ${NCCL_CONF_FILE} (since 2.23)");
    // before it NCCL reads ~/.nccl.conf and then this file (src/misc/param.cc initEnv).
    std::optional<std::pair<int, int>> version = MajorMinor(sw.nccl_version);
    bool conf_file = version && *version >= std::pair{2, 23};
    nlohmann::json ctx = {{"lines", lines},
                          {"conf_file", conf_file},
                          {"version_known", version.has_value()},
                          {"version", sw.nccl_version},
                          {"algo_hint", !env_set.count("NCCL_ALGO")},
                          {"algo", algo},
                          {"gpus", std::to_string(gpus)}};
    plan->jobs.push_back({n->name, "/etc/nccl.conf", "nccl.conf.mustache", ctx, CommentStyle::kHash, "0644"});
  }
}

}  // namespace gpuforge::render
