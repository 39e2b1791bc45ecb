#pragma once

// Probes: the measurements `gpuforge agent` takes on a node and `gpuforge validate` judges.
// A probe has a stable key ("storage.read", "gpu.copy"), a description, parameters with
// defaults, and returns its result per entity (the node, a GPU, an HCA, a path, a peer) with
// the measured value, its unit and the raw samples. A probe that cannot run here says SKIP
// with the reason; it never pretends. Judging against thresholds is validate's job, not the
// probe's.
//
// The agent prints one JSON line per result (ToJsonLine); the controller parses them strictly
// (ParseJsonLine), since a node's output is hostile until checked.

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "gpuforge/base/result.h"
#include "gpuforge/base/schemas.h"
#include "gpuforge/probe/params.h"

namespace gpuforge::probe {

inline constexpr std::string_view kSchema = schemas::kProbe;

// One measured quantity for one entity.
struct Measurement {
  std::string entity;  // "node", "gpu0", "mlx5_0", "/mnt/data", "peer 198.18.0.3"
  std::string metric;  // "read_bandwidth", "busbw", "p99_latency"
  double value = 0;    // the figure judged (a median, a rate, a count)
  std::string unit;    // "GB/s" (10^9 bytes), "Gb/s" (10^9 bits), "s", "ops/s", "count", "B", "C", "W"
  std::vector<double> samples;  // the raw figures value came from, in order taken
  std::map<std::string, std::string> info;  // context: "size": "8589934592", "model": "H200"
  bool operator==(const Measurement&) const = default;
};

enum class Outcome {
  kOk,     // measured; the measurements say what
  kSkip,   // cannot run here (no GPU, no library, no device, not applicable); reason says why
  kError,  // tried and failed (an API error, a timeout, wrong data); reason says what
};
const char* ToString(Outcome o);

struct ProbeResult {
  std::string probe;  // key
  Outcome outcome = Outcome::kOk;
  std::string code;    // stable reason code for kSkip/kError: "gpu.no_cuda_driver", "storage.short_read" (src/validate/codes.cc)
  std::string reason;  // for people: what happened, naming the library, device or call
  std::vector<Measurement> measurements;
  std::map<std::string, std::string> params;  // the parameters it ran with, defaults filled in
  double seconds = 0;                         // wall time of the probe
  std::vector<std::string> log;               // captured lines worth keeping (NCCL's own log)
  bool operator==(const ProbeResult&) const = default;
};

// A parameter's row (params.h); the agent's listing has always called it Param.
using Param = ParamSpec;

// Probes that span nodes (NCCL across nodes, RDMA between two) trade a little data with their
// peers through the controller, never directly: each participant hands in its own part; the
// call returns once every participant has, with all parts in participant order (the part at
// the caller's own index is its own). A probe may hold several rounds; one with an empty part
// works as a barrier. A part is at most kExchangePartMax characters of [A-Za-z0-9_.,:=+/-].
// On the wire (agent stdout -> controller -> agent stdin), one JSON line each way:
//   {"schema":"gpuforge.exchange/v1","offer":"PART"}
//   {"schema":"gpuforge.exchange/v1","parts":["PART0","PART1",...]}
inline constexpr std::string_view kExchangeSchema = schemas::kExchange;
inline constexpr std::size_t kExchangePartMax = 4096;
using Exchange = std::function<gpuforge::Result<std::vector<std::string>>(const std::string& mine)>;

// Whether a part is safe to send (the alphabet and the size above).
bool ValidExchangePart(std::string_view part);
// Whether a line of agent output is an exchange offer rather than a result.
bool IsExchangeLine(std::string_view line);
std::string ExchangeOfferLine(std::string_view part);  // no newline
// Strict; errors name `source`.
gpuforge::Result<std::string> ParseExchangeOffer(std::string_view source, std::string_view line);
std::string ExchangeReplyLine(const std::vector<std::string>& parts);  // no newline
gpuforge::Result<std::vector<std::string>> ParseExchangeReply(std::string_view source, std::string_view line);

// What a probe gets when it runs: its parameters (defaults filled in), a flag that turns true
// when it must stop (timeout, Ctrl-C), and the exchange when a controller drives it (empty
// when the agent runs alone: a probe that needs one then fails with code "exchange.missing").
struct Context {
  std::map<std::string, std::string> params;
  const std::atomic<bool>* cancel = nullptr;
  Exchange exchange;
  bool Cancelled() const { return cancel != nullptr && cancel->load(); }
  // Typed access; a malformed value is an error naming the parameter.
  gpuforge::Result<double> Number(const std::string& name) const;
  gpuforge::Result<std::string> Text(const std::string& name) const;
};

class Probe {
 public:
  virtual ~Probe() = default;
  virtual std::string key() const = 0;
  virtual std::string description() const = 0;
  virtual std::vector<Param> params() const = 0;
  // Runs on this machine. Never throws; SKIP and ERROR are results.
  virtual ProbeResult Run(const Context& ctx) = 0;
};

// Every probe this build has, in a stable order.
std::vector<std::unique_ptr<Probe>> AllProbes();
// nullptr when no probe has that key.
std::unique_ptr<Probe> FindProbe(std::string_view key);

// Fills defaults, refuses unknown parameter names (naming them) and values outside the safe
// alphabet ([A-Za-z0-9_.,:/=+-]).
gpuforge::Result<std::map<std::string, std::string>> ResolveParams(const Probe& p,
                                                                   const std::map<std::string, std::string>& given);

// Runs a probe with `params` as given (ResolveParams fills the defaults first: the agent calls
// it) and its wall time recorded.
ProbeResult RunProbe(Probe& p, const std::map<std::string, std::string>& params, const std::atomic<bool>* cancel,
                     Exchange exchange = {});

// Helpers for probes.
ProbeResult Skip(std::string probe, std::string code, std::string reason);
ProbeResult Fail(std::string probe, std::string code, std::string reason);
double Median(std::vector<double> v);
double Percentile(std::vector<double> v, double p);  // nearest rank, p in [0, 100]

// One JSON line, without a newline: {"schema", "probe", "outcome", "code", "reason",
// "params", "seconds", "measurements": [{"entity", "metric", "value", "unit", "samples",
// "info"}], "log"}.
std::string ToJsonLine(const ProbeResult& r);
// Strict: the schema, every field's type, keys and metrics in [A-Za-z0-9_.:/ +,=()-], finite numbers,
// bounded sizes (1 MiB per line). Errors name `source` ("node gpu01, agent run storage.read").
gpuforge::Result<ProbeResult> ParseJsonLine(std::string_view source, std::string_view line);

}  // namespace gpuforge::probe
