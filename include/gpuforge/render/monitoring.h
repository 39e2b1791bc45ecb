#pragma once

// What the monitoring files (src/render/monitoring.cc) are written for: the dcgm-exporter
// release whose counters file, field names and job mapping they follow, and where the Slurm
// prolog leaves the GPU-to-job mapping the exporter reads.

#include <string_view>

namespace gpuforge::render {

// dcgm-exporter release tag (DCGM 4.5.3, exporter 4.8.2). The counters file holds only field
// names every release from 4.4.2-4.7.0 to this one accepts (tests/data/dcgm-exporter/).
inline constexpr std::string_view kDcgmExporterVersion = "4.5.3-4.8.2";
inline constexpr std::string_view kDcgmExporterImage = "nvcr.io/nvidia/k8s/dcgm-exporter:4.5.3-4.8.2-ubuntu22.04";

// The exporter's --hpc-job-mapping-dir (DCGM_HPC_JOB_MAPPING_DIR): one file per GPU index,
// holding the ids of the jobs that hold it, one per line. Under /run, so a reboot, which ends
// every job, empties it.
inline constexpr std::string_view kDcgmJobMapDir = "/run/gpuforge/dcgm-job-map";

// The exporter as a host service where model::HostDcgmExporter says so: the CUDA repository's
// package (its version is the exporter's, 4.8.2, paired with DCGM 4.5.3), whose unit runs
// /usr/bin/dcgm-exporter with the package's own counters (dcgm-exporter
// packaging/config-files/systemd/nvidia-dcgm-exporter.service), and gpuforge's drop-in for it.
inline constexpr std::string_view kDcgmExporterPackage = "datacenter-gpu-manager-exporter";
inline constexpr std::string_view kDcgmExporterPackageVersion = "4.8.2";
inline constexpr std::string_view kDcgmExporterService = "nvidia-dcgm-exporter";
inline constexpr std::string_view kDcgmExporterDropIn = "/etc/systemd/system/nvidia-dcgm-exporter.service.d/gpuforge.conf";
// nv-hostengine's address under nvidia-dcgm.service (its default port, 5555, on loopback).
inline constexpr std::string_view kDcgmHostEngine = "localhost:5555";

inline constexpr std::string_view kDcgmCountersPath = "/etc/dcgm-exporter/gpuforge-counters.csv";
inline constexpr std::string_view kDcgmJobMapProlog = "/etc/slurm/prolog.d/gpuforge-dcgm-job-map.sh";
inline constexpr std::string_view kDcgmJobMapEpilog = "/etc/slurm/epilog.d/gpuforge-dcgm-job-map.sh";

}  // namespace gpuforge::render
