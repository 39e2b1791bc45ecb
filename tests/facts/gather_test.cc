#include "gpuforge/facts/gather.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "facts/fixtures.h"

namespace gpuforge::facts {
namespace {

using testing::FixturePath;
using testing::ReadFixture;

// Runs the gather script with /bin/sh on this machine, PATH prefixed with `path_prefix` when
// given, and returns its stdout.
std::string RunScript(const std::string& path_prefix = "", const std::string& env = "") {
  std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("gpuforge-gather-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::filesystem::path script = dir / "gather.sh";
  std::ofstream(script) << GatherScript();
  std::string cmd = env + " ";
  if (!path_prefix.empty()) cmd += "PATH='" + path_prefix + "':\"$PATH\" ";
  cmd += "/bin/sh '" + script.string() + "'";
  std::string out;
  if (FILE* p = ::popen(cmd.c_str(), "r")) {
    std::array<char, 4096> buf;
    std::size_t n;
    while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) out.append(buf.data(), n);
    ::pclose(p);
  }
  return out;
}

// A directory holding an executable `nvidia-smi` that prints the H200 fixtures.
std::string FakeNvidiaSmiDir() {
  std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("gpuforge-fake-smi-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::filesystem::path smi = dir / "nvidia-smi";
  std::ofstream(smi) << ReadFixture("fake-nvidia-smi");
  std::filesystem::permissions(smi, std::filesystem::perms::owner_all |
                                        std::filesystem::perms::group_read |
                                        std::filesystem::perms::group_exec);
  return dir.string();
}

// A directory holding the pre-R535 stand-in as `nvidia-smi`.
std::string PreR535SmiDir() {
  std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("gpuforge-fake-smi-r470-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::filesystem::path smi = dir / "nvidia-smi";
  std::ofstream(smi) << ReadFixture("fake-nvidia-smi-pre-r535");
  std::filesystem::permissions(smi, std::filesystem::perms::owner_all);
  return dir.string();
}

// A gather output assembled by hand: each section given, the rest absent.
std::string Output(std::initializer_list<std::pair<std::string_view, std::string_view>> given) {
  std::string out = "@@gpuforge-facts begin format=1@@\n";
  for (const SectionSpec& s : GatherSections()) {
    bool found = false;
    for (const auto& [name, body] : given) {
      if (name != s.name) continue;
      found = true;
      out += fmt::format("@@gpuforge-facts section={} rc=0@@\n{}", name, body);
    }
    if (!found && (s.name == "uname" || s.name == "meminfo")) {
      out += fmt::format("@@gpuforge-facts section={} rc=0@@\n{}\n", s.name,
                         s.name == "uname" ? "6.8.0-45-generic" : "MemTotal: 1024 kB");
    } else if (!found) {
      out += fmt::format("@@gpuforge-facts section={} rc=absent@@\n", s.name);
    }
  }
  return out + "@@gpuforge-facts end@@\n";
}

TEST(GatherScript, IsPosixShWithoutBashisms) {
  std::string s = GatherScript();
  EXPECT_EQ(s.find("[["), std::string::npos);
  EXPECT_EQ(s.find("function "), std::string::npos);
  EXPECT_EQ(s.find("sudo"), std::string::npos);
  EXPECT_EQ(s.find("local "), std::string::npos);
  EXPECT_EQ(s.find("$'"), std::string::npos);
  EXPECT_NE(s.find("nvidia-smi --query-gpu=\"$1\" --format=csv"), std::string::npos);
  EXPECT_NE(s.find(std::string("gf_query ") + std::string(kQueryGpuFields)), std::string::npos);
  // dash -n: the script parses as POSIX sh.
  std::filesystem::path f = std::filesystem::temp_directory_path() / "gpuforge-gather-syntax.sh";
  std::ofstream(f) << s;
  EXPECT_EQ(std::system(("/bin/sh -n '" + f.string() + "'").c_str()), 0);
}

TEST(GatherScript, RunsHereWithoutNvidiaSmi) {
  // This machine has no GPU; hide any nvidia-smi so the absent path is what runs.
  std::string out = RunScript("", "PATH=/usr/bin:/bin");
  Result<NodeFacts> r = ParseGather("local", out);
  ASSERT_TRUE(r.ok()) << r.error().message << "\n" << out.substr(0, 2000);
  const NodeFacts& f = *r;
  EXPECT_EQ(f.sections.size(), GatherSections().size());
  EXPECT_EQ(f.FindSection("nvidia-smi-query")->outcome, Outcome::kAbsent);
  EXPECT_EQ(f.FindSection("nvidia-smi-topo")->outcome, Outcome::kAbsent);
  EXPECT_FALSE(f.HasNvidiaDriver());
  EXPECT_TRUE(f.gpus.empty());
  ASSERT_TRUE(f.kernel.has_value());
  EXPECT_FALSE(f.kernel->empty());
  ASSERT_TRUE(f.memory_bytes.has_value());
  EXPECT_GT(*f.memory_bytes, 64ull << 20);
  ASSERT_TRUE(f.cpu.has_value());
  EXPECT_GE(f.cpu->cpus.value_or(0), 1);
  ASSERT_TRUE(f.memlock.has_value());
}

TEST(GatherScript, RunsWithStandInNvidiaSmi) {
  std::string out =
      RunScript(FakeNvidiaSmiDir(), "FIXTURES='" + FixturePath("nvidia-h200-1gpu") + "'");
  Result<NodeFacts> r = ParseGather("h200", out);
  ASSERT_TRUE(r.ok()) << r.error().message;
  const NodeFacts& f = *r;
  EXPECT_EQ(f.FindSection("nvidia-smi-query")->outcome, Outcome::kOk);
  EXPECT_EQ(f.FindSection("nvidia-smi-xml")->outcome, Outcome::kOk);
  EXPECT_TRUE(f.HasNvidiaDriver());
  ASSERT_EQ(f.gpus.size(), 1u);
  EXPECT_EQ(f.gpus[0].name, "NVIDIA H200");
  ASSERT_TRUE(f.gpus[0].detail.has_value());  // joined by bus id
  EXPECT_EQ(f.gpus[0].detail->architecture, "Hopper");
  EXPECT_EQ(f.driver_cuda_version, "13.0");
  ASSERT_TRUE(f.topology.has_value());
  EXPECT_EQ(f.topology->rows[0].cpu_affinity, "0-15");
  EXPECT_EQ(f.DriverVersion(), "580.159.04");  // from nvidia-smi: no /proc/driver/nvidia here
}

// Drivers before R535 reject the whole query for clocks_event_reasons.active: the script asks
// again with clocks_throttle_reasons.active and says so; the CSV header mapping then reads it.
TEST(GatherScript, RetriesTheQueryWithPreR535FieldNames) {
  for (std::string_view stream : {"0", "1"}) {
    std::string out = RunScript(PreR535SmiDir(), fmt::format("FIXTURES='{}' SMI_STDERR={}",
                                                             FixturePath(""), stream));
    Result<NodeFacts> r = ParseGather("r470", out);
    ASSERT_TRUE(r.ok()) << r.error().message;
    const Section* q = r->FindSection("nvidia-smi-query");
    EXPECT_EQ(q->outcome, Outcome::kOk) << stream << ": " << q->first_line;
    EXPECT_EQ(r->notes, std::vector<std::string>{
                            "nvidia-smi-query: nvidia-smi rejected clocks_event_reasons.active (a driver before "
                            "R535); asked again with clocks_throttle_reasons.active"});
    ASSERT_EQ(r->gpus.size(), 8u);
    EXPECT_EQ(r->gpus[0].clock_event_reasons, 1u);
    EXPECT_TRUE(r->HasNvidiaDriver());
    // The stand-in's topo -m prints 1.3 MB: the script sends the size, not the output.
    const Section* topo = r->FindSection("nvidia-smi-topo");
    EXPECT_EQ(topo->outcome, Outcome::kTooLarge);
    EXPECT_EQ(topo->first_line, "output is 1300000 bytes, over the section's cap of 1048576 bytes");
    EXPECT_LT(out.size(), 200u * 1024);
    EXPECT_EQ(r->FindSection("nvidia-smi-xml")->outcome, Outcome::kFailed);
  }
  std::string script = GatherScript();
  EXPECT_NE(script.find(std::string("gf_query ") + std::string(kQueryGpuFields) + " " +
                        std::string(kQueryGpuFieldsPreR535)),
            std::string::npos);
  std::string renamed(kQueryGpuFields);
  renamed.replace(renamed.find("clocks_event_reasons"), 20, "clocks_throttle_reasons");
  EXPECT_EQ(renamed, kQueryGpuFieldsPreR535);
}

TEST(ParseGather, FullNodeFromSections) {
  std::string csv = ReadFixture("nvidia-h200-1gpu/query-gpu.csv");
  std::string ib = ReadFixture("infiniband-sysfs.txt");
  Result<NodeFacts> r =
      ParseGather("gpu01", Output({{"nvidia-smi-query", csv},
                                   {"infiniband", ib},
                                   {"modules", "nvidia_peermem 16384 0 - Live 0x0 (OE)\n"},
                                   {"memlock", "unlimited\n"}}));
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->node, "gpu01");
  EXPECT_EQ(r->kernel, "6.8.0-45-generic");
  EXPECT_EQ(r->memory_bytes, 1024u * 1024);
  EXPECT_EQ(r->gpus.size(), 1u);
  EXPECT_EQ(r->ib.size(), 6u);
  EXPECT_TRUE(r->HasModule("nvidia-peermem"));
  EXPECT_TRUE(r->memlock->unlimited);
  EXPECT_EQ(r->FindSection("lscpu")->outcome, Outcome::kAbsent);
  EXPECT_EQ(r->FindSection("lscpu")->command, "lscpu");
}

// One unreadable optional section costs that section, not the node (issue #15 item 3).
TEST(ParseGather, UnparsableOptionalSectionIsIsolated) {
  std::string csv = ReadFixture("nvidia-h200-1gpu/query-gpu.csv");
  Result<NodeFacts> r = ParseGather(
      "gpu02", Output({{"nvidia-smi-query", csv}, {"nvidia-smi-topo", ReadFixture("garbage.bin") + "\n"},
                       {"infiniband", ReadFixture("infiniband-sysfs.txt")}}));
  ASSERT_TRUE(r.ok()) << r.error().message;
  const Section* topo = r->FindSection("nvidia-smi-topo");
  EXPECT_EQ(topo->outcome, Outcome::kUnparsed);
  EXPECT_EQ(topo->first_line, "line 1: binary data (NUL byte), not command output");
  EXPECT_FALSE(r->topology.has_value());
  EXPECT_EQ(r->gpus.size(), 1u);  // the other sections still count
  EXPECT_EQ(r->ib.size(), 6u);
  Result<NodeFacts> q =
      ParseGather("gpu01", Output({{"nvidia-smi-query", ReadFixture("query-gpu-truncated.csv")}}));
  ASSERT_TRUE(q.ok()) << q.error().message;
  EXPECT_EQ(q->FindSection("nvidia-smi-query")->outcome, Outcome::kUnparsed);
  EXPECT_EQ(q->FindSection("nvidia-smi-query")->first_line, "line 3: expected 19 fields, got 3");
  EXPECT_TRUE(q->gpus.empty());
}

TEST(ParseGather, RequiredSectionsStayFatalAndEveryOutputIsCapped) {
  EXPECT_EQ(ParseGather("gpu01", "@@gpuforge-facts begin format=1@@\n@@gpuforge-facts section=uname rc=0@@\n" +
                                     std::string(5000, 'x') + "\n@@gpuforge-facts end@@\n")
                .error()
                .message,
            "node gpu01: uname -r: output is 5001 bytes, over the section's cap of 4096 bytes");
  std::string out = Output({});
  std::string marker = "@@gpuforge-facts section=modules rc=absent@@\n";
  out.replace(out.find(marker), marker.size(), "@@gpuforge-facts section=modules rc=toolarge@@\n9000000\n");
  Result<NodeFacts> r = ParseGather("gpu02", out);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->FindSection("modules")->outcome, Outcome::kTooLarge);
  EXPECT_EQ(r->FindSection("modules")->first_line, "output is 9000000 bytes, over the section's cap of 1048576 bytes");
  EXPECT_FALSE(r->modules.has_value());
  std::size_t caps = 0;
  for (const SectionSpec& s : GatherSections()) caps += s.max_bytes;
  EXPECT_LE(caps, kMaxGatherBytes);
  EXPECT_LE(kMaxGatherBytes, 16u << 20);  // was 64 MiB per node, times the fanout
}

TEST(ParseGather, ErrorsNameTheNodeAndTheCommand) {
  std::string out = Output({});
  std::string marker = "@@gpuforge-facts section=uname rc=0@@\n6.8.0-45-generic\n";
  out.replace(out.find(marker), marker.size(), "@@gpuforge-facts section=uname rc=0@@\n\n");
  EXPECT_EQ(ParseGather("gpu01", out).error().message.substr(0, 22), "node gpu01: uname -r: ");
}

TEST(ParseGather, FailedOptionalToolIsRecordedNotFatal) {
  std::string out = Output({});
  std::string marker = "@@gpuforge-facts section=nvidia-smi-query rc=absent@@\n";
  out.replace(out.find(marker), marker.size(),
              "@@gpuforge-facts section=nvidia-smi-query rc=9@@\nNVIDIA-SMI has failed because it "
              "couldn't communicate with the NVIDIA driver.\n");
  Result<NodeFacts> r = ParseGather("gpu03", out);
  ASSERT_TRUE(r.ok()) << r.error().message;
  const Section* s = r->FindSection("nvidia-smi-query");
  EXPECT_EQ(s->outcome, Outcome::kFailed);
  EXPECT_EQ(s->exit_code, 9);
  EXPECT_EQ(s->first_line,
            "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.");
  EXPECT_FALSE(r->HasNvidiaDriver());
}

TEST(ParseGather, RequiredSectionFailureIsFatal) {
  std::string out = Output({});
  std::string marker = "@@gpuforge-facts section=uname rc=0@@";
  out.replace(out.find(marker), marker.size(), "@@gpuforge-facts section=uname rc=127@@");
  EXPECT_EQ(ParseGather("gpu04", out).error().message,
            "node gpu04: uname -r: exited with status 127");
}

TEST(ParseGather, TruncatedMissingAndForeignOutput) {
  std::string out = Output({});
  EXPECT_EQ(ParseGather("gpu05", out.substr(0, out.find("section=versions"))).error().message,
            "node gpu05: gather output ends before the end marker, after section infiniband "
            "(truncated?)");
  EXPECT_EQ(ParseGather("gpu06", "bash: sh: command not found\n").error().message,
            "node gpu06: no gather output (no begin marker); first line: 'bash: sh: command not "
            "found'");
  EXPECT_EQ(ParseGather("gpu07", "").error().message,
            "node gpu07: no gather output (no begin marker); first line: none");
  std::string twice = out;
  twice.insert(twice.find("@@gpuforge-facts end@@"), "@@gpuforge-facts section=uname rc=0@@\nx\n");
  EXPECT_EQ(ParseGather("gpu08", twice).error().message, "node gpu08: section uname appears twice");
  std::string missing = out;
  std::string lscpu = "@@gpuforge-facts section=lscpu rc=absent@@\n";
  missing.erase(missing.find(lscpu), lscpu.size());
  EXPECT_EQ(ParseGather("gpu09", missing).error().message,
            "node gpu09: gather output has no section lscpu");
  EXPECT_EQ(ParseGather("gpu10", "@@gpuforge-facts begin format=2@@\n").error().message,
            "node gpu10: gather output has '@@gpuforge-facts begin format=2@@', this gpuforge "
            "reads @@gpuforge-facts begin format=1@@");
  EXPECT_EQ(ParseGather("gpu11", ReadFixture("garbage.bin")).error().message.substr(0, 47),
            "node gpu11: no gather output (no begin marker);");
}

TEST(ParseGather, BannerBeforeAndUnknownSectionsAreIgnored) {
  std::string out = "Welcome to gpu12\n" + Output({});
  out.insert(out.find("@@gpuforge-facts end@@"),
             "@@gpuforge-facts section=from-the-future rc=0@@\nanything\n");
  Result<NodeFacts> r = ParseGather("gpu12", out);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->FindSection("from-the-future"), nullptr);
}

}  // namespace
}  // namespace gpuforge::facts
