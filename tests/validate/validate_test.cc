// validate's pure parts: thresholds and their sources, the per-model data file, which checks
// apply where, how each probe result is judged, exit codes and the report; and the runner on
// the recording fake (agent lookup and push, retries, timeouts, hostile agent output).

#include "gpuforge/validate/validate.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "gpuforge/base/sha256.h"
#include "gpuforge/inventory/loader.h"
#include "gpuforge/report/validate_report.h"
#include "gpuforge/validate/agent.h"
#include "gpuforge/validate/runner.h"
#include "remote/fake_session.h"

namespace gpuforge::validate {
namespace {

const char* const kInventory = R"Y(version: 1
cluster: {name: vt}
profiles:
  gpu: {gpus: {model: H200, count: 8}, cpu: {sockets: 2, cores_per_socket: 32},
        nics: [{name: eth0, kind: ethernet, rate: 100Gb/s, network: storage, netdev: eth0}]}
networks:
  storage: {role: storage, kind: ethernet, rate: 100Gb/s}
storage:
  tiers:
    - {name: shared, kind: nfs, role: hot, read_bandwidth: 20GB/s, capacity: 100TB, mount: /mnt/shared, checkpoints: true, network: storage}
software:
  os: {distro: debian}
workload: {params: 70B, precision: bf16, optimizer: adam, parallelism: {data: 2, tensor: 8}}
nodes:
  - {name: n01, profile: gpu, address: 198.18.0.1}
  - {name: n02, profile: gpu, address: 198.18.0.3}
  - {name: n03, profile: gpu, address: 198.18.0.5}
)Y";

model::Cluster Load(const std::string& text) {
  inventory::LoadOutcome out = inventory::LoadString(text, "vt.yaml");
  EXPECT_TRUE(out.ok()) << out.FormatDiagnostics();
  return out.ok() ? std::move(*out.cluster) : model::Cluster{};
}

ModelTable Table() {
  Result<ModelTable> t = LoadModelTable(DefaultModelTablePath());
  EXPECT_TRUE(t.ok()) << t.error().message;
  return t.ok() ? *t : ModelTable{};
}

probe::ProbeResult Ok(std::string probe, std::string metric, double value, std::string unit) {
  probe::ProbeResult r;
  r.probe = std::move(probe);
  r.measurements.push_back({"x", std::move(metric), value, std::move(unit), {value}, {}});
  return r;
}

TEST(ValidateThresholds, DefaultsOverridesAndTheDataFile) {
  model::Cluster c = Load(kInventory);
  Result<Thresholds> t = Thresholds::For(c, Table());
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_EQ(t->Get("storage.read.min_gbs_per_gpu"), 1.0);
  EXPECT_NE(t->SourceOf("storage.read.min_gbs_per_gpu").find("guide 000"), std::string::npos);
  ASSERT_TRUE(t->ForModel("H200-141GB", "h2d_gbs").has_value());  // catalogue spelling rules apply
  EXPECT_EQ(t->ForModel("H200", "h2d_gbs")->value, 48);
  EXPECT_FALSE(t->ForModel("H200", "nonsense").has_value());
  EXPECT_FALSE(t->ForModel("MI300X", "h2d_gbs").has_value());

  std::string over = std::string(kInventory) + "validation:\n  thresholds:\n    storage.read.min_gbs_per_gpu: 2.5\n";
  Result<Thresholds> o = Thresholds::For(Load(over), Table());
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->Get("storage.read.min_gbs_per_gpu"), 2.5);
  EXPECT_EQ(o->SourceOf("storage.read.min_gbs_per_gpu"),
            "inventory validation.thresholds.storage.read.min_gbs_per_gpu (vt.yaml:20:5)");
  // #28 item 1: a quantity is read in the threshold's own unit, and one of another kind refused.
  std::string units = std::string(kInventory) +
                      "validation:\n  thresholds:\n    storage.read.min_gbs_per_gpu: 2GB/s\n    nccl.quick.max_ms: 0.02s\n"
                      "    rdma.write_lat.max_us: 4us\n";
  Result<Thresholds> u = Thresholds::For(Load(units), Table());
  ASSERT_TRUE(u.ok()) << u.error().message;
  EXPECT_DOUBLE_EQ(u->Get("storage.read.min_gbs_per_gpu"), 2.0);
  EXPECT_DOUBLE_EQ(u->Get("nccl.quick.max_ms"), 20.0);
  EXPECT_DOUBLE_EQ(u->Get("rdma.write_lat.max_us"), 4.0);
  std::string wrong = std::string(kInventory) + "validation:\n  thresholds:\n    storage.read.min_gbs_per_gpu: 2GB\n";
  Result<Thresholds> w = Thresholds::For(Load(wrong), Table());
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.error().message,
            "vt.yaml:20:5: validation.thresholds: 'storage.read.min_gbs_per_gpu': '2GB' is a size, and the threshold "
            "is a bandwidth in GB/s: write it like 400Gb/s or 50GB/s, or a plain number of GB/s");
  std::string typo = std::string(kInventory) + "validation:\n  thresholds:\n    storage.red.min_gbs_per_gpu: 2.5\n";
  Result<Thresholds> bad = Thresholds::For(Load(typo), Table());
  ASSERT_FALSE(bad.ok());
  EXPECT_TRUE(bad.error().message.starts_with("vt.yaml:20:5: validation.thresholds: 'storage.red.min_gbs_per_gpu' is "
                                              "not a validate threshold"))
      << bad.error().message;
}

TEST(ValidatePlan, ChecksApplyWhereTheInventorySays) {
  model::Cluster c = Load(kInventory);
  Result<std::vector<std::string>> all = SelectChecks({});
  ASSERT_TRUE(all.ok());
  std::vector<std::string> nodes = {"n01", "n02", "n03"};
  ValidatePlan p = PlanChecks(c, nodes, *all);
  std::vector<std::string> got;
  for (const PlannedRun& r : p.runs) got.push_back(r.check + "@" + r.node + (r.peer.empty() ? "" : ">" + r.peer));
  std::vector<std::string> want;
  for (const char* n : {"n01", "n02", "n03"}) {
    for (const char* check : {"facts", "gpu.health", "gpu.copy", "gpu.h2d", "gpu.d2h", "gpu.compute", "gpu.gemm",
                              "nccl.quick", "nccl.allreduce", "storage.read", "storage.checkpoint", "storage.metadata"}) {
      want.push_back(std::string(check) + "@" + n);
    }
  }
  for (const char* pair : {"n01>n02", "n02>n03", "n03>n01"}) want.push_back(std::string("tcp.bandwidth@") + pair);
  want.push_back("nccl.multinode@n01");  // one job over all three
  EXPECT_EQ(got, want);
  EXPECT_EQ(p.runs[9].params.at("path"), "/mnt/shared");
  EXPECT_EQ(p.runs[36].params.at("peer"), "198.18.0.3");
  EXPECT_EQ(p.runs[36].peer_params, (std::map<std::string, std::string>{{"port", "0"}, {"role", "server"}}));
  EXPECT_EQ(p.runs.back().group, nodes);
  // Without InfiniBand or RoCE NICs the HCA checks do not apply: left out, with why.
  EXPECT_TRUE(p.not_applicable.empty());
  std::vector<std::string> why;
  for (const Verdict& v : p.left_out) {
    why.push_back(v.check + ":" + v.code);
    EXPECT_TRUE(v.left_out);
  }
  EXPECT_EQ(why, (std::vector<std::string>{"ib.counters:rdma.no_nic", "ib.counters:rdma.no_nic", "ib.counters:rdma.no_nic",
                                           "rdma.write_bw:rdma.no_pair", "rdma.write_lat:rdma.no_pair"}));

  Result<std::vector<std::string>> storage = SelectChecks(std::vector<std::string>{"storage"});
  ASSERT_TRUE(storage.ok());
  EXPECT_EQ(*storage, (std::vector<std::string>{"storage.read", "storage.checkpoint", "storage.metadata"}));
  EXPECT_EQ(SelectChecks(std::vector<std::string>{"stor"}).error().message.substr(0, 30), "--checks: 'stor' names no chec");
  // Without storage mounts, the storage checks say why they do not apply.
  std::string bare = kInventory;
  bare.replace(bare.find(", mount: /mnt/shared"), 20, "");
  ValidatePlan q = PlanChecks(Load(bare), std::vector<std::string>{"n01"}, *storage);
  EXPECT_TRUE(q.runs.empty());
  ASSERT_EQ(q.left_out.size(), 3u);
  EXPECT_EQ(q.left_out[0].state, State::kSkip);
  EXPECT_EQ(q.left_out[0].code, "storage.no_mount");
}

// Issue #15 item 20: on a cluster with login and controller nodes, the GPU, NCCL, HCA and
// storage checks that cannot apply there are left out (counted, not listed); a check that
// should run but cannot (AMD GPUs, no NVML/CUDA probes for them) stays a listed SKIP.
const char* const kRoles = R"Y(version: 1
cluster: {name: roles}
profiles:
  gpu: {gpus: {model: H200, count: 8}, cpu: {sockets: 2, cores_per_socket: 32},
        nics: [{name: eth0, kind: ethernet, rate: 100Gb/s, network: storage, netdev: eth0}]}
  amd: {gpus: {model: MI300X, count: 8}, cpu: {sockets: 2, cores_per_socket: 32},
        nics: [{name: eth0, kind: ethernet, rate: 100Gb/s, network: storage, netdev: eth0}]}
  cpu: {cpu: {sockets: 1, cores_per_socket: 16},
        nics: [{name: eth0, kind: ethernet, rate: 100Gb/s, network: storage, netdev: eth0}]}
networks:
  storage: {role: storage, kind: ethernet, rate: 100Gb/s}
storage:
  tiers:
    - {name: shared, kind: nfs, role: hot, read_bandwidth: 20GB/s, capacity: 100TB, mount: /mnt/shared, checkpoints: true, network: storage}
software:
  os: {distro: debian}
nodes:
  - {name: gpu01, profile: gpu, address: 198.18.0.1}
  - {name: amd01, profile: amd, address: 198.18.0.3}
  - {name: login, profile: cpu, role: login, address: 198.18.0.5}
  - {name: ctl, profile: cpu, role: controller, address: 198.18.0.7}
)Y";

TEST(ValidatePlan, WhatCannotApplyIsLeftOutAndCounted) {
  model::Cluster c = Load(kRoles);
  const std::vector<std::string> nodes = {"gpu01", "amd01", "login", "ctl"};
  ValidatePlan p = PlanChecks(c, nodes, *SelectChecks({}));
  std::map<std::string, int> left;  // code@node -> entries
  for (const Verdict& v : p.left_out) {
    EXPECT_TRUE(v.left_out);
    EXPECT_EQ(v.state, State::kSkip);
    ++left[v.code + "@" + v.node];
  }
  EXPECT_EQ(left, (std::map<std::string, int>{{"node.no_gpu@login", 8},       // 6 gpu.* + nccl.quick, nccl.allreduce
                                              {"node.no_gpu@ctl", 8},
                                              {"node.not_compute@login", 3},  // storage.read, .checkpoint, .metadata
                                              {"node.not_compute@ctl", 3},
                                              {"rdma.no_nic@gpu01", 1},
                                              {"rdma.no_nic@amd01", 1},
                                              {"rdma.no_nic@login", 1},
                                              {"rdma.no_nic@ctl", 1},
                                              {"rdma.no_pair@gpu01", 2},      // rdma.write_bw, rdma.write_lat
                                              {"nccl.single_node@gpu01", 1}}));  // amd01 is no NCCL member
  // AMD GPUs should be measured, and gpuforge cannot: listed SKIPs saying why.
  ASSERT_EQ(p.not_applicable.size(), 8u);
  for (const Verdict& v : p.not_applicable) {
    EXPECT_EQ(v.node, "amd01");
    EXPECT_EQ(v.code, "gpu.no_nvidia");
    EXPECT_FALSE(v.left_out);
    EXPECT_NE(v.detail.find("MI300X"), std::string::npos) << v.detail;
  }
  // Storage runs on the GPU nodes only; facts and TCP everywhere.
  std::vector<std::string> storage;
  for (const PlannedRun& r : p.runs) {
    if (r.check.starts_with("storage.")) storage.push_back(r.check + "@" + r.node);
  }
  EXPECT_EQ(storage, (std::vector<std::string>{"storage.read@gpu01", "storage.checkpoint@gpu01", "storage.metadata@gpu01",
                                               "storage.read@amd01", "storage.checkpoint@amd01",
                                               "storage.metadata@amd01"}));

  // The report lists what ran and could not run; what was left out is one line per reason.
  std::vector<Verdict> v;
  Verdict ok;
  ok.check = "facts";
  ok.node = "gpu01";
  ok.entity = "node";
  ok.state = State::kPass;
  v.push_back(ok);
  v.insert(v.end(), p.not_applicable.begin(), p.not_applicable.end());
  v.insert(v.end(), p.left_out.begin(), p.left_out.end());
  const std::string text = report::ValidateText(v, report::Style{}, false);
  EXPECT_NE(text.find("\nLeft out: 29 checks that do not apply to these nodes (not run, not counted):\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("ctl,login         16 x  the node's profile has no GPU: gpu.health, gpu.copy, gpu.h2d, gpu.d2h, "
                      "gpu.compute, gpu.gemm, nccl.quick, nccl.allreduce [node.no_gpu]\n"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("SKIP  ib.counters"), std::string::npos) << text;
  EXPECT_NE(text.find("amd01            SKIP  gpu.health"), std::string::npos) << text;
  EXPECT_NE(text.find("Verdict: PASS (1 passed, 0 warned, 0 failed, 8 skipped, 0 errors; 29 left out)"),
            std::string::npos)
      << text;
  nlohmann::ordered_json j = report::ValidateJson("roles", v, false);
  EXPECT_EQ(j["results"].size(), 9u);  // the PASS and the 8 SKIPs
  EXPECT_EQ(j["left_out"]["count"], 29);
  ASSERT_EQ(j["left_out"]["reasons"].size(), 6u);
  EXPECT_EQ(j["left_out"]["reasons"][0]["code"], "rdma.no_nic");
  EXPECT_EQ(j["left_out"]["reasons"][0]["nodes"].get<std::vector<std::string>>(),
            (std::vector<std::string>{"gpu01", "amd01", "login", "ctl"}));
  EXPECT_EQ(j["left_out"]["reasons"][1]["code"], "node.no_gpu");
  EXPECT_EQ(j["left_out"]["reasons"][1]["count"], 16);
  // Left out counts for nothing in exit codes; a run of nothing else measured nothing.
  EXPECT_EQ(ExitCode(p.left_out, false), 0);
  EXPECT_EQ(ExitCode(p.left_out, true), 1);
  std::vector<Verdict> with_pass = p.left_out;
  with_pass.push_back(ok);
  EXPECT_EQ(ExitCode(with_pass, true), 0);
}

// #15 item 7: gpu.compute (an FMA kernel) is held to the GPU's own FMA peak, not to a PyTorch
// matmul figure: at 56% of its peak an H200 used to pass against 0.75 x 50 TFLOP/s.
TEST(ValidateJudge, GpuComputeIsHeldToTheGpusOwnFmaPeak) {
  model::Cluster c = Load(kInventory);
  Thresholds t = *Thresholds::For(c, Table());
  ValidatePlan p = PlanChecks(c, std::vector<std::string>{"n01"}, *SelectChecks(std::vector<std::string>{"gpu.compute"}));
  ASSERT_FALSE(p.runs.empty());
  const PlannedRun& run = p.runs.at(0);
  ASSERT_EQ(run.check, "gpu.compute");
  auto result = [](double tflops, std::optional<double> peak) {
    probe::ProbeResult r;
    r.probe = "gpu.compute";
    r.measurements.push_back({"gpu0", "fp32_tflops", tflops, "TFLOP/s", {tflops}, {}});
    if (peak) {
      r.measurements.push_back({"gpu0", "fp32_peak_fraction", tflops / *peak, "of peak", {tflops / *peak},
                                {{"peak_basis", "132 SMs x 128 fp32 lanes x 2 x 1980 MHz"}}});
    }
    return r;
  };
  const double h200_peak = 132 * 128 * 2 * 1.980 / 1000;  // 66.9 TFLOP/s
  std::vector<Verdict> good = Judge(c, t, run, result(60, h200_peak));
  ASSERT_EQ(good.size(), 1u);
  EXPECT_EQ(good[0].state, State::kPass) << good[0].threshold;
  EXPECT_NE(good[0].threshold.find("80% of the GPU's FMA peak 66.9"), std::string::npos) << good[0].threshold;
  EXPECT_NE(good[0].threshold.find("132 SMs x 128 fp32 lanes"), std::string::npos) << good[0].threshold;
  std::vector<Verdict> slow = Judge(c, t, run, result(37.5, h200_peak));  // 56% of the peak
  ASSERT_EQ(slow.size(), 1u);
  EXPECT_EQ(slow[0].state, State::kFail) << slow[0].threshold;
  // No peak from the probe: the model table's figure is the fallback, as before.
  std::vector<Verdict> fallback = Judge(c, t, run, result(37.5, std::nullopt));
  ASSERT_EQ(fallback.size(), 1u);
  EXPECT_EQ(fallback[0].threshold.find("FMA peak"), std::string::npos) << fallback[0].threshold;
}

TEST(ValidateJudge, EachCheckAgainstItsMark) {
  model::Cluster c = Load(kInventory);
  Thresholds t = *Thresholds::For(c, Table());
  ValidatePlan p = PlanChecks(c, std::vector<std::string>{"n01", "n02"}, *SelectChecks({}));
  auto run = [&](std::string_view check) {
    for (const PlannedRun& r : p.runs) {
      if (r.check == check) return r;
    }
    return PlannedRun{};
  };
  // 8 GPUs x 1 GB/s.
  std::vector<Verdict> fast = Judge(c, t, run("storage.read"), Ok("storage.read", "read_bandwidth", 9.5, "GB/s"));
  ASSERT_EQ(fast.size(), 1u);
  EXPECT_EQ(fast[0].state, State::kPass);
  EXPECT_EQ(fast[0].threshold.substr(0, 34), ">= 8.00 GB/s (8 GPUs x 1.00 GB/s; ");
  std::vector<Verdict> slow = Judge(c, t, run("storage.read"), Ok("storage.read", "read_bandwidth", 3.2, "GB/s"));
  EXPECT_EQ(slow[0].state, State::kFail);
  EXPECT_EQ(slow[0].code, "threshold.below");
  EXPECT_FALSE(slow[0].next_step.empty());
  EXPECT_EQ(slow[0].measured, 3.2);
  // 70B params x 16 bytes (bf16 + adam) = 1120 GB over 2 compute nodes... of 3 in the
  // inventory: 373 GB per node; at 5 GB/s that is 75 s.
  std::vector<Verdict> ckpt = Judge(c, t, run("storage.checkpoint"), Ok("storage.checkpoint", "write_bandwidth", 5, "GB/s"));
  EXPECT_EQ(ckpt[0].state, State::kPass) << ckpt[0].detail;
  EXPECT_NEAR(ckpt[0].measured.value(), 70e9 * c.workload.checkpoint_bytes_per_param() / 3 / 5e9, 0.01);
  EXPECT_EQ(Judge(c, t, run("storage.checkpoint"), Ok("storage.checkpoint", "write_bandwidth", 1, "GB/s"))[0].state,
            State::kFail);
  EXPECT_EQ(Judge(c, t, run("storage.metadata"), Ok("storage.metadata", "p99_latency", 0.012, "s"))[0].code,
            "threshold.above");
  EXPECT_EQ(Judge(c, t, run("storage.metadata"), Ok("storage.metadata", "p99_latency", 0.002, "s"))[0].state, State::kPass);
  // 80% of 100 Gb/s.
  EXPECT_EQ(Judge(c, t, run("tcp.bandwidth"), Ok("tcp.bandwidth", "bandwidth", 81, "Gb/s"))[0].state, State::kPass);
  std::vector<Verdict> tcp = Judge(c, t, run("tcp.bandwidth"), Ok("tcp.bandwidth", "bandwidth", 40, "Gb/s"));
  EXPECT_EQ(tcp[0].state, State::kFail);
  EXPECT_EQ(tcp[0].entity, "peer n02 (storage)");
  // Each figure of a mark names where it comes from (#15 item 21): the line rate is the
  // inventory's, the 80% the guide's.
  EXPECT_TRUE(tcp[0].threshold.starts_with(
      ">= 80.0 Gb/s (80% of 100 Gb/s, inventory networks.storage.rate; 80%: guide 000"))
      << tcp[0].threshold;
  EXPECT_NE(fast[0].threshold.find("; guide 000, Storage"), std::string::npos) << fast[0].threshold;
  std::string own = kInventory;
  own.replace(own.find("optimizer: adam,"), 16, "optimizer: adam, read_bandwidth_per_gpu: 2GB/s,");
  model::Cluster c2 = Load(own);
  ValidatePlan p2 = PlanChecks(c2, std::vector<std::string>{"n01"}, std::vector<std::string>{"storage.read"});
  std::vector<Verdict> w = Judge(c2, *Thresholds::For(c2, Table()), p2.runs.at(0),
                                 Ok("storage.read", "read_bandwidth", 9.5, "GB/s"));
  EXPECT_EQ(w[0].threshold, ">= 16.0 GB/s (8 GPUs x 2.00 GB/s; inventory workload.read_bandwidth_per_gpu)");
  EXPECT_EQ(w[0].state, State::kFail);
  // SKIP and ERROR stay what they are, with the probe's code; a missing measurement is an error.
  EXPECT_EQ(Judge(c, t, run("storage.read"), probe::Skip("storage.read", "storage.no_path", "no path"))[0].state, State::kSkip);
  std::vector<Verdict> err = Judge(c, t, run("storage.read"), probe::Fail("storage.read", "sys.open_failed", "open(x): EACCES"));
  EXPECT_EQ(err[0].state, State::kError);
  EXPECT_EQ(err[0].code, "sys.open_failed");
  EXPECT_EQ(Judge(c, t, run("storage.read"), Ok("storage.read", "other", 1, "GB/s"))[0].code, "probe.no_measurement");
}

// First run on the H200 (#36): with CUDA_VISIBLE_DEVICES empty every CUDA probe skipped
// gpu.none, NVML still counted the GPU, and validate said PASS. On a node the inventory gives
// GPUs, a probe that sees none is the node's FAIL; elsewhere SKIPs keep their code.
TEST(ValidateJudge, AGpuNodeWhoseProbesSeeNoGpuFailsNotSkips) {
  model::Cluster c = Load(kInventory);
  Thresholds t = *Thresholds::For(c, Table());
  ValidatePlan p = PlanChecks(c, std::vector<std::string>{"n01"}, *SelectChecks({}));
  const probe::ProbeResult none =
      probe::Skip("gpu.copy", "gpu.none", "cuInit failed: no CUDA-capable device is detected (CUDA_ERROR_NO_DEVICE)");
  int gpu_runs = 0;
  for (const PlannedRun& run : p.runs) {
    if (run.probe.empty()) continue;
    probe::ProbeResult r = none;
    r.probe = run.probe;
    std::vector<Verdict> v = Judge(c, t, run, r);
    ASSERT_EQ(v.size(), 1u) << run.check;
    const bool gpu_check = run.check.starts_with("gpu.") || run.check.starts_with("nccl.");
    if (gpu_check) {
      ++gpu_runs;
      EXPECT_EQ(v[0].state, State::kFail) << run.check;
      EXPECT_EQ(v[0].code, "gpu.not_visible") << run.check;
      EXPECT_EQ(v[0].detail, "the inventory gives n01 NVIDIA GPUs, but " + run.probe +
                                 " sees none: cuInit failed: no CUDA-capable device is detected (CUDA_ERROR_NO_DEVICE)");
      EXPECT_NE(v[0].next_step.find("CUDA_VISIBLE_DEVICES"), std::string::npos) << v[0].next_step;
    } else {
      EXPECT_EQ(v[0].state, State::kSkip) << run.check;
      EXPECT_EQ(v[0].code, "gpu.none") << run.check;
    }
  }
  EXPECT_GE(gpu_runs, 7);  // health, copy, h2d, d2h, compute, gemm, nccl.quick, nccl.allreduce
  // A driver that does not load is still a SKIP with its own code: the facts check reports the
  // missing driver as drift, and a build without CUDA must not fail nodes.
  for (const PlannedRun& run : p.runs) {
    if (run.check != "gpu.copy") continue;
    std::vector<Verdict> v = Judge(c, t, run, probe::Skip("gpu.copy", "gpu.no_cuda_driver", "libcuda.so.1: absent"));
    EXPECT_EQ(v[0].state, State::kSkip);
    EXPECT_EQ(v[0].code, "gpu.no_cuda_driver");
  }
}

// #28 item 12: a compute node without GPUs is held to one GPU's share of the read bandwidth,
// and the mark says so; it used to read "1 GPU x 1.00 GB/s".
TEST(ValidateJudge, StorageReadOnAGpuLessNodeSaysItIsOneGpusShare) {
  std::string inv = kInventory;
  inv.replace(inv.find("profiles:\n"), 10,
              "profiles:\n  cpu: {cpu: {sockets: 2, cores_per_socket: 32}, nics: [{name: eth0, kind: ethernet, rate: "
              "100Gb/s, network: storage, netdev: eth0}]}\n");
  inv.replace(inv.find("nodes:\n"), 7, "nodes:\n  - {name: c01, profile: cpu, address: 198.18.0.9}\n");
  model::Cluster c = Load(inv);
  Thresholds t = *Thresholds::For(c, Table());
  ValidatePlan p = PlanChecks(c, std::vector<std::string>{"c01"}, std::vector<std::string>{"storage.read"});
  ASSERT_EQ(p.runs.size(), 1u);
  std::vector<Verdict> v = Judge(c, t, p.runs[0], Ok("storage.read", "read_bandwidth", 2.5, "GB/s"));
  ASSERT_FALSE(v.empty());
  EXPECT_TRUE(v[0].threshold.starts_with(">= 1.00 GB/s (no GPU on this node: one GPU's share, 1.00 GB/s; guide 000"))
      << v[0].threshold;
}

// #15 item 19: what the node's statfs says the path is, against the tier's kind.
TEST(ValidateJudge, StorageReadSaysWhenTheFileSystemIsNotWhatTheInventorySays) {
  auto read = [](std::map<std::string, std::string> info) {
    probe::ProbeResult r = Ok("storage.read", "read_bandwidth", 9.5, "GB/s");
    r.measurements[0].entity = "/mnt/shared";
    info.emplace("size", "34359738368");
    r.measurements[0].info = std::move(info);
    return r;
  };
  // The inventory's tier is NFS: an NFS mount is as expected, no finding.
  model::Cluster c = Load(kInventory);
  Thresholds t = *Thresholds::For(c, Table());
  const PlannedRun run = PlanChecks(c, std::vector<std::string>{"n01"}, std::vector<std::string>{"storage.read"}).runs.at(0);
  ASSERT_EQ(run.entity, "/mnt/shared");
  std::vector<Verdict> nfs = Judge(c, t, run, read({{"filesystem", "nfs"}, {"shared_fs", "nfs"}}));
  ASSERT_EQ(nfs.size(), 1u);
  EXPECT_EQ(nfs[0].state, State::kPass);
  // ext4 where the inventory has NFS: the tier is not mounted there.
  std::vector<Verdict> local = Judge(c, t, run, read({{"filesystem", "ext4"}}));
  ASSERT_EQ(local.size(), 2u);
  EXPECT_EQ(local[1].state, State::kWarn);
  EXPECT_EQ(local[1].code, "storage.not_shared");
  EXPECT_NE(local[1].detail.find("/mnt/shared is on ext4 here"), std::string::npos) << local[1].detail;
  // Lustre where the inventory says local NVMe: every node's file went to one shared file system.
  std::string nvme = kInventory;
  nvme.replace(nvme.find("kind: nfs"), 9, "kind: local-nvme");
  model::Cluster c2 = Load(nvme);
  const PlannedRun run2 =
      PlanChecks(c2, std::vector<std::string>{"n01"}, std::vector<std::string>{"storage.read"}).runs.at(0);
  std::vector<Verdict> lustre = Judge(c2, t, run2, read({{"filesystem", "lustre"}, {"shared_fs", "lustre"}}));
  ASSERT_EQ(lustre.size(), 2u);
  EXPECT_EQ(lustre[0].state, State::kPass);
  EXPECT_EQ(lustre[1].state, State::kWarn);
  EXPECT_EQ(lustre[1].code, "storage.shared_fs");
  EXPECT_EQ(lustre[1].threshold, "a node-local file system (inventory storage.tiers[shared].kind: local-nvme)");
  EXPECT_NE(lustre[1].detail.find("on lustre, shared with other nodes"), std::string::npos) << lustre[1].detail;
  EXPECT_NE(lustre[1].detail.find("34359738368-byte"), std::string::npos) << lustre[1].detail;
}

TEST(ValidateJudge, GpuHealthNamesEachProblemPerGpu) {
  model::Cluster c = Load(kInventory);
  Thresholds t = *Thresholds::For(c, Table());
  PlannedRun run;
  run.check = "gpu.health";
  run.probe = "gpu.health";
  run.node = "n01";
  probe::ProbeResult r;
  r.probe = "gpu.health";
  auto add = [&](std::string entity, std::string metric, double v, std::map<std::string, std::string> info = {}) {
    r.measurements.push_back({std::move(entity), std::move(metric), v, "x", {v}, std::move(info)});
  };
  add("node", "gpu_count", 7);
  add("gpu0", "temperature", 41);
  add("gpu0", "remap_pending", 0);
  add("gpu0", "pcie_width_current", 16);
  add("gpu0", "pcie_width_max", 16);
  add("gpu1", "remap_pending", 1);
  add("gpu1", "throttle_slowdown", 1, {{"reasons", "hw_slowdown"}});
  add("gpu1", "pcie_gen_current", 1);
  add("gpu1", "pcie_gen_max", 5);
  add("gpu1", "ecc_corrected_sram_aggregate", 20000);
  std::vector<Verdict> v = Judge(c, t, run, r);
  std::vector<std::string> got;
  for (const Verdict& x : v) got.push_back(x.entity + " " + ToString(x.state) + " " + x.code);
  EXPECT_EQ(got, (std::vector<std::string>{"node FAIL gpu.count", "gpu0 PASS ", "gpu1 FAIL gpu.ecc_sram_correctable",
                                           "gpu1 FAIL gpu.remap_pending", "gpu1 FAIL gpu.clock_throttle", "gpu1 WARN gpu.pcie_gen"}));
  EXPECT_EQ(v[4].detail, "clocks held down: hw_slowdown");
  EXPECT_EQ(v[1].measured, 41);
}

// #15 item 17: hardware Xids fail, application Xids (13, 31, 43, 45, unlisted) warn; the
// node's own count fails on its hardware codes only.
TEST(ValidateJudge, HardwareXidsFailApplicationXidsWarn) {
  model::Cluster c = Load(kInventory);
  Thresholds t = *Thresholds::For(c, Table());
  PlannedRun run;
  run.check = "gpu.health";
  run.probe = "gpu.health";
  run.node = "n01";
  auto judge = [&](bool hardware) {
    probe::ProbeResult r;
    r.probe = "gpu.health";
    auto add = [&](std::string entity, std::string metric, double v, std::map<std::string, std::string> info = {}) {
      r.measurements.push_back({std::move(entity), std::move(metric), v, "x", {v}, std::move(info)});
    };
    add("node", "xid_count", hardware ? 3 : 2,
        {{"codes", hardware ? "31:2,79:1" : "31:2"}, {"hardware_codes", hardware ? "79:1" : "none"}});
    add("gpu0", "xid_count", hardware ? 1 : 0, {{"codes", hardware ? "79:1" : "none"}});
    add("gpu0", "xid_app_count", 2, {{"codes", "31:2"}});
    std::vector<std::string> got;
    for (const Verdict& x : Judge(c, t, run, r)) {
      got.push_back(fmt::format("{} {} {} {}", x.entity, ToString(x.state), x.code, x.measured.value_or(-1)));
    }
    return got;
  };
  EXPECT_EQ(judge(false), (std::vector<std::string>{"gpu0 WARN gpu.xid_app 2"}));
  EXPECT_EQ(judge(true), (std::vector<std::string>{"node FAIL gpu.xid 1", "gpu0 FAIL gpu.xid 1", "gpu0 WARN gpu.xid_app 2"}));
  // #28 item 10: an informational Xid (63, a remap recorded) fails and warns nothing; the PASS
  // says it was seen.
  probe::ProbeResult info;
  info.probe = "gpu.health";
  info.measurements.push_back({"node", "xid_count", 1, "count", {1}, {{"codes", "63:1"}, {"hardware_codes", "none"}}});
  info.measurements.push_back({"gpu0", "xid_count", 0, "count", {0}, {{"codes", "none"}}});
  info.measurements.push_back({"gpu0", "xid_info_count", 1, "count", {1}, {{"codes", "63:1"}}});
  info.measurements.push_back({"gpu0", "xid_app_count", 0, "count", {0}, {{"codes", "none"}}});
  std::vector<Verdict> v = Judge(c, t, run, info);
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].state, State::kPass);
  EXPECT_EQ(v[0].detail,
            "informational Xids 63:1 (NVIDIA's catalog: IGNORE; a recorded remap activates at the next GPU reset)");
}

// #15 item 13: NVLinks are judged against what the profile expects up.
TEST(ValidateJudge, NvLinksAgainstWhatTheProfileExpects) {
  PlannedRun run;
  run.check = "gpu.health";
  run.probe = "gpu.health";
  run.node = "n01";
  probe::ProbeResult r;
  r.probe = "gpu.health";
  r.measurements.push_back({"gpu0", "nvlink_up", 0, "count", {0}, {}});
  r.measurements.push_back({"gpu0", "nvlink_total", 18, "count", {18}, {}});
  auto state = [&](const std::string& gpus) {
    std::string inv = kInventory;
    inv.replace(inv.find("{model: H200, count: 8}"), 23, gpus);
    model::Cluster c = Load(inv);
    Thresholds t = *Thresholds::For(c, Table());
    std::vector<Verdict> v = Judge(c, t, run, r);
    return v.empty() ? std::string("none") : std::string(ToString(v[0].state)) + " " + v[0].code + " " + v[0].threshold;
  };
  // Eight SXM GPUs on NVSwitch: every listed link must be up.
  EXPECT_EQ(state("{model: H200, count: 8}").rfind("FAIL gpu.nvlink_down >= 18", 0), 0u) << state("{model: H200, count: 8}");
  // One SXM GPU passed through alone (the H200 this project was measured on): no peer, no fault.
  EXPECT_EQ(state("{model: H200, count: 1}"), "PASS  ");
  // A profile that states no NVLink.
  EXPECT_EQ(state("{model: H200, count: 8, nvlink_bandwidth: 0GB/s}"), "PASS  ");
}

TEST(ValidateJudge, GpuRatesAgainstTheModelFigureOrWarnWithout) {
  model::Cluster c = Load(kInventory);  // H200
  Thresholds t = *Thresholds::For(c, Table());
  PlannedRun run;
  run.check = "gpu.h2d";
  run.probe = "gpu.h2d";
  run.node = "n01";
  probe::ProbeResult r;
  r.probe = "gpu.h2d";
  r.measurements = {{"gpu0", "bandwidth", 55.1, "GB/s", {55.1}, {}}, {"gpu1", "bandwidth", 30, "GB/s", {30}, {}}};
  std::vector<Verdict> v = Judge(c, t, run, r);
  ASSERT_EQ(v.size(), 2u);
  EXPECT_EQ(v[0].state, State::kPass);
  EXPECT_EQ(v[1].state, State::kFail);
  EXPECT_NE(v[1].threshold.find(">= 48.0 GB/s (100% of 48.0 GB/s; anchors.md"), std::string::npos) << v[1].threshold;
  // The data file has no HBM figure for the H100: a warning with the value, not a pass.
  std::string h100 = kInventory;
  h100.replace(h100.find("model: H200"), 11, "model: H100");
  model::Cluster c2 = Load(h100);
  Thresholds t2 = *Thresholds::For(c2, Table());
  run.check = run.probe = "gpu.copy";
  r.probe = "gpu.copy";
  std::vector<Verdict> w = Judge(c2, t2, run, r);
  EXPECT_EQ(w[0].state, State::kWarn);
  EXPECT_EQ(w[0].code, "threshold.no_reference");
  EXPECT_EQ(w[0].measured, 55.1);
}

TEST(ValidateJudge, DriftBecomesFailsAndCleanNodesPass) {
  model::Cluster c = Load(kInventory);
  std::vector<facts::Drift> drift = {{"gpu.count", "n02", "node", "8", "7", "n02 has 7 GPUs, the profile 8"}};
  std::vector<Verdict> v = JudgeDrift(c, drift, std::vector<std::string>{"n01", "n02"});
  ASSERT_EQ(v.size(), 2u);
  EXPECT_EQ(v[0].state, State::kPass);
  EXPECT_EQ(v[1].state, State::kFail);
  EXPECT_EQ(v[1].code, "gpu.count");
  EXPECT_FALSE(v[1].next_step.empty());
  // The expected value names the inventory key it came from.
  EXPECT_EQ(v[1].threshold, "8 (inventory profiles.gpu.gpus.count)");
  // #28 item 8: more memory or CPUs than the inventory says is a WARN (slurmd drains only on
  // less); less stays a FAIL.
  std::vector<facts::Drift> sizes = {
      {"memory.differs", "n01", "memory", "1048576 MiB", "2064377 MiB", "MemTotal is 2064377 MiB, more than ..."},
      {"cpu.differs", "n01", "cpu", "2x32x1 (64 CPUs)", "2x32x2 (128 CPUs)", "lscpu reports ..."},
      {"memory.low", "n02", "memory", ">= 1992294 MiB", "1032190 MiB", "MemTotal is 1032190 MiB, below ..."},
      {"cpu.low", "n02", "cpu", "2x32x1 (64 CPUs)", "1x32x1 (32 CPUs)", "lscpu reports ..."}};
  std::vector<Verdict> w = JudgeDrift(c, sizes, std::vector<std::string>{"n01", "n02"});
  ASSERT_EQ(w.size(), 4u);
  EXPECT_EQ(w[0].state, State::kWarn) << w[0].code;
  EXPECT_EQ(w[1].state, State::kWarn) << w[1].code;
  EXPECT_EQ(w[2].state, State::kFail) << w[2].code;
  EXPECT_EQ(w[3].state, State::kFail) << w[3].code;
  EXPECT_EQ(ExitCode(std::span<const Verdict>(w.data(), 2), false), 0);
  EXPECT_EQ(ExitCode(std::span<const Verdict>(w.data(), 2), true), 1);
}

// Issue #15 item 21: a missing NIC's next step fits the NIC the inventory describes: an Ethernet
// netdev is not an mlx5_core/HCA problem; an InfiniBand HCA is looked for with the verbs tools.
TEST(ValidateJudge, AMissingNicGetsAdviceForItsKind) {
  std::string inv = kInventory;
  inv.replace(inv.find("nics: [{name: eth0"), 18,
              "nics: [{name: mlx5_0, kind: infiniband, rate: 400Gb/s}, {name: eno1");
  model::Cluster c = Load(inv);
  std::vector<facts::Drift> drift = {
      {"nic.missing", "n01", "eno1", "present", "no RDMA devices", "profile gpu has NIC eno1, the node does not"},
      {"nic.missing", "n01", "mlx5_0", "present", "no RDMA devices", "profile gpu has NIC mlx5_0, the node does not"}};
  std::vector<Verdict> v = JudgeDrift(c, drift, std::vector<std::string>{"n01"});
  ASSERT_EQ(v.size(), 2u);
  EXPECT_EQ(v[0].entity, "eno1");
  EXPECT_EQ(v[0].next_step.find("mlx5"), std::string::npos) << v[0].next_step;
  EXPECT_NE(v[0].next_step.find("`ip -br link`"), std::string::npos) << v[0].next_step;
  EXPECT_NE(v[0].next_step.find("ethtool -i eth0"), std::string::npos) << v[0].next_step;  // its netdev
  EXPECT_EQ(v[0].threshold, "present (inventory profiles.gpu.nics)");
  EXPECT_NE(v[1].next_step.find("`ibv_devices`"), std::string::npos) << v[1].next_step;
  EXPECT_NE(v[1].next_step.find("mlx5_0"), std::string::npos) << v[1].next_step;
}

TEST(ValidateReport, ExitCodesFoldingAndJson) {
  auto verdict = [](std::string node, State s, std::string code = "") {
    Verdict v;
    v.check = "storage.read";
    v.node = std::move(node);
    v.entity = "/mnt/shared";
    v.state = s;
    v.code = std::move(code);
    return v;
  };
  std::vector<Verdict> pass = {verdict("n01", State::kPass), verdict("n02", State::kPass)};
  EXPECT_EQ(ExitCode(pass, false), 0);
  std::vector<Verdict> warn = {verdict("n01", State::kPass), verdict("n02", State::kWarn, "threshold.no_reference")};
  EXPECT_EQ(ExitCode(warn, false), 0);
  EXPECT_EQ(ExitCode(warn, true), 1);
  std::vector<Verdict> fail = {verdict("n01", State::kFail, "threshold.below"), verdict("n02", State::kSkip, "x")};
  EXPECT_EQ(ExitCode(fail, false), 1);
  fail.push_back(verdict("n03", State::kError, "node.unreachable"));
  EXPECT_EQ(ExitCode(fail, false), 2);
  // Identical lines fold under one hostlist.
  std::string text = report::ValidateText(pass, report::Style{}, false);
  EXPECT_NE(text.find("n[01-02]"), std::string::npos) << text;
  EXPECT_NE(text.find("Verdict: PASS (2 passed, 0 warned, 0 failed, 0 skipped, 0 errors)"), std::string::npos) << text;
  nlohmann::ordered_json j = report::ValidateJson("vt", fail, false);
  EXPECT_EQ(j["schema"], "gpuforge.validate/v1");
  EXPECT_EQ(j["exit_code"], 2);
  EXPECT_EQ(j["results"][2]["state"], "ERROR");
  EXPECT_TRUE(j["results"][0]["value"].is_null());
}

TEST(ValidateReport, UnreachableNodesFoldOnTheReasonWithTheirOwnDetailsFoldedOut) {
  // Thirty nodes down with messages that each name the node's own address fold like clush:
  // one line for the reason, the details under it, the next step once.
  std::vector<Verdict> v;
  for (int i = 1; i <= 30; ++i) {
    Verdict d;
    d.check = "ssh";
    d.node = fmt::format("gpu{:03}", i);
    d.entity = "node";
    d.state = State::kError;
    d.code = "node.unreachable";
    d.detail = i <= 29 ? fmt::format("ssh: connect to host 198.18.0.{} port 22: No route to host", 10 + i)
                       : "ssh: handshake failed: Connection reset by peer";
    d.next_step = "check the node's SSH";
    v.push_back(d);
  }
  Verdict same = v[0];
  same.node = "login01";
  same.detail = v[0].detail;  // the identical message folds with gpu001
  v.push_back(same);
  const std::string text = report::ValidateText(v, report::Style{}, false);
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 1 + 30 + 1 + 2) << text;
  EXPECT_NE(text.find("gpu[001-030],login01 ERROR ssh"), std::string::npos) << text;
  EXPECT_NE(text.find("        gpu001,login01: ssh: connect to host 198.18.0.11 port 22: No route to host\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("        gpu030: ssh: handshake failed: Connection reset by peer\n"), std::string::npos) << text;
  EXPECT_EQ(text.find("next: check the node's SSH"), text.rfind("next: check the node's SSH")) << text;
  // One detail shared by all: printed once, without a node list, as before.
  std::vector<Verdict> shared(v.begin(), v.begin() + 1);
  shared.push_back(same);
  const std::string one = report::ValidateText(shared, report::Style{}, false);
  EXPECT_NE(one.find("\n        ssh: connect to host 198.18.0.11 port 22: No route to host\n"), std::string::npos) << one;
}

using remote::testing::FakeConnector;

remote::ExecResult Exited(int status, std::string out = "") {
  remote::ExecResult r;
  r.exit_status = status;
  r.out = std::move(out);
  return r;
}

plan::AgentBinary Agent() {
  auto blob = std::make_shared<plan::Blob>();
  blob->bytes = "agent bytes";
  blob->sha256 = base::Sha256Hex(blob->bytes);
  return {blob, "x86_64"};
}

std::unique_ptr<remote::Session> Connect(FakeConnector& c, const std::string& node) {
  remote::Target t;
  t.node = node;
  return std::move(c.Connect(t)).value();
}

std::unique_ptr<remote::Session> ConnectAs(FakeConnector& c, const std::string& node, const std::string& user,
                                           bool sudo = false) {
  remote::Target t;
  t.node = node;
  t.endpoint.user = user;
  t.sudo = sudo;
  return std::move(c.Connect(t)).value();
}

TEST(ValidateRunner, FindsOrPushesTheAgentWhereOnlyItsUserCanWrite) {
  plan::AgentBinary a = Agent();
  const std::string& sha = a.blob->sha256;
  FakeConnector c;
  c.nodes["n01"].exec = [&](const std::string&) -> Result<remote::ExecResult> {
    return Exited(0, "x86_64\n/root\n" + sha + "\n-\n");
  };
  Result<AgentOnNode> installed = EnsureAgent(*ConnectAs(c, "n01", "root"), a);
  ASSERT_TRUE(installed.ok()) << installed.error().message;
  EXPECT_EQ(installed->path, std::string(plan::kAgentPath));
  EXPECT_EQ(installed->sha256, sha);

  // As root (or through sudo) the copy goes to a root-only directory, root-owned, never /var/tmp.
  c.nodes["n02"].exec = [&](const std::string&) -> Result<remote::ExecResult> { return Exited(0, "x86_64\n/root\n-\n-\n"); };
  Result<AgentOnNode> pushed = EnsureAgent(*ConnectAs(c, "n02", "ops", true), a);
  ASSERT_TRUE(pushed.ok()) << pushed.error().message;
  EXPECT_EQ(pushed->path, "/var/lib/gpuforge/agent/gpuforge-agent-" + sha);
  EXPECT_EQ(c.log["n02"].back(), "upload: /var/lib/gpuforge/agent/gpuforge-agent-" + sha + " (755)");
  EXPECT_EQ(c.nodes["n02"].files[pushed->path], "agent bytes");
  ASSERT_GE(c.log["n02"].size(), 3u);
  EXPECT_NE(c.log["n02"][1].find("chown root:root -- '/var/lib/gpuforge/agent'"), std::string::npos) << c.log["n02"][1];

  // A login user without sudo runs the agent as itself: its own 0700 directory.
  c.nodes["n05"].exec = [&](const std::string&) -> Result<remote::ExecResult> {
    return Exited(0, "x86_64\n/home/ops\n-\n-\n");
  };
  Result<AgentOnNode> own = EnsureAgent(*ConnectAs(c, "n05", "ops"), a);
  ASSERT_TRUE(own.ok()) << own.error().message;
  EXPECT_EQ(own->path, "/home/ops/.cache/gpuforge/gpuforge-agent-" + sha);
  EXPECT_NE(c.log["n05"][1].find("chmod 0700"), std::string::npos) << c.log["n05"][1];
  c.nodes["n06"].exec = [&](const std::string&) -> Result<remote::ExecResult> {
    return Exited(0, "x86_64\n/home/x;reboot\n-\n-\n");
  };
  Result<AgentOnNode> hostile_home = EnsureAgent(*ConnectAs(c, "n06", "ops"), a);
  ASSERT_FALSE(hostile_home.ok());
  EXPECT_NE(hostile_home.error().message.find("is not a plain absolute path"), std::string::npos);

  c.nodes["n03"].exec = [&](const std::string&) -> Result<remote::ExecResult> { return Exited(0, "aarch64\n/root\n-\n-\n"); };
  Result<AgentOnNode> other = EnsureAgent(*ConnectAs(c, "n03", "root"), a);
  ASSERT_FALSE(other.ok());
  EXPECT_NE(other.error().message.find("this build (x86_64) cannot run on the node (aarch64)"), std::string::npos);
  c.nodes["n04"].exec = [&](const std::string&) -> Result<remote::ExecResult> { return Exited(0, "x86_64\n$(reboot)\n"); };
  EXPECT_FALSE(EnsureAgent(*ConnectAs(c, "n04", "root"), a).ok());
}

// The guard every probe run goes through, run by the real /bin/sh on real files (issue #12,
// item 1): owner, mode, links and digest are checked in the same shell that execs the agent.
TEST(ValidateRunner, TheAgentGuardRefusesWhatAnotherUserCouldHaveSwapped) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("gpuforge-agent-guard-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "safe");
  fs::permissions(dir / "safe", fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                                    fs::perms::others_read | fs::perms::others_exec);
  const std::string body = "#!/bin/sh\necho \"ran $*\"\n";
  const fs::path agent = dir / "safe" / "gpuforge-agent";
  std::ofstream(agent) << body;
  fs::permissions(agent, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec | fs::perms::others_read |
                             fs::perms::others_exec);
  PlannedRun run;
  run.probe = "storage.read";
  auto sh = [](const std::string& script, int* status) {
    const std::string file = ::testing::TempDir() + "/agent_guard.sh";
    std::ofstream(file) << script;
    FILE* p = ::popen(("/bin/sh " + file + " 2>&1").c_str(), "r");
    std::string out;
    char buf[4096];
    for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
    *status = WEXITSTATUS(::pclose(p));
    return out;
  };
  int status = -1;
  const AgentOnNode good{agent.string(), base::Sha256Hex(body)};
  EXPECT_EQ(sh(VerifiedAgentCommand(good, run, 30), &status), "ran agent run storage.read --timeout 30\n");
  EXPECT_EQ(status, 0);

  // Another digest: a trojan renamed over the genuine copy.
  std::string out = sh(VerifiedAgentCommand({agent.string(), std::string(64, 'a')}, run, 30), &status);
  EXPECT_EQ(status, 126);
  EXPECT_NE(out.find("its SHA-256 is " + base::Sha256Hex(body) + ", not " + std::string(64, 'a')), std::string::npos) << out;

  // Writable by others, or in a directory others can write (the sticky /var/tmp of old).
  fs::permissions(agent, fs::perms::others_write, fs::perm_options::add);
  out = sh(VerifiedAgentCommand(good, run, 30), &status);
  EXPECT_EQ(status, 126) << out;
  EXPECT_NE(out.find("refusing to run the agent"), std::string::npos) << out;
  fs::permissions(agent, fs::perms::others_write, fs::perm_options::remove);
  fs::permissions(dir / "safe", fs::perms::all | fs::perms::sticky_bit);
  EXPECT_EQ(sh(VerifiedAgentCommand(good, run, 30), &status).find("ran"), std::string::npos);
  EXPECT_EQ(status, 126);
  fs::permissions(dir / "safe", fs::perms::group_write | fs::perms::others_write | fs::perms::sticky_bit,
                  fs::perm_options::remove);

  // Owned by another user (a node user's plant), or reached through a link.
  if (::geteuid() == 0) {
    ASSERT_EQ(::chown(agent.c_str(), 65534, 65534), 0);
    sh(VerifiedAgentCommand(good, run, 30), &status);
    EXPECT_EQ(status, 126);
    ASSERT_EQ(::chown(agent.c_str(), 0, 0), 0);
  }
  fs::create_symlink(agent, dir / "safe" / "link");
  sh(VerifiedAgentCommand({(dir / "safe" / "link").string(), base::Sha256Hex(body)}, run, 30), &status);
  EXPECT_EQ(status, 126);
  fs::remove_all(dir);
}

TEST(ValidateRunner, RetriesAPerformanceCheckUntilItPassesAndStopsOnErrors) {
  model::Cluster cl = Load(kInventory);
  Thresholds t = *Thresholds::For(cl, Table());
  ValidatePlan p = PlanChecks(cl, std::vector<std::string>{"n01"}, std::vector<std::string>{"storage.read"});
  ASSERT_EQ(p.runs.size(), 1u);
  FakeConnector c;
  int calls = 0;
  c.nodes["n01"].exec = [&](const std::string& cmd) -> Result<remote::ExecResult> {
    ++calls;
    EXPECT_EQ(cmd, "'/a' agent run 'storage.read' --param 'path=/mnt/shared' --timeout 1800");
    probe::ProbeResult r = Ok("storage.read", "read_bandwidth", calls < 2 ? 3.0 : 9.0, "GB/s");
    return Exited(0, probe::ToJsonLine(r) + "\n");
  };
  std::vector<Verdict> v = RunCheck(*Connect(c, "n01"), "/a", cl, t, p.runs[0], RunOptions{});
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].state, State::kPass);
  EXPECT_EQ(v[0].attempts, 2);

  FakeConnector hostile;
  hostile.nodes["n01"].exec = [&](const std::string&) -> Result<remote::ExecResult> {
    return Exited(0, "{\"schema\":\"gpuforge.probe/v1\",\"probe\":\"storage.read;reboot\"}\n");
  };
  std::vector<Verdict> h = RunCheck(*Connect(hostile, "n01"), "/a", cl, t, p.runs[0], RunOptions{});
  EXPECT_EQ(h[0].state, State::kError);
  EXPECT_EQ(h[0].code, "agent.bad_output");
  EXPECT_EQ(hostile.log["n01"].size(), 1u);  // an error is not retried

  FakeConnector hung;
  hung.nodes["n01"].exec = [&](const std::string&) -> Result<remote::ExecResult> {
    remote::ExecResult r;
    r.end = remote::ExecEnd::kTimedOut;
    return r;
  };
  RunOptions quick;
  quick.timeout_s = 5;
  std::vector<Verdict> to = RunCheck(*Connect(hung, "n01"), "/a", cl, t, p.runs[0], quick);
  EXPECT_EQ(to[0].code, "check.timeout");
  EXPECT_EQ(to[0].detail, "storage.read on n01 did not answer within 35 s");
}

TEST(ValidateRunner, AgentCommandQuotesEveryWord) {
  PlannedRun r;
  r.probe = "tcp.bandwidth";
  r.params = {{"peer", "x'; reboot; '"}, {"network", "storage"}};
  EXPECT_EQ(AgentCommand("/usr/local/lib/gpuforge/gpuforge", r, 60),
            "'/usr/local/lib/gpuforge/gpuforge' agent run 'tcp.bandwidth' --param 'peer=x'\\''; reboot; '\\''' "
            "--timeout 60");
}

// A check is one row: a test-only table with a new check (its planner, judge, retry policy and
// timeout) is planned, run through the runner and judged with nothing else added anywhere.
std::vector<Verdict> JudgeTestTemp(const model::Cluster&, const Thresholds&, const PlannedRun& run,
                                   const probe::ProbeResult& r) {
  Verdict v;
  v.check = run.check;
  v.node = run.node;
  v.entity = run.entity;
  const probe::Measurement& m = r.measurements.at(0);
  v.measured = m.value;
  v.unit = m.unit;
  v.state = m.value <= 80 ? State::kPass : State::kFail;
  if (v.state == State::kFail) v.code = "threshold.above";
  return {v};
}

void PlanTestTempOnN02(const PlanContext& ctx, const CheckInfo& check, ValidatePlan& plan) {
  if (ctx.node->name == "n02") {
    PlannedRun r = RunOf(check, *ctx.node);
    r.entity = "inlet";
    plan.runs.push_back(std::move(r));
  } else {
    NotApplicable(plan, check, ctx.node->name, "gpu.no_nvidia", "only n02 has the sensor");
  }
}

TEST(ValidateCheckTable, ANewRowIsPlannedRunAndJudged) {
  static constexpr std::array kTable = {
      CheckInfo{.key = "test.temperature",
                .probe = "storage.read",  // any probe the agent has: the fake answers
                .description = "inlet temperature",
                .retry = {.on_fail = true},
                .timeout_s = 42,
                .plan = &PlanTestTempOnN02,
                .judge = &JudgeTestTemp},
  };
  model::Cluster cl = Load(kInventory);
  Thresholds t = *Thresholds::For(cl, Table());
  const std::vector<std::string> nodes = {"n01", "n02"};
  ValidatePlan p = PlanChecks(cl, nodes, std::vector<std::string>{"test.temperature"}, kTable);
  ASSERT_EQ(p.runs.size(), 1u);
  EXPECT_EQ(p.runs[0].node, "n02");
  EXPECT_EQ(p.runs[0].entity, "inlet");
  EXPECT_EQ(p.runs[0].timeout_s, 42);
  EXPECT_TRUE(p.runs[0].performance);
  EXPECT_EQ(p.runs[0].info, &kTable[0]);
  EXPECT_EQ(ShapeOf(p.runs[0]), Shape::kNode);
  ASSERT_EQ(p.not_applicable.size(), 1u);
  EXPECT_EQ(p.not_applicable[0].node, "n01");
  EXPECT_EQ(p.not_applicable[0].state, State::kSkip);
  // The real table does not know it; the plan does.
  EXPECT_EQ(FindCheck("test.temperature"), nullptr);
  FakeConnector c;
  int calls = 0;
  c.nodes["n02"].exec = [&](const std::string& cmd) -> Result<remote::ExecResult> {
    ++calls;
    EXPECT_EQ(cmd, "'/a' agent run 'storage.read' --timeout 42");
    return Exited(0, probe::ToJsonLine(Ok("storage.read", "temp", calls < 2 ? 95 : 31, "C")) + "\n");
  };
  std::vector<Verdict> v = RunCheck(*Connect(c, "n02"), "/a", cl, t, p.runs[0], RunOptions{});
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].state, State::kPass);
  EXPECT_EQ(v[0].measured, 31);
  EXPECT_EQ(v[0].attempts, 2);  // its retry policy: a FAIL is tried again
}

}  // namespace
}  // namespace gpuforge::validate
