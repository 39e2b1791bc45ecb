#pragma once

// The NCCL settings gpuforge writes into a GPU node's nccl.conf when the node has compute
// RDMA NICs and the inventory's software.nccl.env leaves them unset: one list, so that render
// writes them (render/nccl.cc) and lint judges what a node will run with, not only what the
// inventory spells out (issue #28 item 9: lint said NCCL_IB_TIMEOUT was unset while render
// set it to 22).

#include <array>
#include <optional>
#include <string>
#include <string_view>

namespace gpuforge::model {

struct RdmaNcclDefault {
  std::string_view var;
  std::string_view value;
  std::string_view why;  // the comment rendered beside it
};

inline constexpr std::array kRdmaNcclDefaults = {
    RdmaNcclDefault{"NCCL_IB_TIMEOUT", "22", "guide 004 launch script (NCCL's default is 20)"},
    RdmaNcclDefault{"NCCL_IB_RETRY_CNT", "7", "guide 004 launch script"},
};

// What gpuforge renders for `var` on an RDMA node where the inventory leaves it unset.
constexpr std::optional<std::string_view> RdmaNcclDefaultOf(std::string_view var) {
  for (const auto& d : kRdmaNcclDefaults) {
    if (d.var == var) return d.value;
  }
  return std::nullopt;
}

// NCCL_IB_HCA and NCCL_SOCKET_IFNAME are lists NCCL matches by prefix unless the value starts
// with '=' (after a '^'): NCCL v2.30.7-1 src/transport/net_ib/init.cc and src/os/linux.cc:385-389
// read both the same way, so mlx5_1 also selects mlx5_10 and eth1 eth10. gpuforge writes both as
// exact matches; every other variable as written. What render puts in nccl.conf and the job
// files, and what plan shows (#28 items 12 and 26).
inline bool IsNcclInterfaceList(std::string_view key) {
  return key == "NCCL_IB_HCA" || key == "NCCL_SOCKET_IFNAME";
}
inline std::string NcclEnvAsWritten(std::string_view key, std::string_view value) {
  if (!IsNcclInterfaceList(key)) return std::string(value);
  std::string out;
  if (value.starts_with('^')) {
    out = "^";
    value.remove_prefix(1);
  }
  if (value.empty() || value.starts_with('=')) return out + std::string(value);
  return out + "=" + std::string(value);
}

}  // namespace gpuforge::model
