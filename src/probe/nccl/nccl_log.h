#pragma once

// NCCL's log during a probe run: where NCCL writes it (NcclLogCapture), the NCCL_* settings that
// point it there, and what a run's log says (ParseNcclLog).

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace gpuforge::probe::internal {

// Where NCCL writes its log during one run and how the lines come back. NCCL reads its
// environment once per process, at its first initialisation, so Start() must come before the
// first NCCL call.
class NcclLogCapture {
 public:
  virtual ~NcclLogCapture() = default;
  // Points NCCL_DEBUG_FILE at a private file and sets NCCL_DEBUG to `level` and
  // NCCL_DEBUG_SUBSYS, each unless the environment already has it (see NcclLogSettings).
  virtual void Start(const std::string& level) = 0;
  // The lines NCCL wrote since Start().
  virtual std::vector<std::string> Finish() = 0;
};
using NcclLogFactory = std::function<std::unique_ptr<NcclLogCapture>()>;

// The real capture: one mkstemp file in $TMPDIR (or /tmp) per process, since NCCL opens
// NCCL_DEBUG_FILE once; each run reads what was appended during it. The file is unlinked once
// NCCL has it open (and at exit otherwise). A NCCL_DEBUG_FILE already in the environment is
// respected and not read.
std::unique_ptr<NcclLogCapture> MakeNcclLogFile();

// The NCCL_* variables as the capture found them; nullptr when unset.
struct NcclLogEnv {
  const char* debug = nullptr;   // NCCL_DEBUG
  const char* subsys = nullptr;  // NCCL_DEBUG_SUBSYS
  const char* file = nullptr;    // NCCL_DEBUG_FILE
};
// What Start() sets, in order: NCCL_DEBUG_FILE=`own_file` (the capture's file, "" when it has
// none) unless the user chose a file, then NCCL_DEBUG=`level` and NCCL_DEBUG_SUBSYS, each
// unless set. Nothing at all when NCCL's log would have no file: NCCL would then write it to
// stdout, the agent's result channel.
std::vector<std::pair<std::string, std::string>> NcclLogSettings(const std::string& level,
                                                                 const NcclLogEnv& env,
                                                                 const std::string& own_file);

// What a run's NCCL log says.
struct NcclLogSummary {
  std::vector<std::string> kept;  // the lines worth keeping (network, warnings, version, init)
  std::string network;            // "Socket", "IB" (from "Using network X"); "" when absent
  std::string version;            // "2.28.9+cuda13.0" (from "NCCL version X"); "" when absent
  bool ib_no_device = false;      // "NET/IB : No device found" appeared
  std::string ib_no_device_line;  // that line
};
// Pure: keeps at most 100 lines, each printable and at most 300 characters.
NcclLogSummary ParseNcclLog(std::span<const std::string> lines);

}  // namespace gpuforge::probe::internal
