#include "probe/rdma/write.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "probe/rdma/write_internal.h"

namespace gpuforge::probe::internal {

namespace rdma_write {

bool PlainName(std::string_view s) {
  if (s.empty() || s.size() > 64) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-';
  });
}

namespace {

constexpr Spec kBwSpec = {"rdma.write_bw",
                          "RDMA write bandwidth to a peer node, as perftest's ib_write_bw", Kind::kBw};
constexpr Spec kLatSpec = {"rdma.write_lat",
                           "RDMA write ping-pong latency to a peer node, as perftest's ib_write_lat",
                           Kind::kLat};

const ParamSpec kRole{"role", ParamKind::kText, "auto", 0, 0,
                      "server (receives the writes; participant 0), client (participant 1), or auto: by the "
                      "participant order"};
const ParamSpec kDevice{"device", ParamKind::kText, "first", 0, 0,
                        "RDMA device (mlx5_0), or first: the first one ibverbs lists"};
const ParamSpec kIbPort{"ib_port", ParamKind::kWhole, "1", 1, 255, "port of the device"};
const ParamSpec kGidIndex{"gid_index", ParamKind::kWhole, "-1", -1, 255,
                          "GID table index for the address (needed on RoCE); -1: LID (InfiniBand)"};
const ParamSpec kTxDepth{"tx_depth", ParamKind::kWhole, "128", 1, 16384, "writes outstanding at most"};
const ParamSpec kGpu{"gpu", ParamKind::kWhole, "-1", -1, 1023,
                     "GPU whose memory is the buffer (GPUDirect RDMA); -1: host memory"};

// The rows whose default and range differ between bandwidth and latency. Sizes: perftest
// accepts any byte count, so kBytes, not the GPU probes' multiple of 4.
struct Rows {
  ParamSpec size;
  ParamSpec iters;
};

const Rows& RowsOf(Kind kind) {
  static const Rows bw{{"size", ParamKind::kBytes, "8MiB", 1, std::int64_t{1} << 31, "bytes per RDMA write, with a unit"},
                        {"iters", ParamKind::kWhole, "5000", 1, 100'000'000, "RDMA writes posted"}};
  static const Rows lat{{"size", ParamKind::kBytes, "2B", 1, std::int64_t{8} << 20, "bytes per RDMA write, with a unit"},
                         {"iters", ParamKind::kWhole, "1000", 2, 10'000'000, "round trips"}};
  return kind == Kind::kBw ? bw : lat;
}

gpuforge::Result<Settings> ReadSettings(const Context& ctx, Kind kind) {
  Settings s;
  gpuforge::Result<std::string> role = ctx.Text("role");
  if (!role.ok()) return role.error();
  if (*role != "server" && *role != "client" && *role != "auto") {
    return Error{fmt::format("parameter role must be server, client or auto, not '{}'", *role)};
  }
  s.role = *role;
  gpuforge::Result<std::string> device = ctx.Text("device");
  if (!device.ok()) return device.error();
  if (*device != "first" && !PlainName(*device)) {
    return Error{fmt::format(
        "parameter device must be 'first' or an RDMA device name ([A-Za-z0-9_-], at most 64 "
        "characters), not '{}'",
        *device)};
  }
  s.device = *device == "first" ? "" : *device;
  auto whole = [&](const ParamSpec& row, auto* out) -> Status {
    gpuforge::Result<std::int64_t> v = Whole(ctx, row);
    if (!v.ok()) return v.error();
    *out = static_cast<std::remove_reference_t<decltype(*out)>>(*v);
    return {};
  };
  const Rows& rows = RowsOf(kind);
  if (Status st = whole(kIbPort, &s.port); !st.ok()) return st.error();
  if (Status st = whole(kGidIndex, &s.gid_index); !st.ok()) return st.error();
  if (Status st = whole(rows.iters, &s.iters); !st.ok()) return st.error();
  gpuforge::Result<std::uint64_t> size = Bytes(ctx, rows.size);
  if (!size.ok()) return size.error();
  s.size = *size;
  if (kind == Kind::kBw) {
    if (Status st = whole(kTxDepth, &s.tx_depth); !st.ok()) return st.error();
    if (Status st = whole(kGpu, &s.gpu); !st.ok()) return st.error();
  }
  return s;
}

class RdmaWriteProbe : public Probe {
 public:
  RdmaWriteProbe(const Spec& spec, VerbsLoader verbs, CudaLoader cuda, RdmaTestHooks hooks)
      : spec_(spec), verbs_(std::move(verbs)), cuda_(std::move(cuda)), hooks_(std::move(hooks)) {
    if (!hooks_.clock) {
      hooks_.clock = [] {
        return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
            .count();
      };
    }
  }

  std::string key() const override { return spec_.key; }
  std::string description() const override { return spec_.description; }
  std::vector<Param> params() const override {
    const Rows& rows = RowsOf(spec_.kind);
    std::vector<Param> p = {kRole, kDevice, kIbPort, kGidIndex, rows.size, rows.iters};
    if (spec_.kind == Kind::kBw) {
      p.push_back(kTxDepth);
      p.push_back(kGpu);
    }
    return p;
  }

  ProbeResult Run(const Context& ctx) override;

 private:
  const Spec& spec_;
  VerbsLoader verbs_;
  CudaLoader cuda_;
  RdmaTestHooks hooks_;
};

ProbeResult RdmaWriteProbe::Run(const Context& ctx) {
  gpuforge::Result<Settings> s = ReadSettings(ctx, spec_.kind);
  if (!s.ok()) return Fail(spec_.key, "probe.bad_param", s.error().message);
  VerbsLoad load = verbs_();
  if (!load.api) return Skip(spec_.key, load.code, load.reason);
#if GPUFORGE_HAVE_IBVERBS
  Session session(spec_, *load.api, cuda_, hooks_, *s, ctx);
  return session.Run();
#else
  return Skip(spec_.key, "rdma.no_ibverbs_headers", "this build has no RDMA support");
#endif
}

}  // namespace

}  // namespace rdma_write

std::unique_ptr<Probe> MakeRdmaWriteBwProbe(VerbsLoader verbs, CudaLoader cuda, RdmaTestHooks hooks) {
  return std::make_unique<rdma_write::RdmaWriteProbe>(rdma_write::kBwSpec, std::move(verbs), std::move(cuda), std::move(hooks));
}
std::unique_ptr<Probe> MakeRdmaWriteLatProbe(VerbsLoader verbs, RdmaTestHooks hooks) {
  return std::make_unique<rdma_write::RdmaWriteProbe>(rdma_write::kLatSpec, std::move(verbs), CudaLoader{}, std::move(hooks));
}
std::unique_ptr<Probe> MakeRdmaWriteBwProbe() {
  return MakeRdmaWriteBwProbe(LoadVerbs, LoadCudaDriver);
}
std::unique_ptr<Probe> MakeRdmaWriteLatProbe() { return MakeRdmaWriteLatProbe(LoadVerbs); }

}  // namespace gpuforge::probe::internal
