#include "gpuforge/facts/gather.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <functional>

#include "facts/pci_tree.h"
#include "facts/text.h"
#include "gpuforge/facts/parse.h"

namespace gpuforge::facts {

namespace {

constexpr std::string_view kMarker = "@@gpuforge-facts ";
constexpr std::string_view kBegin = "@@gpuforge-facts begin format=1@@";
constexpr std::string_view kEnd = "@@gpuforge-facts end@@";

constexpr std::size_t KiB = 1024, MiB = 1024 * KiB;

// Caps are a few times the largest real output seen: an 8-GPU `nvidia-smi -q -x` is ~250 KiB,
// so 4 MiB holds well over 64 GPUs; lscpu of a 2-socket, 384-thread host is ~3 KiB.
constexpr std::array kSections = {
    SectionSpec{"os-release", "cat /etc/os-release", false, 64 * KiB},
    SectionSpec{"uname", "uname -r", true, 4 * KiB},
    SectionSpec{"lscpu", "lscpu", false, 256 * KiB},
    SectionSpec{"meminfo", "cat /proc/meminfo", true, 64 * KiB},
    SectionSpec{"numa", "/sys/devices/system/node", false, 1 * MiB},
    SectionSpec{"pci", "/sys/bus/pci/devices", false, 2 * MiB},
    SectionSpec{"pci-tree", "readlink -f /sys/bus/pci/devices/*", false, 2 * MiB},
    SectionSpec{"nvidia-version", "cat /proc/driver/nvidia/version", false, 16 * KiB},
    SectionSpec{"nvidia-smi-query", "nvidia-smi --query-gpu=... --format=csv", false, 1 * MiB},
    SectionSpec{"nvidia-smi-xml", "nvidia-smi -q -x", false, 4 * MiB},
    SectionSpec{"nvidia-smi-topo", "nvidia-smi topo -m", false, 1 * MiB},
    SectionSpec{"infiniband", "/sys/class/infiniband", false, 1 * MiB},
    SectionSpec{"versions", "versions (nvcc, dpkg-query, rpm, ofed_info, slurmd)", false, 64 * KiB},
    SectionSpec{"modules", "cat /proc/modules", false, 1 * MiB},
    SectionSpec{"services", "systemctl", false, 16 * KiB},
    SectionSpec{"memlock", "ulimit -l", false, 4 * KiB},
    // #31: LLDP neighbours (lldpd's control socket is group _lldpd: root or that group) and
    // each interface's speed. 1 MiB of json0 is ~600 neighbours.
    SectionSpec{"lldp", "lldpctl -f json0", false, 1 * MiB},
    SectionSpec{"net-speed", "/sys/class/net/*/speed", false, 64 * KiB},
    // #33 (init): each NVMe namespace's size and model; 64 KiB is ~800 drives.
    SectionSpec{"nvme", "/sys/block/nvme*", false, 64 * KiB},
};

// Markers, the banner before the begin marker and what a section prints for toolarge.
constexpr std::size_t kGatherSlack = 256 * KiB;

constexpr std::size_t SumOfCaps() {
  std::size_t n = 0;
  for (const SectionSpec& s : kSections) n += s.max_bytes;
  return n;
}
static_assert(SumOfCaps() + kGatherSlack <= kMaxGatherBytes,
              "raise kMaxGatherBytes with the section caps: the SSH layer cuts a node's output there");


// The script. Why each odd line is there:
// - LC_ALL=C: lscpu and systemctl translate their keys otherwise.
// - PATH is extended, not replaced: a login shell of an ordinary user lacks the sbin dirs, and
//   a stand-in nvidia-smi earlier in PATH (tests) must still win.
// - Output of each command is captured first so the marker can carry its exit status.
// - Every sysfs loop tests what it reads: globs that match nothing stay literal in sh.
// - Functions end in `return 0`: a final failed test must not read as a failed section.
// - gf_emit sends no more than a section's cap (gf_cap, from kSections): ${#v} counts bytes
//   under LC_ALL=C, so the controller never buffers more than kMaxGatherBytes of a node.
// - gf_query asks again with the pre-R535 field names when nvidia-smi rejects the query for an
//   unknown field: it refuses the whole query, so one new field would cost every GPU fact.
//   The wording is nvidia-smi's, e.g. 'Field "clocks_throttle_reasons.unknown" is not a valid
//   field to query.' (github.com/plambe/zabbix-nvidia-smi-multi-gpu/issues/17); it goes to
//   stdout or stderr depending on the version, so both are searched.
constexpr std::string_view kScriptHead = R"SH(# gpuforge facts, format 1. POSIX sh; needs no root.
LC_ALL=C
export LC_ALL
PATH="$PATH:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
export PATH
gf_m=@@gpuforge-facts
if command -v timeout >/dev/null 2>&1; then gf_t="timeout 120"; else gf_t=""; fi
gf_emit() {
  gf_cap "$1"
  if [ "${#3}" -gt "$gf_c" ]; then
    printf '%s section=%s rc=toolarge@@\n%s\n' "$gf_m" "$1" "${#3}"
    return 0
  fi
  if [ -n "$4" ]; then
    printf '%s section=%s rc=%s note=%s@@\n' "$gf_m" "$1" "$2" "$4"
  else
    printf '%s section=%s rc=%s@@\n' "$gf_m" "$1" "$2"
  fi
  if [ -n "$3" ]; then printf '%s\n' "$3"; fi
}
gf_run() {
  gf_n=$1
  shift
  if command -v "$1" >/dev/null 2>&1; then
    gf_o=$($gf_t "$@" 2>/dev/null)
    gf_rc=$?
    gf_emit "$gf_n" "$gf_rc" "$gf_o"
  else
    gf_emit "$gf_n" absent ""
  fi
}
gf_file() {
  if [ -r "$2" ]; then
    gf_o=$(cat "$2" 2>/dev/null)
    gf_rc=$?
    gf_emit "$1" "$gf_rc" "$gf_o"
  else
    gf_emit "$1" absent ""
  fi
}
gf_dir() {
  if [ -d "$2" ]; then
    gf_o=$($3)
    gf_rc=$?
    gf_emit "$1" "$gf_rc" "$gf_o"
  else
    gf_emit "$1" absent ""
  fi
}
gf_attr() {
  if [ -r "$2" ]; then
    gf_v=$(head -n 1 "$2" 2>/dev/null) && printf '%s %s\n' "$1" "$gf_v"
  fi
  return 0
}
gf_numa() {
  for d in /sys/devices/system/node/node[0-9]*; do
    [ -d "$d" ] || continue
    n=${d##*/}
    gf_attr "$n cpulist" "$d/cpulist"
    if [ -r "$d/meminfo" ]; then
      m=$(grep MemTotal "$d/meminfo" 2>/dev/null) && printf '%s meminfo %s\n' "$n" "$m"
    fi
  done
  return 0
}
gf_pci() {
  for d in /sys/bus/pci/devices/*; do
    [ -r "$d/class" ] || continue
    c=$(cat "$d/class" 2>/dev/null)
    v=$(cat "$d/vendor" 2>/dev/null)
    case "$c" in
      0x03*) [ "$v" = 0x10de ] || continue ;;
      0x02*) ;;
      *) continue ;;
    esac
    b=${d##*/}
    printf '%s class %s\n%s vendor %s\n' "$b" "$c" "$b" "$v"
    for a in device numa_node current_link_speed max_link_speed current_link_width max_link_width; do
      gf_attr "$b $a" "$d/$a"
    done
    for n in "$d"/net/* "$d"/infiniband/*; do
      [ -e "$n" ] || continue
      k=${n%/*}
      printf '%s %s %s\n' "$b" "${k##*/}" "${n##*/}"
    done
  done
  return 0
}
gf_speeds() {
  for d in /sys/class/net/*; do
    [ -r "$d/speed" ] || continue
    v=$(cat "$d/speed" 2>/dev/null) || continue
    printf '%s %s\n' "${d##*/}" "$v"
  done
  return 0
}
# /sys/block holds whole disks only; nvmeXcYnZ are the hidden per-path nodes of native NVMe
# multipath (one namespace seen through controller Y), counted once as nvmeXnZ. size is in
# 512-byte sectors whatever the logical block size (include/linux/blkdev.h, SECTOR_SHIFT 9).
gf_nvme() {
  for d in /sys/block/nvme*; do
    [ -r "$d/size" ] || continue
    case ${d##*/} in nvme*c*n*) continue ;; esac
    s=$(cat "$d/size" 2>/dev/null) || continue
    m=""
    [ -r "$d/device/model" ] && m=$(head -n 1 "$d/device/model" 2>/dev/null)
    printf '%s %s %s\n' "${d##*/}" "$s" "$m"
  done
  return 0
}
gf_ib() {
  for d in /sys/class/infiniband/*; do
    [ -d "$d" ] || continue
    n=${d##*/}
    gf_attr "$n - fw_ver" "$d/fw_ver"
    gf_attr "$n - board_id" "$d/board_id"
    gf_attr "$n - node_guid" "$d/node_guid"
    for e in "$d"/device/net/*; do
      [ -e "$e" ] && printf '%s - net %s\n' "$n" "${e##*/}"
    done
    for p in "$d"/ports/*; do
      [ -d "$p" ] || continue
      for a in state phys_state rate link_layer lid; do
        gf_attr "$n ${p##*/} $a" "$p/$a"
      done
      gf_attr "$n ${p##*/} gid0" "$p/gids/0"
    done
  done
  return 0
}
gf_dpkg() {
  v=$(dpkg-query -W -f='${db:Status-Abbrev} ${Version}' "$2" 2>/dev/null)
  case "$v" in
    ii*) printf '%s %s\n' "$1" "${v##* }" ;;
  esac
  return 0
}
gf_versions() {
  c=$(command -v nvcc 2>/dev/null) || c=/usr/local/cuda/bin/nvcc
  if [ -x "$c" ]; then
    v=$($gf_t "$c" --version 2>/dev/null | grep release | head -n 1) && [ -n "$v" ] && printf 'nvcc %s\n' "$v"
  fi
  if [ -r /usr/local/cuda/version.json ]; then
    v=$(sed -n 's/.*"version" *: *"\([^"]*\)".*/\1/p' /usr/local/cuda/version.json | head -n 1)
    [ -n "$v" ] && printf 'cuda_json %s\n' "$v"
  fi
  if [ -r /usr/local/cuda/version.txt ]; then
    printf 'cuda_txt %s\n' "$(head -n 1 /usr/local/cuda/version.txt)"
  fi
  if command -v dpkg-query >/dev/null 2>&1; then
    gf_dpkg nccl_dpkg libnccl2
    gf_dpkg rdma_dpkg rdma-core
  fi
  if command -v rpm >/dev/null 2>&1; then
    v=$(rpm -q --qf '%{VERSION}-%{RELEASE}' libnccl 2>/dev/null) && printf 'nccl_rpm %s\n' "$v"
    v=$(rpm -q --qf '%{VERSION}-%{RELEASE}' rdma-core 2>/dev/null) && printf 'rdma_rpm %s\n' "$v"
  fi
  for f in /usr/lib/x86_64-linux-gnu/libnccl.so.2.* /usr/lib/aarch64-linux-gnu/libnccl.so.2.* \
      /usr/lib64/libnccl.so.2.* /usr/local/cuda/lib64/libnccl.so.2.* /usr/local/nccl/lib/libnccl.so.2.*; do
    [ -e "$f" ] && printf 'nccl_lib %s\n' "${f##*/}"
  done
  if command -v ofed_info >/dev/null 2>&1; then
    v=$($gf_t ofed_info -s 2>/dev/null | head -n 1) && [ -n "$v" ] && printf 'ofed %s\n' "$v"
  fi
  if command -v slurmd >/dev/null 2>&1; then
    v=$($gf_t slurmd -V 2>/dev/null | head -n 1) && [ -n "$v" ] && printf 'slurmd %s\n' "$v"
  fi
  return 0
}
gf_services() {
  for u in nvidia-persistenced nvidia-fabricmanager slurmd; do
    l=$($gf_t systemctl show -p LoadState "$u.service" 2>/dev/null | head -n 1)
    a=$($gf_t systemctl is-active "$u.service" 2>/dev/null | head -n 1)
    printf '%s %s %s\n' "$u" "${l#LoadState=}" "$a"
  done
  return 0
}
printf '%s begin format=1@@\n' "$gf_m"
if [ -r /etc/os-release ]; then gf_file os-release /etc/os-release; else gf_file os-release /usr/lib/os-release; fi
gf_run uname uname -r
gf_run lscpu lscpu
gf_file meminfo /proc/meminfo
gf_dir numa /sys/devices/system/node gf_numa
gf_dir pci /sys/bus/pci/devices gf_pci
gf_file nvidia-version /proc/driver/nvidia/version
)SH";

constexpr std::string_view kScriptQuery = R"SH(gf_query() {
  if ! command -v nvidia-smi >/dev/null 2>&1; then
    gf_emit nvidia-smi-query absent ""
    return 0
  fi
  gf_o=$($gf_t nvidia-smi --query-gpu="$1" --format=csv 2>/dev/null)
  gf_rc=$?
  gf_n=""
  if [ "$gf_rc" != 0 ]; then
    gf_e=$($gf_t nvidia-smi --query-gpu="$1" --format=csv 2>&1 | head -n 20)
    case "$gf_o $gf_e" in
      *"is not a valid field to query"*)
        gf_o=$($gf_t nvidia-smi --query-gpu="$2" --format=csv 2>/dev/null)
        gf_rc=$?
        gf_n=pre-r535-fields
        ;;
    esac
  fi
  gf_emit nvidia-smi-query "$gf_rc" "$gf_o" "$gf_n"
  return 0
}
)SH";

constexpr std::string_view kScriptTail = R"SH(gf_run nvidia-smi-xml nvidia-smi -q -x
gf_run nvidia-smi-topo nvidia-smi topo -m
gf_dir infiniband /sys/class/infiniband gf_ib
gf_o=$(gf_versions)
gf_emit versions 0 "$gf_o"
gf_file modules /proc/modules
if command -v systemctl >/dev/null 2>&1; then
  gf_o=$(gf_services)
  gf_emit services 0 "$gf_o"
else
  gf_emit services absent ""
fi
gf_o=$(ulimit -l 2>/dev/null)
gf_rc=$?
gf_emit memlock "$gf_rc" "$gf_o"
gf_run lldp lldpctl -f json0
gf_dir net-speed /sys/class/net gf_speeds
gf_dir nvme /sys/block gf_nvme
printf '%s end@@\n' "$gf_m"
)SH";

// Printable, short: a failed command's first line goes into reports.
std::string FirstLine(std::string_view body) {
  for (std::string_view l : text::Lines(body)) {
    l = text::Trim(l);
    if (l.empty()) continue;
    std::string q = text::Quote(l, 120);
    return q.substr(1, q.size() - 2);
  }
  return "";
}

// Moves a parsed value into the facts, or reports why not.
template <class T, class Put>
Status Apply(Result<T> r, Put put) {
  if (!r) return r.error();
  put(std::move(*r));
  return Status::Ok();
}

Status ParseSection(std::string_view name, std::string_view body, NodeFacts& f, SmiLog& xml) {
  if (name == "os-release")
    return Apply(ParseOsRelease(body), [&](OsRelease v) { f.os = std::move(v); });
  if (name == "uname")
    return Apply(ParseUname(body), [&](std::string v) { f.kernel = std::move(v); });
  if (name == "lscpu") return Apply(ParseLscpu(body), [&](CpuInfo v) { f.cpu = std::move(v); });
  if (name == "meminfo")
    return Apply(ParseMeminfo(body), [&](std::uint64_t v) { f.memory_bytes = v; });
  if (name == "numa")
    return Apply(ParseNumaSysfs(body), [&](std::vector<NumaNode> v) { f.numa = std::move(v); });
  if (name == "pci")
    return Apply(ParsePciSysfs(body), [&](std::vector<PciDevice> v) { f.pci = std::move(v); });
  if (name == "pci-tree") {
    // Refused on its own: a hostile tree must not cost the node its other facts.
    Result<model::PciTree> t = ParsePciTree(body);
    if (t) f.pci_tree = std::move(*t);
    if (!t) f.pci_tree_refused = t.error().message;
    return Status::Ok();
  }
  if (name == "nvidia-version")
    return Apply(ParseDriverVersion(body), [&](DriverInfo v) { f.driver = std::move(v); });
  if (name == "nvidia-smi-query")
    return Apply(ParseQueryGpuCsv(body), [&](std::vector<Gpu> v) { f.gpus = std::move(v); });
  if (name == "nvidia-smi-xml")
    return Apply(ParseSmiXml(body), [&](SmiLog v) { xml = std::move(v); });
  if (name == "nvidia-smi-topo")
    return Apply(ParseTopo(body), [&](TopoMatrix v) { f.topology = std::move(v); });
  if (name == "infiniband")
    return Apply(ParseInfinibandSysfs(body), [&](std::vector<IbDevice> v) { f.ib = std::move(v); });
  if (name == "versions")
    return Apply(ParseVersions(body), [&](Versions v) { f.versions = std::move(v); });
  if (name == "modules")
    return Apply(ParseModules(body), [&](std::vector<std::string> v) { f.modules = std::move(v); });
  if (name == "services")
    return Apply(ParseServices(body), [&](std::vector<Service> v) { f.services = std::move(v); });
  if (name == "memlock") return Apply(ParseMemlock(body), [&](Memlock v) { f.memlock = v; });
  if (name == "lldp")
    return Apply(ParseLldpctlJson(body, fmt::format("lldpctl on {}", f.node)),
                 [&](LldpSeen v) { f.lldp = std::move(v); });
  if (name == "net-speed")
    return Apply(ParseNetSpeeds(body), [&](std::map<std::string, long long> v) { f.net_speed_mbps = std::move(v); });
  if (name == "nvme") return Apply(ParseNvme(body), [&](std::vector<NvmeDrive> v) { f.nvme = std::move(v); });
  return Status::Ok();
}

const SectionSpec* FindSpec(std::string_view name) {
  for (const SectionSpec& s : kSections) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

struct RawSection {
  std::string name;
  std::string rc;
  std::string note;
  std::string_view body;
};

// "@@gpuforge-facts section=<name> rc=<rc>[ note=<note>]@@" -> name, rc, note.
std::optional<RawSection> ReadMarker(std::string_view line) {
  constexpr std::string_view kHead = "@@gpuforge-facts section=";
  if (!line.starts_with(kHead) || !line.ends_with("@@")) return std::nullopt;
  std::string_view inner = line.substr(kHead.size(), line.size() - kHead.size() - 2);
  std::size_t sp = inner.find(" rc=");
  if (sp == std::string_view::npos) return std::nullopt;
  std::string_view name = inner.substr(0, sp);
  std::string_view rc = inner.substr(sp + 4);
  std::string_view note;
  if (std::size_t n = rc.find(" note="); n != std::string_view::npos) {
    note = rc.substr(n + 6);
    rc = rc.substr(0, n);
    if (!text::IsToken(note, 32)) return std::nullopt;
  }
  if (!text::IsToken(name, 32) || !text::IsToken(rc, 8)) return std::nullopt;
  return RawSection{std::string(name), std::string(rc), std::string(note), {}};
}

// What a section's note means, for reports; a note this gpuforge does not know is shown as is.
std::string NoteText(std::string_view note) {
  if (note == "pre-r535-fields") {
    return "nvidia-smi rejected clocks_event_reasons.active (a driver before R535); asked again "
           "with clocks_throttle_reasons.active";
  }
  return std::string(note);
}

}  // namespace

std::span<const SectionSpec> GatherSections() { return kSections; }

std::string GatherScript() {
  // gf_cap sets gf_c to the cap of section $1; it precedes everything that calls gf_emit.
  std::string caps = "gf_cap() {\n  case \"$1\" in\n";
  for (const SectionSpec& s : kSections) caps += fmt::format("    {}) gf_c={} ;;\n", s.name, s.max_bytes);
  caps += "    *) gf_c=65536 ;;\n  esac\n}\n";
  std::string head(kScriptHead);
  const std::string_view anchor = "gf_emit() {";
  head.insert(head.find(anchor), caps);
  std::string query(kScriptQuery);
  const std::string_view begin = "printf '%s begin format=1@@\\n' \"$gf_m\"\n";
  head.insert(head.find(begin), query);
  return fmt::format("{}{}gf_query {} {}\n{}", head, PciTreeScript(), kQueryGpuFields, kQueryGpuFieldsPreR535, kScriptTail);
}

Result<NodeFacts> ParseGather(std::string_view node, std::string_view output) {
  auto fail = [&](std::string_view what) { return Error{fmt::format("node {}: {}", node, what)}; };
  if (output.size() > kMaxGatherBytes) {
    return fail(fmt::format("gather output is {} bytes, over the {} byte limit", output.size(),
                            kMaxGatherBytes));
  }
  // Walk the output line by line, keeping byte offsets so bodies are exact views.
  std::vector<RawSection> raw;
  bool begun = false, ended = false;
  std::size_t body_start = 0;
  std::string_view first_line;
  auto close_body = [&](std::size_t end) {
    if (!raw.empty()) raw.back().body = output.substr(body_start, end - body_start);
  };
  std::size_t pos = 0;
  while (pos < output.size() && !ended) {
    std::size_t nl = output.find('\n', pos);
    std::size_t end = nl == std::string_view::npos ? output.size() : nl;
    std::string_view line = output.substr(pos, end - pos);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    std::size_t next = nl == std::string_view::npos ? output.size() : nl + 1;
    if (first_line.empty() && !text::Trim(line).empty()) first_line = line;
    if (!begun) {
      if (line.starts_with(kMarker) && line.find(" begin ") != std::string_view::npos) {
        if (line != kBegin) {
          return fail(fmt::format("gather output has {}, this gpuforge reads {}", text::Quote(line),
                                  kBegin));
        }
        begun = true;
      }
    } else if (line == kEnd) {
      close_body(pos);
      ended = true;
    } else if (line.starts_with(kMarker)) {
      std::optional<RawSection> s = ReadMarker(line);
      if (!s && nl == std::string_view::npos) break;  // cut off inside the marker: truncated
      if (!s) return fail(fmt::format("bad section marker {}", text::Quote(line)));
      close_body(pos);
      raw.push_back(std::move(*s));
      body_start = next;
    }
    pos = next;
  }
  if (!begun) {
    return fail(fmt::format("no gather output (no begin marker); first line: {}",
                            first_line.empty() ? std::string("none") : text::Quote(first_line)));
  }
  if (!ended) {
    return fail(
        fmt::format("gather output ends before the end marker, after section {} "
                    "(truncated?)",
                    raw.empty() ? std::string("none") : raw.back().name));
  }

  NodeFacts f;
  f.node = std::string(node);
  SmiLog xml;
  for (const RawSection& r : raw) {
    const SectionSpec* spec = FindSpec(r.name);
    if (!spec) continue;  // a newer script's section: not ours to read
    if (f.FindSection(r.name)) return fail(fmt::format("section {} appears twice", r.name));
    Section s{r.name, std::string(spec->command), Outcome::kOk, 0, ""};
    if (!r.note.empty()) f.notes.push_back(fmt::format("{}: {}", r.name, NoteText(r.note)));
    if (r.rc == "absent") {
      s.outcome = Outcome::kAbsent;
    } else if (r.rc == "toolarge") {
      s.outcome = Outcome::kTooLarge;
      s.first_line = fmt::format("output is {} bytes, over the section's cap of {} bytes",
                                 text::ToUint(text::Trim(r.body)).value_or(0), spec->max_bytes);
    } else {
      std::optional<int> rc = text::ToIntIn(r.rc, 0, 255);
      if (!rc) return fail(fmt::format("{}: bad exit status {}", spec->command, text::Quote(r.rc)));
      s.exit_code = *rc;
      if (*rc != 0) {
        s.outcome = Outcome::kFailed;
        s.first_line = FirstLine(r.body);
      } else if (r.body.size() > spec->max_bytes) {
        // A script that does not cap (an older one): the same bound on this side.
        s.outcome = Outcome::kTooLarge;
        s.first_line = fmt::format("output is {} bytes, over the section's cap of {} bytes", r.body.size(),
                                   spec->max_bytes);
      }
    }
    if (s.outcome != Outcome::kOk && spec->required) {
      std::string why = s.outcome == Outcome::kAbsent   ? std::string("not available")
                        : s.outcome == Outcome::kFailed ? fmt::format("exited with status {}", s.exit_code)
                                                        : s.first_line;
      return fail(fmt::format("{}: {}", spec->command, why));
    }
    if (s.outcome == Outcome::kOk) {
      // One unreadable optional section costs that section only: its facts stay unset, the
      // section says why, and drift reports it (facts.section_unparsed) instead of the node.
      if (Status st = ParseSection(r.name, r.body, f, xml); !st) {
        if (spec->required) return fail(fmt::format("{}: {}", spec->command, st.error().message));
        s.outcome = Outcome::kUnparsed;
        s.first_line = st.error().message;
      }
    }
    f.sections.push_back(std::move(s));
  }
  for (const SectionSpec& spec : kSections) {
    if (!f.FindSection(spec.name)) {
      return fail(fmt::format("gather output has no section {}", spec.name));
    }
  }
  if (!xml.cuda_version.empty()) f.driver_cuda_version = xml.cuda_version;
  for (GpuDetail& d : xml.gpus) {
    for (Gpu& g : f.gpus) {
      if (g.pci_bus_id == d.pci_bus_id) g.detail = std::move(d);
    }
  }
  // Drivers whose query lacks pci.device_id still name the bus id: sysfs has the device.
  for (Gpu& g : f.gpus) {
    if (g.pci_device_id) continue;
    for (const PciDevice& d : f.pci) {
      if (d.bdf == g.pci_bus_id && d.kind == PciKind::kGpu && d.device <= 0xffff) {
        g.pci_device_id = static_cast<std::uint16_t>(d.device);
      }
    }
  }
  return f;
}

}  // namespace gpuforge::facts
