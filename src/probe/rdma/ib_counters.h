#pragma once

// ib.counters: the state and error counters of every InfiniBand/RoCE port, read from sysfs
// (/sys/class/infiniband/<dev>/ports/<n>/), the figures an operator checks first when a link
// flaps or a job's bandwidth drops.
//
// Per entity "DEV:PORT": one measurement per error counter (unit "count": link_downed,
// link_error_recovery, symbol_error, port_rcv_errors, port_xmit_discards,
// excessive_buffer_overrun_errors, local_link_integrity_errors) and "rate" (unit "Gb/s") with
// info state ("ACTIVE"), phys_state ("LinkUp"), link_layer ("InfiniBand") and width ("4X").
// A counter file that is absent is left out and named in the "rate" measurement's info
// (missing_counters); one whose content does not parse is an ERROR naming the file. The
// counters are as the kernel shows them since the last reset: judging needs two readings or a
// zero baseline, which is validate's business.
//
// Param `devices`: "all" (default) or a comma list (mlx5_0,mlx5_1); a listed device that is
// absent is an ERROR "no_such_device" naming it. SKIP "no_ib_devices" when the sysfs class
// directory is absent or empty. Tested against fake sysfs trees only (tests/probe/ib_counters_test.cc).

#include <memory>
#include <string>

#include "gpuforge/probe/probe.h"

namespace gpuforge::probe::internal {

std::unique_ptr<Probe> MakeIbCountersProbe();
// Reads `sysfs_root` in place of /sys/class/infiniband (for tests).
std::unique_ptr<Probe> MakeIbCountersProbe(std::string sysfs_root);

}  // namespace gpuforge::probe::internal
