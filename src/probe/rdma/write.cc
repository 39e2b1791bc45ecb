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

#include "gpuforge/base/quantity.h"
#include "probe/gpu/params.h"
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
  auto whole = [&](const char* name, std::int64_t lo, std::int64_t hi, auto* out) -> Status {
    gpuforge::Result<std::int64_t> v = IntParam(ctx, name, lo, hi);
    if (!v.ok()) return v.error();
    *out = static_cast<std::remove_reference_t<decltype(*out)>>(*v);
    return {};
  };
  if (Status st = whole("ib_port", 1, 255, &s.port); !st.ok()) return st.error();
  if (Status st = whole("gid_index", -1, 255, &s.gid_index); !st.ok()) return st.error();
  const bool bw = kind == Kind::kBw;
  if (Status st = whole("iters", bw ? 1 : 2, bw ? 100'000'000 : 10'000'000, &s.iters); !st.ok()) {
    return st.error();
  }
  // Sizes: perftest accepts any byte count, so not SizeParam's multiple-of-4 rule.
  gpuforge::Result<std::string> text = ctx.Text("size");
  if (!text.ok()) return text.error();
  gpuforge::Result<double> bytes = quantity::Parse(*text, quantity::Dimension::kSize);
  if (!bytes.ok()) return Error{fmt::format("parameter size: {}", bytes.error().message)};
  const double max_size = bw ? double(std::uint64_t{1} << 31) : double(std::uint64_t{8} << 20);
  if (*bytes != std::floor(*bytes) || *bytes < 1 || *bytes > max_size) {
    return Error{fmt::format("parameter size must be a whole number of bytes from 1 to {}, not '{}'",
                             max_size, *text)};
  }
  s.size = static_cast<std::uint64_t>(*bytes);
  if (bw) {
    if (Status st = whole("tx_depth", 1, 16384, &s.tx_depth); !st.ok()) return st.error();
    if (Status st = whole("gpu", -1, 1023, &s.gpu); !st.ok()) return st.error();
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
    std::vector<Param> p = {
        {"role", "auto",
         "server (receives the writes; participant 0), client (participant 1), or auto: by the "
         "participant order"},
        {"device", "first", "RDMA device (mlx5_0), or first: the first one ibverbs lists"},
        {"ib_port", "1", "port of the device"},
        {"gid_index", "-1", "GID table index for the address (needed on RoCE); -1: LID (InfiniBand)"},
    };
    if (spec_.kind == Kind::kBw) {
      p.push_back({"size", "8MiB", "bytes per RDMA write, with a unit"});
      p.push_back({"iters", "5000", "RDMA writes posted"});
      p.push_back({"tx_depth", "128", "writes outstanding at most"});
      p.push_back({"gpu", "-1", "GPU whose memory is the buffer (GPUDirect RDMA); -1: host memory"});
    } else {
      p.push_back({"size", "2B", "bytes per RDMA write, with a unit"});
      p.push_back({"iters", "1000", "round trips"});
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
