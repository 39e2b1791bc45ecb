// NCCL: /etc/nccl.conf and the NCCL topology file, per GPU node.

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "gpuforge/model/gpu_catalog.h"
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

}  // namespace

void AddNcclJobs(const model::Cluster& c, const Options& o, Plan* plan, const MeasuredPci* measured) {
  const model::Software& sw = c.software;
  std::map<std::string, std::string> env_set;
  for (const auto& [k, v] : sw.nccl_env) env_set[k] = v;
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
      line(k, v, "inventory software.nccl.env");
    }
    if (!rdma.empty()) {
      std::string hca;
      for (const model::NicSpec* nic : rdma) hca += fmt::format("{}{}:{}", hca.empty() ? "=" : ",", nic->name, nic->port);
      line("NCCL_IB_HCA", hca, "the node's compute RDMA NICs; '=' makes NCCL match names exactly (mlx5_1 would also match mlx5_10)");
      line("NCCL_IB_TIMEOUT", "22", "guide 004 launch script (NCCL's default is 20)");
      line("NCCL_IB_RETRY_CNT", "7", "guide 004 launch script");
      if (roce) line("NCCL_IB_GID_INDEX", "3", "guide 004 launch script: RoCE v2 GID index");
    }
    if (std::string ifname = SocketIfname(c, p); !ifname.empty()) {
      line("NCCL_SOCKET_IFNAME", "=" + ifname, "bootstrap over the control/storage network interface");
    }
    if (topo) line("NCCL_TOPO_FILE", topo_path, "rendered beside this file from the node's measured PCI tree");
    int gpus = c.TotalGpus();
    std::string algo = gpus >= 128 ? "Tree" : "Ring";
    nlohmann::json ctx = {{"lines", lines},
                          {"algo_hint", !env_set.count("NCCL_ALGO")},
                          {"algo", algo},
                          {"gpus", std::to_string(gpus)}};
    plan->jobs.push_back({n->name, "/etc/nccl.conf", "nccl.conf.mustache", ctx, CommentStyle::kHash, "0644"});
  }
}

}  // namespace gpuforge::render
