// Designed link lists from a site's own files (#31 part 2).
//
// UFM's topology design CSV, the NDT ("network design tool") file of UFM's topology-compare
// (topodiff) plugin. Its grammar, as UFM's own code reads and writes it
// (github.com/Mellanox/ufm_sdk_3.0, plugins/UFM_NDT_Plugin: ufm_sim_web_service/topo_diff/
// topo_diff.py parse_ndt_file/parse_ndt_port, build/config/ndt.conf switch_patterns and
// host_patterns, ndt_file_creator.py, and the files under tests/):
// - RFC 4180 comma-separated values read by Python's csv.DictReader: the first line is the
//   header, columns are found by name, any other columns (LinkType, Speed, rack, State, ...)
//   are allowed and ignored. The start device's column is "StartDevice", "#StartDevice" or
//   "#Fields:StartDevice"; the others are "StartPort", "EndDevice", "EndPort". Cells may carry
//   spaces around them (" Data"), which are trimmed.
// - A switch port is "Port N" (ndt.conf's first switch pattern "^Port (\d+)$"); a bare N is
//   taken too. Director blades ("Blade 16_Port 2/20") and split ports ("Port 1/16/1") have no
//   place in gpuforge's 1..ports numbering and are refused.
// - A host end is written two ways: the device is the host and the port its node description
//   "HOST DEV" (tests/positive_flow_ndts/switch_to_host_topo1.ndt:
//   "SAT111092710053,SAT111092710053 ibp11s0f0"), or the device is the node description
//   "HOST DEV" and the port "Port N", the HCA's port (ndt_file_creator.py: "r-ufm64 mlx5_0,
//   Port 1"). DEV names the NIC by its name (mlx5_0) or its netdev (ibp11s0f0); a port number
//   must then be that NIC's `port`. A port cell that is only a NIC name is taken as well.
//   Where a host's port is only a number ("Port 2", "IB Port 2", "2", as in the hand-made
//   tests/other_ndts/ndth2s.csv), the number is the NIC's place in the profile's `nics` list,
//   counting from 1: UFM leaves the meaning of a host port number to the site, and the `nics`
//   order is the one order the inventory gives.
// - UFM compares names regardless of case (topo_diff.py Link.unique_key) and its converters
//   upper-case host names, so a name that matches no node or switch exactly is looked up
//   without case.
// - A row with no end device, whose State is "Disabled" (ndt_file_creator.py writes those for
//   ports left unconnected), designs no cable and is skipped.
//
// ibdiagnet's topology file (`ibdiagnet -t FILE`), as ibdm reads it: IBFabric::parseTopology in
// ibutils 1.5.7.1 ibdm/ibdm/Fabric.cpp, with the demo files beside it (ibdiag/demo/network.topo):
// - "#" at the start of a line (after blanks) makes it a comment (regex ignoreLine).
// - A system line is "TYPE NAME", optionally followed by " CFG:..." (regex sysLine:
//   ^[ \t]*([^/ \t]+)[ \t]+([^/ \t]+)[ \t]*( CFG:(.*))?$); neither word holds a '/'. TYPE is the
//   ibnl system type (MTS3600, MT23108); gpuforge finds NAME among its nodes and switches and
//   does not judge TYPE, whose meaning lives in ibnl files it does not read.
// - A port line starts with a blank and reads "LPORT -> RTYPE RNAME RPORT" (regex portLine:
//   ^[ \t]+(\S+)[ \t]+-((1|4|8|12)[xX]-)?((2.5|5|10)G-)?>[ \t]+(\S+)[ \t]+(\S+)[ \t]+(\S+)[ \t]*$);
//   it is a cable from the current system's LPORT. The arrow's width and speed are read as
//   ibdm reads them and not used: the design's rate is the inventory's, as for the CSV.
// - An empty line ends the system; a port line with no system before it is an error in ibdm
//   and here. ibdm skips a line that is none of these with a warning; here it is an error, a
//   design file must not be half read.
// - Ports are system ports. A switch's are "P<n>" (the ibnl SYSTEM's port names for a fixed
//   switch); a director's "L<k>/P<n>" have no place in the 1..ports numbering and are refused.
//   A host's are "P<n>" for its first HCA and "U<k>/P<n>" for its k-th (IBFabric::addLink names
//   them so); the k-th HCA is the k-th distinct NIC name in the profile's `nics` order, and
//   n must be that NIC's `port`.
// - The demo files list each switch-to-switch cable from both ends. A cable seen from its
//   other end agrees with the first listing or is an error; it is one cable, not two.

#include "gpuforge/inventory/link_import.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <tuple>
#include <utility>
#include <vector>

#include "gpuforge/base/names.h"
#include "gpuforge/base/read_file.h"
#include "gpuforge/base/text.h"

namespace gpuforge::inventory {

namespace {

// Past this many errors the rest of the file is not read: a wrong file must not print a
// screenful per line, nor spend a "did you mean" search on each of 16,384 rows.
constexpr std::size_t kMaxErrors = 50;

using gpuforge::text::Lower;
using gpuforge::text::Trim;

std::optional<int> Number(std::string_view s) {
  int v = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || ptr != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

// "Port N", "IB Port N" or "N".
std::optional<int> PortNumber(std::string_view s) {
  for (std::string_view prefix : {"Port ", "IB Port ", "port "}) {
    if (s.substr(0, prefix.size()) == prefix) return Number(Trim(s.substr(prefix.size())));
  }
  return Number(s);
}

struct Cell {
  std::string text;  // trimmed, quotes removed
  int col = 1;       // 1-based byte column of the cell's first character
  int width = 1;
};

// One CSV line into cells (RFC 4180 quoting; a quoted cell may not span lines).
bool SplitCsv(std::string_view line, std::vector<Cell>* cells, std::string* err, int* err_col) {
  cells->clear();
  std::size_t i = 0;
  while (true) {
    Cell c;
    std::size_t start = i;
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    if (i < line.size() && line[i] == '"') {
      const std::size_t quote = i++;
      std::string v;
      bool closed = false;
      while (i < line.size()) {
        if (line[i] == '"') {
          if (i + 1 < line.size() && line[i + 1] == '"') {
            v.push_back('"');
            i += 2;
            continue;
          }
          closed = true;
          ++i;
          break;
        }
        v.push_back(line[i++]);
      }
      if (!closed) {
        *err = "this quote is never closed (a quoted field must end on its line)";
        *err_col = static_cast<int>(quote) + 1;
        return false;
      }
      while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
      if (i < line.size() && line[i] != ',') {
        *err = "text after a closing quote; a quoted field ends at the quote";
        *err_col = static_cast<int>(i) + 1;
        return false;
      }
      c.text = std::string(Trim(v));
      c.col = static_cast<int>(quote) + 1;
      c.width = static_cast<int>(i - quote);
    } else {
      std::size_t end = line.find(',', i);
      if (end == std::string_view::npos) end = line.size();
      std::string_view raw = line.substr(start, end - start);
      if (raw.find('"') != std::string_view::npos) {
        *err = "a quote inside an unquoted field; quote the whole field and double the quote";
        *err_col = static_cast<int>(start + raw.find('"')) + 1;
        return false;
      }
      std::string_view t = Trim(raw);
      c.text = std::string(t);
      c.col = static_cast<int>(start + (t.empty() ? 0 : raw.find(t.front()))) + 1;
      c.width = std::max<int>(1, static_cast<int>(t.size()));
      i = end;
    }
    cells->push_back(std::move(c));
    if (i >= line.size()) return true;
    ++i;  // the comma
  }
}

class Importer {
 public:
  Importer(const SourceFile& src, const model::Cluster& cluster, Diagnostics* diags)
      : src_(src), cluster_(cluster), diags_(diags) {
    for (const model::Node& n : cluster.nodes) Index(n.name, Dev{&n, nullptr});
    for (const model::Switch& s : cluster.switches) Index(s.name, Dev{nullptr, &s});
    for (const model::Profile& p : cluster.profiles) profiles_.emplace(p.name, &p);
  }

  std::vector<model::Link> ReadUfmCsv();
  std::vector<model::Link> ReadIbdmTopo();

 private:
  struct Dev {
    const model::Node* node = nullptr;
    const model::Switch* sw = nullptr;
  };
  struct End {
    model::Endpoint ep;
    const void* key_device = nullptr;
    std::uintptr_t key_at = 0;  // switch port number, or the address of the NIC's NicSpec
    double rate = 0;
  };
  struct EndKey {
    const void* device;
    std::uintptr_t at;
    bool operator==(const EndKey&) const = default;
  };
  struct EndHash {
    std::size_t operator()(const EndKey& k) const {
      return std::hash<const void*>{}(k.device) ^
             (std::hash<std::uintptr_t>{}(k.at) * 0x9e3779b97f4a7c15ULL);
    }
  };

  void Index(const std::string& name, Dev d) {
    exact_.emplace(name, d);
    auto [it, inserted] = folded_.emplace(Lower(name), d);
    if (!inserted && (it->second.node != d.node || it->second.sw != d.sw))
      it->second = Dev{};  // ambiguous
  }
  const Dev* Find(std::string_view name) const {
    if (auto it = exact_.find(std::string(name)); it != exact_.end()) return &it->second;
    if (auto it = folded_.find(Lower(name));
        it != folded_.end() && (it->second.node || it->second.sw))
      return &it->second;
    return nullptr;
  }
  const model::Profile* ProfileOf(const model::Node& n) const {
    auto it = profiles_.find(n.profile);
    return it == profiles_.end() ? nullptr : it->second;
  }

  void Error(int line, const Cell& c, std::string message) {
    if (errors_ >= kMaxErrors) return;
    diags_->Error(SourcePos{src_.path(), line, c.col}, std::move(message), c.width);
    if (++errors_ == kMaxErrors) {
      diags_->Error(SourcePos{src_.path(), line, 0},
                    fmt::format("{} errors; the rest of the file is not read", kMaxErrors));
    }
  }
  std::string DidYouMean(std::string_view word) {
    if (known_.empty()) {
      for (const auto& s : cluster_.switches) known_.push_back(s.name);
      if (cluster_.nodes.size() < 5000) {
        for (const auto& n : cluster_.nodes) known_.push_back(n.name);
      }
    }
    if (auto best = names::Closest(word, known_)) return fmt::format("; did you mean '{}'?", *best);
    return "";
  }

  static End SwitchEnd(const model::Switch& sw, int port) {
    End e;
    e.ep.kind = model::Endpoint::Kind::kSwitchPort;
    e.ep.device = sw.name;
    e.ep.port = port;
    e.key_device = &sw;
    e.key_at = static_cast<std::uintptr_t>(port);
    e.rate = sw.port_rate_bytes_per_s;
    return e;
  }
  std::optional<End> Resolve(int line, const Cell& device, const Cell& port);
  std::optional<End> ResolveTopo(int line, const Dev& d, const Cell& port);
  // Records the cable a-b (cells for the error carets) unless it is wrong; a cable already
  // recorded from its other end is accepted once more when `mirror_ok` (the topology file).
  void AddLink(int line, End a, End b, const Cell& ca, const Cell& cb, bool mirror_ok,
               std::vector<model::Link>* links);
  void ReserveEnds(std::vector<model::Link>* links);
  std::optional<End> NicEnd(int line, const Cell& port_cell, const model::Node& node,
                            std::string_view dev, std::optional<int> port_no);
  std::optional<End> NthNic(int line, const Cell& port_cell, const model::Node& node, int n);

  const SourceFile& src_;
  const model::Cluster& cluster_;
  Diagnostics* diags_;
  std::unordered_map<std::string, Dev> exact_, folded_;
  std::unordered_map<std::string, const model::Profile*> profiles_;
  std::vector<std::string> known_;
  std::size_t errors_ = 0;
  struct Seen {
    EndKey other;
    SourcePos at;
  };
  std::unordered_map<EndKey, Seen, EndHash> used_;
};

std::optional<Importer::End> Importer::NicEnd(int line, const Cell& port_cell,
                                              const model::Node& node, std::string_view dev,
                                              std::optional<int> port_no) {
  const model::Profile* prof = ProfileOf(node);
  if (prof == nullptr) {
    Error(line, port_cell,
          fmt::format("node {} has profile '{}', which is not defined", node.name, node.profile));
    return std::nullopt;
  }
  const model::NicSpec* found = nullptr;
  for (const model::NicSpec& nic : prof->nics) {
    if (nic.name == dev || (!nic.netdev.empty() && nic.netdev == dev)) {
      if (port_no && nic.port != *port_no) continue;
      found = &nic;
      break;
    }
  }
  if (found == nullptr) {
    std::vector<std::string> nics;
    for (const auto& s : prof->nics) nics.push_back(s.name);
    const bool named =
        std::any_of(prof->nics.begin(), prof->nics.end(),
                    [&](const model::NicSpec& s) { return s.name == dev || s.netdev == dev; });
    if (named) {
      Error(line, port_cell,
            fmt::format("node {} (profile '{}') has NIC '{}' but not on port {}", node.name,
                        prof->name, dev, *port_no));
      return std::nullopt;
    }
    std::string hint;
    if (nics.empty()) {
      hint = "; the profile has no 'nics'";
    } else if (auto best = names::Closest(dev, nics)) {
      hint = fmt::format("; did you mean '{}'?", *best);
    } else {
      hint = fmt::format(" (it has {})", fmt::join(nics, ", "));
    }
    Error(
        line, port_cell,
        fmt::format("node {} (profile '{}') has no NIC '{}'{}", node.name, prof->name, dev, hint));
    return std::nullopt;
  }
  End e;
  e.ep.kind = model::Endpoint::Kind::kNic;
  e.ep.device = node.name;
  e.ep.nic = found->name;
  e.key_device = &node;
  e.key_at = reinterpret_cast<std::uintptr_t>(found);
  e.rate = found->rate_bytes_per_s;
  return e;
}

std::optional<Importer::End> Importer::NthNic(int line, const Cell& port_cell,
                                              const model::Node& node, int n) {
  const model::Profile* prof = ProfileOf(node);
  if (prof == nullptr) {
    Error(line, port_cell,
          fmt::format("node {} has profile '{}', which is not defined", node.name, node.profile));
    return std::nullopt;
  }
  if (n < 1 || static_cast<std::size_t>(n) > prof->nics.size()) {
    Error(line, port_cell,
          fmt::format("node {} (profile '{}') has {}; a host port number counts NICs in the "
                      "profile's 'nics' order, "
                      "so there is no port '{}'",
                      node.name, prof->name,
                      gpuforge::text::Plural(static_cast<long long>(prof->nics.size()), "NIC"),
                      port_cell.text));
    return std::nullopt;
  }
  return NicEnd(line, port_cell, node, prof->nics[static_cast<std::size_t>(n - 1)].name,
                std::nullopt);
}

std::optional<Importer::End> Importer::Resolve(int line, const Cell& device, const Cell& port) {
  const Dev* d = Find(device.text);
  std::string_view hca;  // "HOST DEV" in the device cell
  if (d == nullptr) {
    if (auto sp = device.text.find(' '); sp != std::string::npos) {
      const Dev* host = Find(std::string_view(device.text).substr(0, sp));
      if (host != nullptr && host->node != nullptr) {
        d = host;
        hca = Trim(std::string_view(device.text).substr(sp + 1));
      }
    }
  }
  if (d == nullptr) {
    Error(
        line, device,
        fmt::format("'{}' is neither a node nor a switch{}", device.text, DidYouMean(device.text)));
    return std::nullopt;
  }
  if (d->sw != nullptr) {
    const model::Switch& sw = *d->sw;
    std::optional<int> n = PortNumber(port.text);
    if (!n || *n < 1 || *n > sw.ports) {
      std::string why = n ? "" : " (UFM's 'Port N'; blade and split ports have no number here)";
      Error(line, port,
            fmt::format("switch {} has ports 1-{}; there is no port '{}'{}", sw.name, sw.ports,
                        port.text, why));
      return std::nullopt;
    }
    return SwitchEnd(sw, *n);
  }
  const model::Node& node = *d->node;
  if (!hca.empty()) {
    std::optional<int> n = PortNumber(port.text);
    if (!n) {
      Error(line, port,
            fmt::format("the device names HCA '{}' of {}, so the port must be 'Port N', not '{}'",
                        hca, node.name, port.text));
      return std::nullopt;
    }
    return NicEnd(line, port, node, hca, n);
  }
  std::string_view p = port.text;
  if (auto sp = p.find(' '); sp != std::string_view::npos && !PortNumber(p)) {
    std::string_view host = p.substr(0, sp);
    if (Lower(host) != Lower(node.name)) {
      Error(line, port,
            fmt::format("port '{}' names host '{}', but the device is {}", p, host, node.name));
      return std::nullopt;
    }
    return NicEnd(line, port, node, Trim(p.substr(sp + 1)), std::nullopt);
  }
  if (std::optional<int> n = PortNumber(p)) return NthNic(line, port, node, *n);
  return NicEnd(line, port, node, p, std::nullopt);
}

std::vector<model::Link> Importer::ReadUfmCsv() {
  std::vector<model::Link> links;
  const std::string& text = src_.text();
  // Header: the first non-blank line.
  int line_no = 0;
  std::size_t pos = 0;
  std::vector<Cell> cells;
  std::string err;
  int err_col = 0;
  auto next_line = [&](std::string_view* out) {
    if (pos >= text.size()) return false;
    std::size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) nl = text.size();
    std::string_view l(text.data() + pos, nl - pos);
    if (!l.empty() && l.back() == '\r') l.remove_suffix(1);
    pos = nl + 1;
    ++line_no;
    *out = l;
    return true;
  };
  std::string_view line;
  bool have_header = false;
  while (next_line(&line)) {
    if (!Trim(line).empty()) {
      have_header = true;
      break;
    }
  }
  if (!have_header) {
    diags_->Error(SourcePos{src_.path(), 1, 1},
                  "the file is empty; a UFM topology CSV starts with a header line naming "
                  "StartDevice,StartPort,EndDevice,EndPort");
    return links;
  }
  if (!SplitCsv(line, &cells, &err, &err_col)) {
    diags_->Error(SourcePos{src_.path(), line_no, err_col}, err);
    return links;
  }
  const int header_line = line_no;
  const std::size_t header_cells = cells.size();
  int col_sd = -1, col_sp = -1, col_ed = -1, col_ep = -1, col_state = -1;
  for (std::size_t i = 0; i < cells.size(); ++i) {
    const std::string& h = cells[i].text;
    int* slot = h == "StartDevice" || h == "#StartDevice" || h == "#Fields:StartDevice" ? &col_sd
                : h == "StartPort"                                                      ? &col_sp
                : h == "EndDevice"                                                      ? &col_ed
                : h == "EndPort"                                                        ? &col_ep
                : h == "State"                                                          ? &col_state
                                                                                        : nullptr;
    if (slot == nullptr) continue;
    if (*slot >= 0 && slot != &col_state) {
      diags_->Error(SourcePos{src_.path(), line_no, cells[i].col},
                    fmt::format("column '{}' is named twice in the header", h), cells[i].width);
      return links;
    }
    *slot = static_cast<int>(i);
  }
  std::vector<std::string> missing;
  for (auto [col, name] : {std::pair{col_sd, "StartDevice"}, std::pair{col_sp, "StartPort"},
                           std::pair{col_ed, "EndDevice"}, std::pair{col_ep, "EndPort"}}) {
    if (col < 0) missing.push_back(name);
  }
  if (!missing.empty()) {
    diags_->Error(
        SourcePos{src_.path(), line_no, 1},
        fmt::format("the header names no {} column{}; a UFM topology CSV's first line names "
                    "StartDevice,StartPort,EndDevice,EndPort (other columns may follow)",
                    fmt::join(missing, ", "), missing.size() > 1 ? "s" : ""),
        std::max<int>(1, static_cast<int>(line.size())));
    return links;
  }
  const std::size_t need = static_cast<std::size_t>(std::max({col_sd, col_sp, col_ed, col_ep})) + 1;

  ReserveEnds(&links);

  while (errors_ < kMaxErrors && next_line(&line)) {
    if (Trim(line).empty()) continue;
    if (!SplitCsv(line, &cells, &err, &err_col)) {
      Error(line_no, Cell{"", err_col, 1}, err);
      continue;
    }
    if (cells.size() > header_cells) {
      auto extra = std::find_if(cells.begin() + static_cast<std::ptrdiff_t>(header_cells),
                                cells.end(), [](const Cell& c) { return !c.text.empty(); });
      if (extra != cells.end()) {
        Error(line_no, *extra,
              fmt::format("this row has {} fields; the header (line {}) names {}", cells.size(),
                          header_line, header_cells));
        continue;
      }
    }
    if (cells.size() < need) {
      Cell at{"", static_cast<int>(line.size()) + 1, 1};
      Error(line_no, at,
            fmt::format("this row has {}; the header (line {}) puts StartDevice, StartPort, "
                        "EndDevice and EndPort "
                        "within the first {} fields",
                        gpuforge::text::Plural(static_cast<long long>(cells.size()), "field"),
                        header_line, need));
      continue;
    }
    const Cell& sd = cells[col_sd];
    const Cell& sp = cells[col_sp];
    const Cell& ed = cells[col_ed];
    const Cell& ep = cells[col_ep];
    if (ed.text.empty() && ep.text.empty() && col_state >= 0 &&
        static_cast<std::size_t>(col_state) < cells.size() &&
        Lower(cells[col_state].text) == "disabled") {
      continue;  // a port designed to stay unconnected
    }
    bool blank = false;
    for (auto [c, name] : {std::pair{&sd, "StartDevice"}, std::pair{&sp, "StartPort"},
                           std::pair{&ed, "EndDevice"}, std::pair{&ep, "EndPort"}}) {
      if (c->text.empty()) {
        Error(line_no, *c, fmt::format("{} is empty", name));
        blank = true;
        break;
      }
    }
    if (blank) continue;
    std::optional<End> a = Resolve(line_no, sd, sp);
    std::optional<End> b = Resolve(line_no, ed, ep);
    if (!a || !b) continue;
    AddLink(line_no, std::move(*a), std::move(*b), sd, ed, /*mirror_ok=*/false, &links);
  }
  return links;
}

void Importer::ReserveEnds(std::vector<model::Link>* links) {
  // Room for every NIC and switch port up front, as the inventory's links do (load_fabric.cc).
  std::size_t ends = 0;
  for (const model::Node& n : cluster_.nodes) {
    if (const model::Profile* p = ProfileOf(n)) ends += p->nics.size();
  }
  for (const model::Switch& sw : cluster_.switches)
    ends += static_cast<std::size_t>(std::max(sw.ports, 0));
  ends = std::min<std::size_t>(ends, std::size_t{1} << 22);
  used_.reserve(ends);
  links->reserve(ends / 2);
}

void Importer::AddLink(int line_no, End a, End b, const Cell& ca, const Cell& cb, bool mirror_ok,
                       std::vector<model::Link>* links) {
  if (a.ep.kind == model::Endpoint::Kind::kNic && b.ep.kind == model::Endpoint::Kind::kNic) {
    Error(line_no, ca,
          fmt::format("link {} -> {} joins two NICs; gpuforge models NICs cabled to switch ports",
                      a.ep.ToString(), b.ep.ToString()));
    return;
  }
  if (a.ep.device == b.ep.device) {
    Error(line_no, ca,
          fmt::format("link {} -> {} joins {} to itself", a.ep.ToString(), b.ep.ToString(),
                      a.ep.device));
    return;
  }
  const EndKey ka{a.key_device, a.key_at};
  const EndKey kb{b.key_device, b.key_at};
  if (mirror_ok) {
    auto ia = used_.find(ka);
    auto ib = used_.find(kb);
    if (ia != used_.end() && ib != used_.end() && ia->second.other == kb && ib->second.other == ka)
      return;  // the same cable, listed from its other end
  }
  bool dup = false;
  for (auto [e, key, cell, other] :
       {std::tuple{&a, ka, &ca, &b}, std::tuple{&b, kb, &cb, &a}}) {
    SourcePos here{src_.path(), line_no, cell->col};
    auto [it, inserted] = used_.emplace(key, Seen{EndKey{other->key_device, other->key_at}, here});
    if (!inserted) {
      const char* thing = e->ep.kind == model::Endpoint::Kind::kNic ? "NIC" : "switch port";
      Error(line_no, *cell,
            fmt::format("{} {} is cabled twice, first at {}", thing, e->ep.ToString(),
                        it->second.at.ToString()));
      dup = true;
    }
  }
  if (dup) return;
  model::Link l{std::move(a.ep), std::move(b.ep), std::min(a.rate, b.rate),
                SourcePos{src_.path(), line_no, ca.col}};
  // Node ends first, as the inventory's links (load_fabric.cc).
  if (l.b.kind == model::Endpoint::Kind::kNic) std::swap(l.a, l.b);
  links->push_back(std::move(l));
}

// "P<n>": the number, else nullopt.
std::optional<int> SysPortNumber(std::string_view s) {
  if (s.size() < 2 || s[0] != 'P') return std::nullopt;
  return Number(s.substr(1));
}

std::optional<Importer::End> Importer::ResolveTopo(int line, const Dev& d, const Cell& port) {
  const std::string_view p = port.text;
  if (d.sw != nullptr) {
    const model::Switch& sw = *d.sw;
    std::optional<int> n = SysPortNumber(p);
    if (!n || *n < 1 || *n > sw.ports) {
      const bool director = p.find('/') != std::string_view::npos;
      Error(line, port,
            fmt::format("switch {} has ports P1-P{}; there is no port '{}'{}", sw.name, sw.ports,
                        p, director ? " (a director's line-card port has no number here)" : ""));
      return std::nullopt;
    }
    return SwitchEnd(sw, *n);
  }
  const model::Node& node = *d.node;
  int hca = 1;
  std::string_view port_part = p;
  if (p.size() > 1 && p[0] == 'U') {
    const std::size_t slash = p.find('/');
    std::optional<int> k = slash == std::string_view::npos ? std::nullopt : Number(p.substr(1, slash - 1));
    if (!k) {
      Error(line, port,
            fmt::format("host port '{}' is neither 'P<n>' (its first HCA) nor 'U<k>/P<n>' (its k-th)", p));
      return std::nullopt;
    }
    hca = *k;
    port_part = p.substr(slash + 1);
  }
  std::optional<int> n = SysPortNumber(port_part);
  if (!n) {
    Error(line, port,
          fmt::format("host port '{}' is neither 'P<n>' (its first HCA) nor 'U<k>/P<n>' (its k-th)", p));
    return std::nullopt;
  }
  const model::Profile* prof = ProfileOf(node);
  if (prof == nullptr) {
    Error(line, port,
          fmt::format("node {} has profile '{}', which is not defined", node.name, node.profile));
    return std::nullopt;
  }
  std::vector<std::string> hcas;  // distinct NIC names in the profile's order
  for (const model::NicSpec& nic : prof->nics) {
    if (std::find(hcas.begin(), hcas.end(), nic.name) == hcas.end()) hcas.push_back(nic.name);
  }
  if (hca < 1 || static_cast<std::size_t>(hca) > hcas.size()) {
    Error(line, port,
          fmt::format("node {} (profile '{}') has {}; 'U{}' counts them in the profile's 'nics' "
                      "order from 1, so port '{}' names none",
                      node.name, prof->name,
                      gpuforge::text::Plural(static_cast<long long>(hcas.size()), "NIC"), hca, p));
    return std::nullopt;
  }
  return NicEnd(line, port, node, hcas[static_cast<std::size_t>(hca - 1)], n);
}

namespace topo {

struct Word {
  std::string_view text;
  int col;  // 1-based
};

std::vector<Word> Words(std::string_view line) {
  std::vector<Word> out;
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    if (i >= line.size()) break;
    const std::size_t start = i;
    while (i < line.size() && line[i] != ' ' && line[i] != '\t') ++i;
    out.push_back(Word{line.substr(start, i - start), static_cast<int>(start) + 1});
  }
  return out;
}

// ibdm's sysLine: "TYPE NAME" with neither holding a '/', then nothing or " CFG:...".
bool IsSystemLine(std::string_view line, const std::vector<Word>& w) {
  if (w.size() < 2) return false;
  if (w[0].text.find('/') != std::string_view::npos || w[1].text.find('/') != std::string_view::npos)
    return false;
  if (w.size() == 2) return true;
  // ibdm's regex needs a space (not a tab) right before "CFG:".
  return w[2].text.substr(0, 4) == "CFG:" && line[static_cast<std::size_t>(w[2].col) - 2] == ' ';
}

// ibdm's arrow: "-" ["1|4|8|12" x "-"] ["2.5|5|10" "G-"] ">". Later widths and lane speeds
// (2X; 14, 25, 50, 100 G) are not in ibdm 1.5.7.1's regex; any width of those and any decimal
// speed are taken, the arrow being read for its shape only (the rate comes from the inventory).
bool IsArrow(std::string_view a) {
  if (a.size() < 2 || a.front() != '-' || a.back() != '>') return false;
  std::string_view mid = a.substr(1, a.size() - 2);  // "", "4x-", "5G-", "4x-5G-"
  auto digits = [](std::string_view s) {
    if (s.empty()) return false;
    bool dot = false;
    for (char c : s) {
      if (c == '.' && !dot) {
        dot = true;
      } else if (c < '0' || c > '9') {
        return false;
      }
    }
    return s.front() != '.' && s.back() != '.';
  };
  if (mid.empty()) return true;
  if (mid.back() != '-') return false;
  mid.remove_suffix(1);
  if (mid.empty()) return false;  // "-->"
  const std::size_t dash = mid.find('-');
  std::string_view width = dash == std::string_view::npos ? std::string_view() : mid.substr(0, dash);
  std::string_view speed = dash == std::string_view::npos ? mid : mid.substr(dash + 1);
  if (dash == std::string_view::npos && (speed.back() == 'x' || speed.back() == 'X')) {
    width = speed;
    speed = {};
  }
  if (!width.empty()) {
    if (width.back() != 'x' && width.back() != 'X') return false;
    width.remove_suffix(1);
    if (width != "1" && width != "2" && width != "4" && width != "8" && width != "12") return false;
  }
  if (!speed.empty()) {
    if (speed.back() != 'G') return false;
    speed.remove_suffix(1);
    if (!digits(speed)) return false;
  }
  return true;
}

}  // namespace topo

std::vector<model::Link> Importer::ReadIbdmTopo() {
  std::vector<model::Link> links;
  ReserveEnds(&links);
  const std::string& text = src_.text();
  std::size_t pos = 0;
  int line_no = 0;
  bool in_system = false;
  const Dev* system = nullptr;  // nullptr inside a system whose name was not found
  Cell system_cell;
  bool any_system = false;
  while (errors_ < kMaxErrors && pos < text.size()) {
    std::size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) nl = text.size();
    std::string_view line(text.data() + pos, nl - pos);
    pos = nl + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    const std::string_view trimmed = Trim(line);
    if (trimmed.empty()) {
      in_system = false;  // an empty line ends the system (ibdm's emptyLine)
      continue;
    }
    if (trimmed.front() == '#') continue;
    const std::vector<topo::Word> w = topo::Words(line);
    auto cell = [](const topo::Word& x) {
      return Cell{std::string(x.text), x.col, std::max<int>(1, static_cast<int>(x.text.size()))};
    };
    if (topo::IsSystemLine(line, w)) {
      any_system = true;
      in_system = true;
      system_cell = cell(w[1]);
      system = Find(w[1].text);
      if (system == nullptr) {
        Error(line_no, system_cell,
              fmt::format("system '{}' (type {}) is neither a node nor a switch{}", w[1].text,
                          w[0].text, DidYouMean(w[1].text)));
      }
      continue;
    }
    const bool indented = line.front() == ' ' || line.front() == '\t';
    if (indented && w.size() == 5 && topo::IsArrow(w[1].text)) {
      if (!in_system) {
        Error(line_no, cell(w[0]),
              "a cable outside a system: a 'TYPE NAME' line opens a system and an empty line "
              "ends it");
        continue;
      }
      if (system == nullptr) continue;  // its system's name was the error
      const Cell local_port = cell(w[0]);
      const Cell remote = cell(w[3]);
      const Cell remote_port = cell(w[4]);
      const Dev* far = Find(w[3].text);
      if (far == nullptr) {
        Error(line_no, remote,
              fmt::format("'{}' (type {}) is neither a node nor a switch{}", w[3].text, w[2].text,
                          DidYouMean(w[3].text)));
        continue;
      }
      std::optional<End> a = ResolveTopo(line_no, *system, local_port);
      std::optional<End> b = ResolveTopo(line_no, *far, remote_port);
      if (!a || !b) continue;
      AddLink(line_no, std::move(*a), std::move(*b), local_port, remote_port, /*mirror_ok=*/true,
              &links);
      continue;
    }
    Cell at{std::string(trimmed), static_cast<int>(trimmed.data() - line.data()) + 1,
            static_cast<int>(trimmed.size())};
    Error(line_no, at,
          indented ? "not a cable: an indented line reads 'PORT -> TYPE NAME PORT' "
                     "(the arrow may carry width and speed, '-4x-10G->')"
                   : "not a line of an ibdiagnet topology file: 'TYPE NAME' opens a system, "
                     "an indented 'PORT -> TYPE NAME PORT' is a cable, '#' a comment");
  }
  if (!any_system && errors_ == 0) {
    diags_->Error(SourcePos{src_.path(), 1, 1},
                  "the file holds no system: an ibdiagnet topology file lists 'TYPE NAME' lines, "
                  "each followed by its indented cables");
  }
  return links;
}

// The first line that is neither blank nor a comment is a system line and the next such line a
// cable: "TYPE NAME" alone would also take a CSV line with one space in it.
bool LooksLikeIbdmTopo(std::string_view text) {
  int seen = 0;
  while (!text.empty() && seen < 2) {
    const std::size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    const std::string_view t = Trim(line);
    if (t.empty() || t.front() == '#') continue;
    const std::vector<topo::Word> w = topo::Words(line);
    if (seen++ == 0) {
      if (!topo::IsSystemLine(line, w)) return false;
    } else {
      return (line.front() == ' ' || line.front() == '\t') && w.size() == 5 && topo::IsArrow(w[1].text);
    }
  }
  return false;
}

bool LooksLikeUfmHeader(std::string_view text) {
  std::size_t nl = text.find('\n');
  std::string_view first = text.substr(0, nl);
  while (Trim(first).empty() && nl != std::string_view::npos) {
    text = text.substr(nl + 1);
    nl = text.find('\n');
    first = text.substr(0, nl);
  }
  return first.find("StartDevice") != std::string_view::npos;
}

}  // namespace

std::string ImportOutcome::FormatDiagnostics() const {
  std::string out;
  for (const Diagnostic& d : diags.items()) out += FormatDiagnostic(d, source.get());
  std::size_t errors = diags.error_count();
  if (errors > 0)
    out += fmt::format("{} error{} in {}\n", errors, errors == 1 ? "" : "s",
                       source ? source->path() : "design file");
  return out;
}

ImportOutcome ImportDesignString(std::string_view text, const std::string& path_for_messages,
                                 const model::Cluster& cluster,
                                 std::optional<DesignFormat> format) {
  ImportOutcome out;
  out.source = std::make_shared<SourceFile>(path_for_messages, std::string(text));
  if (!format && LooksLikeUfmHeader(text)) format = DesignFormat::kUfmCsv;
  if (!format && LooksLikeIbdmTopo(text)) format = DesignFormat::kIbdiagnetTopo;
  std::vector<model::Link> links;
  if (text.find('\0') != std::string_view::npos) {
    out.diags.Error(SourcePos{path_for_messages, 1, 1},
                    "binary data (a NUL byte), not a design file");
  } else if (!format) {
    out.diags.Error(
        SourcePos{path_for_messages, 1, 1},
        "neither a UFM topology CSV (its first line names StartDevice,StartPort,EndDevice,EndPort) "
        "nor an ibdiagnet topology file (its first line other than comments is 'TYPE NAME')");
  } else if (*format == DesignFormat::kIbdiagnetTopo) {
    Importer importer(*out.source, cluster, &out.diags);
    links = importer.ReadIbdmTopo();
  } else {
    Importer importer(*out.source, cluster, &out.diags);
    links = importer.ReadUfmCsv();
  }
  // Names quoted from the file may hold control characters: shown escaped, as the loader does.
  Diagnostics shown;
  for (Diagnostic d : out.diags.items()) {
    d.message = text::Escape(
        d.message, {.keep_non_ascii = true, .escape_backslash = false, .named_line_ends = true});
    shown.Add(std::move(d));
  }
  out.diags = std::move(shown);
  if (!out.diags.has_errors()) out.links = std::move(links);
  return out;
}

ImportOutcome ImportDesignFile(const std::string& path, const model::Cluster& cluster,
                               std::optional<DesignFormat> format) {
  base::InputFile in{path, "design file", 64u << 20, false};
  Result<std::string> read = base::ReadInputFile(in);
  if (!read.ok()) {
    ImportOutcome out;
    out.source = std::make_shared<SourceFile>(path, "");
    out.diags.Error(SourcePos{path, 0, 0}, read.error().message);
    return out;
  }
  return ImportDesignString(*read, path, cluster, format);
}

}  // namespace gpuforge::inventory
