// Parsers for the InfiniBand subnet as infiniband-diags prints it: `iblinkinfo` (per-node
// blocks, or one line per port with --line) and `ibnetdiscover` (the topology file), and the
// cable-by-cable comparison of two such views. The layouts follow rdma-core's printf formats
// (infiniband-diags/iblinkinfo.c print_port, ibnetdiscover.c out_switch_port / out_ca_port);
// docs/cabling.md and tests/data/fabric/README.md name the outputs they were checked against.

#include <fmt/format.h>

#include <array>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "facts/text.h"
#include "gpuforge/facts/fabric.h"

namespace gpuforge::facts {

namespace {

using text::Quote;

constexpr int kMaxPort = 254;  // PortInfo numbers are 8 bits; 255 is reserved
constexpr int kMaxLid = 65535;
constexpr std::size_t kMaxShown = 120;  // characters of an offending line shown in an error

// One InfiniBand signalling generation: its name, the per-lane figure iblinkinfo prints
// (libibmad dump.c), and the lane figure sysfs and the inventory count in.
struct Generation {
  std::string_view name;
  double lane_gbps;
  double rate_per_lane;
};

constexpr std::array<Generation, 9> kGenerations = {{
    {"SDR", 2.5, 2.5},
    {"DDR", 5.0, 5.0},
    {"QDR", 10.0, 10.0},
    {"FDR10", 10.0, 10.0},  // printed as "10.0 Gbps (FDR10)"; never found from the figure alone
    {"FDR", 14.0625, 14.0},
    {"EDR", 25.78125, 25.0},
    {"HDR", 53.125, 50.0},
    {"NDR", 106.25, 100.0},
    {"XDR", 212.5, 200.0},
}};

const Generation* GenerationNamed(std::string_view name) {
  for (const Generation& g : kGenerations) {
    if (g.name == name) return &g;
  }
  return nullptr;
}

const Generation* GenerationOfLane(double lane_gbps, bool fdr10) {
  if (fdr10) return GenerationNamed("FDR10");
  for (const Generation& g : kGenerations) {
    if (g.name != "FDR10" && std::fabs(g.lane_gbps - lane_gbps) < 1e-6) return &g;
  }
  return nullptr;
}

bool ValidWidth(int w) { return w == 1 || w == 2 || w == 4 || w == 8 || w == 12; }

void FillRate(IbPortSeen& p) {
  if (const Generation* g = GenerationNamed(p.speed); g && p.width) {
    p.rate_gbps = *p.width * g->rate_per_lane;
  }
}

std::string Where(std::string_view source, int line) { return fmt::format("{}:{}", source, line); }

Error LineErr(std::string_view source, int line, std::string_view what, std::string_view text) {
  return Error{fmt::format("{}: {}, got {}", Where(source, line), what, Quote(text, kMaxShown))};
}

// 1 to 16 hex digits, with or without 0x, as "0x" and 16 lower-case digits.
std::optional<std::string> NormalGuid(std::string_view s) {
  std::string_view digits = s;
  if (digits.starts_with("0x") || digits.starts_with("0X")) digits.remove_prefix(2);
  if (digits.empty() || digits.size() > 16) return std::nullopt;
  std::optional<std::uint64_t> v = text::ToHex(digits);
  if (!v) return std::nullopt;
  return fmt::format("0x{:016x}", *v);
}

bool IsSpace(char c) { return c == ' ' || c == '\t'; }

// A read position in one line. Every step either consumes what it expects or leaves the
// position alone and says no, so a parse is a chain of checks with one error at the end.
class Cursor {
 public:
  explicit Cursor(std::string_view s) : s_(s) {}

  void SkipSpace() {
    while (pos_ < s_.size() && IsSpace(s_[pos_])) ++pos_;
  }
  bool Eat(std::string_view lit) {
    if (s_.substr(pos_).starts_with(lit)) {
      pos_ += lit.size();
      return true;
    }
    return false;
  }
  bool Peek(std::string_view lit) const { return s_.substr(pos_).starts_with(lit); }
  // A run of non-space characters, possibly empty.
  std::string_view Token() {
    std::size_t start = pos_;
    while (pos_ < s_.size() && !IsSpace(s_[pos_])) ++pos_;
    return s_.substr(start, pos_ - start);
  }
  std::string_view Digits() {
    std::size_t start = pos_;
    while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') ++pos_;
    return s_.substr(start, pos_ - start);
  }
  std::string_view HexDigits() {
    std::size_t start = pos_;
    while (pos_ < s_.size() && std::isxdigit(static_cast<unsigned char>(s_[pos_]))) ++pos_;
    return s_.substr(start, pos_ - start);
  }
  // Up to (not including) `lit`, which is then consumed; nullopt when absent.
  std::optional<std::string_view> Until(std::string_view lit) {
    std::size_t at = s_.find(lit, pos_);
    if (at == std::string_view::npos) return std::nullopt;
    std::string_view out = s_.substr(pos_, at - pos_);
    pos_ = at + lit.size();
    return out;
  }
  std::string_view Rest() const { return s_.substr(pos_); }
  std::size_t pos() const { return pos_; }
  void set_pos(std::size_t p) { pos_ = p; }
  bool Done() const { return pos_ >= s_.size(); }

 private:
  std::string_view s_;
  std::size_t pos_ = 0;
};

// "[12]" or "[  ]" or "[ext 3]": a port number in brackets, or the bracketed extension.
std::optional<int> BracketPort(Cursor& c) {
  if (!c.Eat("[")) return std::nullopt;
  std::optional<int> port = text::ToIntIn(c.Digits(), 1, kMaxPort);
  if (!port || !c.Eat("]")) return std::nullopt;
  return port;
}

// iblinkinfo's "[%2s]" after a port number: the external port number, or blanks.
bool ExtField(Cursor& c) {
  if (!c.Eat("[")) return false;
  std::optional<std::string_view> inside = c.Until("]");
  if (!inside) return false;
  std::string_view t = text::Trim(*inside);
  return t.empty() || text::ToIntIn(t, 0, kMaxPort).has_value();
}

// ibnetdiscover -g's "[ext N]" after a port, when present.
bool OptionalExt(Cursor& c) {
  if (!c.Peek("[ext ")) return true;
  c.Eat("[ext ");
  return text::ToIntIn(c.Digits(), 0, kMaxPort).has_value() && c.Eat("]");
}

// A description as the tool printed it; a name with control or non-ASCII bytes is kept
// escaped, so it can neither match a designed name nor reach a terminal raw.
std::string Desc(std::string_view raw, std::string_view source, int line,
                 std::vector<std::string>& warnings) {
  if (gpuforge::text::IsPrintable(raw)) return std::string(raw);
  std::string shown = gpuforge::text::Escape(raw, gpuforge::text::Escaping{.max = 200});
  warnings.push_back(
      fmt::format("{}: node description has control or non-ASCII bytes, kept escaped: '{}'",
                  Where(source, line), shown));
  return shown;
}

// ---------------------------------------------------------------------------------------
// Identity of cable ends, shared by the consistency pass and CrossCheckSubnets.

// What is known of one end of a cable: a node GUID, a port GUID, a LID, a port number.
struct EndFacts {
  std::string_view guid;
  std::string_view port_guid;
  int lid = 0;
  int port = 0;
};

// Port GUIDs and LIDs told back to node GUIDs wherever some view printed both, so that
// iblinkinfo's port GUIDs and ibnetdiscover's node GUIDs name the same device.
class Identities {
 public:
  void Learn(const IbSubnet& s) {
    for (const IbPortSeen& p : s.ports) {
      Add(p.node.guid, p.port_guid, p.node.lid, p.node.is_switch);
      if (p.peer) Add(p.peer->guid, p.peer_port_guid, p.peer->lid, p.peer->is_switch);
    }
  }

  // "" where nothing identifies the end.
  std::string Key(const EndFacts& e) const {
    if (e.port <= 0) return "";
    std::string base;
    if (!e.guid.empty()) {
      base = std::string(e.guid);
    } else if (auto it = by_port_guid_.find(std::string(e.port_guid));
               !e.port_guid.empty() && it != by_port_guid_.end()) {
      base = it->second;
    } else if (auto lt = by_lid_.find(e.lid);
               e.lid > 0 && lt != by_lid_.end() && !lt->second.empty()) {
      base = lt->second;
    } else if (!e.port_guid.empty()) {
      base = "port " + std::string(e.port_guid);
    } else if (e.lid > 0) {
      base = fmt::format("lid {}", e.lid);
    } else {
      return "";
    }
    return fmt::format("{}/{}", base, e.port);
  }

 private:
  void Add(std::string_view guid, std::string_view port_guid, int lid, bool is_switch) {
    if (guid.empty()) return;
    std::string g(guid);
    if (!port_guid.empty()) by_port_guid_.emplace(std::string(port_guid), g);
    // A switch's ports share the GUID of its port 0, which is its node GUID.
    if (is_switch) by_port_guid_.emplace(g, g);
    if (lid > 0) {
      auto [it, fresh] = by_lid_.emplace(lid, g);
      if (!fresh && it->second != g) it->second.clear();  // two devices claim it: trust neither
    }
  }

  std::unordered_map<std::string, std::string> by_port_guid_;
  std::unordered_map<int, std::string> by_lid_;
};

EndFacts LocalEnd(const IbPortSeen& p) { return {p.node.guid, p.port_guid, p.node.lid, p.port}; }
EndFacts PeerEnd(const IbPortSeen& p) {
  return {p.peer->guid, p.peer_port_guid, p.peer->lid, p.peer_port};
}

std::string ShowEnd(const IbNodeRef& n, int port) {
  return fmt::format("\"{}\"[{}]", n.desc, port);
}

std::string ShowLink(const IbPortSeen& p) {
  std::string w = p.width ? fmt::format("{}X", *p.width) : "?X";
  return fmt::format("{} {}", w, p.speed.empty() ? "?" : p.speed);
}

// Where one output lists both ends of a cable, both lines must agree: on the peer and on
// width and speed. A disagreement is a warning, naming both lines.
void CheckBothEnds(IbSubnet& s) {
  Identities ids;
  ids.Learn(s);
  std::unordered_map<std::string, std::size_t> by_end;
  by_end.reserve(s.ports.size());
  for (std::size_t i = 0; i < s.ports.size(); ++i) {
    std::string k = ids.Key(LocalEnd(s.ports[i]));
    if (!k.empty()) by_end.emplace(std::move(k), i);
  }
  for (std::size_t i = 0; i < s.ports.size(); ++i) {
    const IbPortSeen& p = s.ports[i];
    if (!p.peer) continue;
    std::string mine = ids.Key(LocalEnd(p));
    std::string theirs = ids.Key(PeerEnd(p));
    if (mine.empty() || theirs.empty()) continue;
    auto it = by_end.find(theirs);
    if (it == by_end.end()) continue;
    const IbPortSeen& r = s.ports[it->second];
    if (it->second < i) continue;  // each pair once, from its first line
    if (!r.peer || ids.Key(PeerEnd(r)) != mine) {
      s.warnings.push_back(fmt::format("{}: {} to {}, but {}: {} to {}", Where(s.source, p.line),
                                       ShowEnd(p.node, p.port), ShowEnd(*p.peer, p.peer_port),
                                       Where(s.source, r.line), ShowEnd(r.node, r.port),
                                       r.peer ? ShowEnd(*r.peer, r.peer_port) : "no peer"));
      continue;
    }
    bool width_differs = p.width && r.width && *p.width != *r.width;
    bool speed_differs = !p.speed.empty() && !r.speed.empty() && p.speed != r.speed;
    if (width_differs || speed_differs) {
      s.warnings.push_back(fmt::format("{}: {} to {} is {}, but {}: the same cable is {}",
                                       Where(s.source, p.line), ShowEnd(p.node, p.port),
                                       ShowEnd(*p.peer, p.peer_port), ShowLink(p),
                                       Where(s.source, r.line), ShowLink(r)));
    }
  }
}

// Two headers with one node GUID and different descriptions.
class GuidSeen {
 public:
  void Note(const std::string& guid, const std::string& desc, std::string_view source, int line,
            std::vector<std::string>& warnings) {
    if (guid.empty()) return;
    auto [it, fresh] = seen_.emplace(guid, std::make_pair(desc, line));
    if (!fresh && it->second.first != desc) {
      warnings.push_back(fmt::format("{}: node GUID {} is \"{}\" here but \"{}\" at line {}",
                                     Where(source, line), guid, desc, it->second.first,
                                     it->second.second));
    }
  }

 private:
  std::unordered_map<std::string, std::pair<std::string, int>> seen_;
};

// ---------------------------------------------------------------------------------------
// iblinkinfo

// The text between "==(" and ")==>": "4X          10.0 Gbps Active/  LinkUp", or
// "              Down/ Polling", with " (HOQ:n VL_Stall:n)" after it under --switch-settings.
std::optional<std::string> ParseLinkField(std::string_view field, IbPortSeen& p) {
  if (std::size_t hoq = field.find(") (HOQ:"); hoq != std::string_view::npos)
    field = field.substr(0, hoq);
  std::size_t slash = field.rfind('/');
  if (slash == std::string_view::npos) return "expected \"STATE/ PHYSSTATE\" inside ==( )==>";
  std::string_view phys = text::Trim(field.substr(slash + 1));
  if (phys.empty() || phys.find_first_of(" \t") != std::string_view::npos)
    return "expected one physical state after '/'";
  std::vector<std::string_view> words;
  Cursor c(field.substr(0, slash));
  for (c.SkipSpace(); !c.Done(); c.SkipSpace()) words.push_back(c.Token());
  if (words.empty()) return "expected a port state before '/'";
  p.state = std::string(words.back());
  p.phys_state = std::string(phys);
  words.pop_back();
  if (words.empty()) return std::nullopt;  // a Down port: nothing else is valid (C14-24.2.1)
  std::string_view w = words[0];
  std::optional<int> width = w.size() >= 2 && w.back() == 'X'
                                 ? text::ToIntIn(w.substr(0, w.size() - 1), 1, 12)
                                 : std::nullopt;
  if (!width || !ValidWidth(*width)) return "expected a link width (1X, 2X, 4X, 8X, 12X)";
  p.width = width;
  bool fdr10 = words.size() == 4 && words[3] == "(FDR10)";
  std::optional<double> lane = words.size() >= 3 ? text::ToDouble(words[1]) : std::nullopt;
  if (!lane || words[2] != "Gbps" || (words.size() != 3 && !fdr10)) {
    return "expected a lane speed like \"53.125 Gbps\"";
  }
  p.lane_gbps = lane;
  if (const Generation* g = GenerationOfLane(*lane, fdr10)) p.speed = std::string(g->name);
  FillRate(p);
  return std::nullopt;
}

// After ")==>": the peer, or its absence. `line_mode` peers start with their port GUID.
std::optional<std::string> ParseRemote(Cursor c, bool line_mode, IbPortSeen& p, int& peer_lid,
                                       std::string& peer_desc_raw) {
  c.SkipSpace();
  if (c.Eat("\"Port not available\"")) {
    c.SkipSpace();
    return c.Done() ? std::nullopt
                    : std::optional<std::string>(
                          "expected the end of the line after \"Port not available\"");
  }
  if (c.Peek("[")) {  // "[  ] "" ( )": no peer
    if (!ExtField(c)) return "expected \"[  ]\"";
    c.SkipSpace();
    if (!c.Eat("\"\"")) return "expected \"\" for a port with no peer";
    c.SkipSpace();
    if (!c.Eat("(") || text::Trim(c.Rest()) != ")")
      return "expected \"( )\" at the end of the line";
    return std::nullopt;
  }
  if (line_mode) {
    std::optional<std::string> guid = NormalGuid(c.Token());
    if (!guid) return "expected the peer's port GUID";
    p.peer_port_guid = *guid;
    c.SkipSpace();
  }
  std::optional<int> lid = text::ToIntIn(c.Token(), 0, kMaxLid);
  if (!lid) return "expected the peer's LID";
  c.SkipSpace();
  std::optional<int> port = text::ToIntIn(c.Digits(), 1, kMaxPort);
  if (!port) return fmt::format("expected the peer's port number (1 to {})", kMaxPort);
  if (!ExtField(c)) return "expected \"[  ]\" after the peer's port number";
  c.SkipSpace();
  std::string_view rest = c.Rest();
  while (!rest.empty() && IsSpace(rest.back())) rest.remove_suffix(1);
  std::size_t close = rest.rfind("\" (");
  if (!rest.starts_with("\"") || close == std::string_view::npos || close == 0 ||
      !rest.ends_with(")")) {
    return "expected \"PEER DESCRIPTION\" ( ... ) at the end of the line";
  }
  peer_desc_raw = std::string(rest.substr(1, close - 1));
  p.could_be = std::string(text::Trim(rest.substr(close + 3, rest.size() - close - 4)));
  peer_lid = *lid;
  p.peer_port = *port;
  return std::nullopt;
}

struct LidOwner {
  std::string guid;       // a switch's GUID; "" for a CA port
  std::string port_guid;  // a CA port's GUID
  std::string desc;
  bool is_switch = false;
  int line = 0;
  bool ambiguous = false;
};

}  // namespace

Result<IbSubnet> ParseIblinkinfo(std::string_view input, std::string_view source) {
  if (Status s = text::CheckInput(input, input.size()); !s)
    return Error{fmt::format("{}: {}", source, s.error().message)};
  IbSubnet out;
  out.source = std::string(source);
  std::vector<std::string_view> lines = text::Lines(input);

  // The default layout opens with a node header; --line opens with a port GUID.
  std::optional<bool> line_mode;
  for (std::string_view l : lines) {
    std::string_view t = text::Trim(l);
    if (t.empty()) continue;
    if (t.starts_with("CA: ") || t.starts_with("Switch: ") || t.starts_with("Router: ")) {
      line_mode = false;
    } else if (t.starts_with("0x") && t.find("==(") != std::string_view::npos) {
      line_mode = true;
    }
    break;
  }

  std::optional<IbNodeRef> node;  // the current header's node (default layout)
  int header_line = 0;
  bool header_has_ports = true;
  std::vector<int> peer_lids;           // per port, the LID the peer was printed with
  std::vector<std::string> peer_descs;  // per port, the description as printed (raw)
  GuidSeen guids;

  for (std::size_t i = 0; i < lines.size(); ++i) {
    const int ln = static_cast<int>(i) + 1;
    std::string_view raw = lines[i];
    std::string_view t = text::Trim(raw);
    if (t.empty()) continue;
    if (!line_mode) {
      return LineErr(
          source, ln,
          "expected an iblinkinfo node header (CA:, Switch:, Router:) or a --line port line", raw);
    }

    if (!*line_mode && t.find("==(") == std::string_view::npos) {
      bool sw = t.starts_with("Switch: ");
      if (!(t.starts_with("CA: ") || sw || t.starts_with("Router: ")) || !t.ends_with(":")) {
        return LineErr(source, ln,
                       "expected a node header (CA: NAME:, Switch: GUID NAME:) or a port line",
                       raw);
      }
      if (!header_has_ports) {
        return LineErr(source, header_line,
                       "node header with no port lines after it (truncated output?)",
                       lines[header_line - 1]);
      }
      std::string_view rest = t.substr(t.find(' ') + 1);
      rest.remove_suffix(1);
      IbNodeRef n;
      n.is_switch = sw;
      if (sw) {
        Cursor c(rest);
        std::optional<std::string> guid = NormalGuid(c.Token());
        if (!guid) return LineErr(source, ln, "expected \"Switch: 0xGUID NAME:\"", raw);
        n.guid = *guid;
        c.SkipSpace();
        rest = c.Rest();
      }
      n.desc = Desc(rest, source, ln, out.warnings);
      guids.Note(n.guid, n.desc, source, ln, out.warnings);
      node = std::move(n);
      header_line = ln;
      header_has_ports = false;
      continue;
    }

    IbPortSeen p;
    p.line = ln;
    Cursor c(raw);
    c.SkipSpace();
    if (*line_mode) {
      std::optional<std::string> guid = NormalGuid(c.Token());
      if (!guid)
        return LineErr(source, ln, "expected a --line port line starting with the port GUID", raw);
      std::size_t link = raw.find("==(");
      std::size_t close = link == std::string_view::npos ? link : raw.rfind('"', link);
      c.SkipSpace();
      if (!c.Eat("\"") || close == std::string_view::npos || close < c.pos()) {
        return LineErr(source, ln, "expected \"NODE DESCRIPTION\" after the port GUID", raw);
      }
      // "%30s": the description is padded on the left.
      std::string_view desc = raw.substr(c.pos(), close - c.pos());
      while (!desc.empty() && desc.front() == ' ') desc.remove_prefix(1);
      p.node.desc = Desc(desc, source, ln, out.warnings);
      p.port_guid = *guid;
      c.set_pos(close + 1);
      c.SkipSpace();
    } else {
      if (!node) return LineErr(source, ln, "port line before any node header", raw);
      p.node = *node;
      header_has_ports = true;
      if (c.Peek("0x")) {
        std::optional<std::string> guid = NormalGuid(c.Token());
        if (!guid) return LineErr(source, ln, "expected the port GUID", raw);
        if (!node->is_switch) p.port_guid = *guid;
        c.SkipSpace();
      }
    }
    std::optional<int> lid = text::ToIntIn(c.Token(), 0, kMaxLid);
    if (!lid)
      return LineErr(source, ln, "expected a port line (LID, port, ==( link )==>, peer)", raw);
    p.node.lid = *lid;
    c.SkipSpace();
    std::string_view digits = c.Digits();
    std::optional<int> port = text::ToIntIn(digits, 1, kMaxPort);
    if (!port) {
      return LineErr(source, ln,
                     digits.empty() ? std::string("expected a port number")
                                    : fmt::format("port number out of range (1 to {})", kMaxPort),
                     raw);
    }
    p.port = *port;
    if (!ExtField(c)) return LineErr(source, ln, "expected \"[  ]\" after the port number", raw);
    c.SkipSpace();
    if (!c.Eat("==(")) return LineErr(source, ln, "expected \"==(\" after the port", raw);
    std::optional<std::string_view> field = c.Until(")==>");
    if (!field)
      return LineErr(source, ln, "expected \")==>\" closing the link (truncated line?)", raw);
    if (std::optional<std::string> bad = ParseLinkField(*field, p))
      return LineErr(source, ln, *bad, raw);

    int peer_lid = 0;
    std::string peer_desc_raw;
    if (std::optional<std::string> bad = ParseRemote(c, *line_mode, p, peer_lid, peer_desc_raw)) {
      return LineErr(source, ln, *bad, raw);
    }
    if (p.peer_port > 0) {
      IbNodeRef peer;
      peer.lid = peer_lid;
      peer.desc = Desc(peer_desc_raw, source, ln, out.warnings);
      p.peer = std::move(peer);
    }
    out.ports.push_back(std::move(p));
  }
  if (!header_has_ports) {
    return LineErr(source, header_line,
                   "node header with no port lines after it (truncated output?)",
                   lines[header_line - 1]);
  }
  if (out.ports.empty())
    return Error{fmt::format("{}: no devices in the iblinkinfo output", source)};

  if (*line_mode) {
    // --line prints port GUIDs only. A switch's ports all carry its GUID; a CA's each have
    // their own. A GUID seen with two port numbers is therefore a switch's node GUID.
    std::unordered_map<std::string, int> first_port;
    std::unordered_map<std::string, bool> multi;
    auto note = [&](const std::string& g, int port) {
      auto [it, fresh] = first_port.emplace(g, port);
      if (!fresh && it->second != port) multi[g] = true;
    };
    for (const IbPortSeen& p : out.ports) {
      note(p.port_guid, p.port);
      if (p.peer) note(p.peer_port_guid, p.peer_port);
    }
    for (IbPortSeen& p : out.ports) {
      if (multi.contains(p.port_guid)) {
        p.node.is_switch = true;
        p.node.guid = std::exchange(p.port_guid, "");
      }
      if (p.peer && multi.contains(p.peer_port_guid)) {
        p.peer->is_switch = true;
        p.peer->guid = std::exchange(p.peer_port_guid, "");
      }
    }
    for (const IbPortSeen& p : out.ports)
      guids.Note(p.node.guid, p.node.desc, source, p.line, out.warnings);
  } else {
    // Peers are printed by LID: the same output lists the device with that LID.
    std::unordered_map<int, LidOwner> owners;
    for (const IbPortSeen& p : out.ports) {
      if (p.node.lid <= 0) continue;
      LidOwner o{p.node.guid, p.port_guid, p.node.desc, p.node.is_switch, p.line, false};
      auto [it, fresh] = owners.emplace(p.node.lid, o);
      if (fresh) continue;
      LidOwner& had = it->second;
      if (!had.ambiguous &&
          (had.guid != o.guid || had.port_guid != o.port_guid || had.desc != o.desc)) {
        had.ambiguous = true;
        out.warnings.push_back(fmt::format(
            "{}: LID {} is \"{}\" here but \"{}\" at line {}; peers with that LID left unresolved",
            Where(source, p.line), p.node.lid, o.desc, had.desc, had.line));
      }
    }
    for (IbPortSeen& p : out.ports) {
      if (!p.peer || p.peer->lid <= 0) continue;
      auto it = owners.find(p.peer->lid);
      if (it == owners.end() || it->second.ambiguous) continue;
      const LidOwner& o = it->second;
      if (o.desc != p.peer->desc) {
        out.warnings.push_back(
            fmt::format("{}: peer LID {} is \"{}\" here but \"{}\" at line {}; left unresolved",
                        Where(source, p.line), p.peer->lid, p.peer->desc, o.desc, o.line));
        continue;
      }
      p.peer->guid = o.guid;
      p.peer->is_switch = o.is_switch;
      p.peer_port_guid = o.port_guid;
    }
  }
  CheckBothEnds(out);
  return out;
}

namespace {

// "4xQDR", "2xNDR", "1xSDR", "??x???" as ibnetdiscover's compat tables print them.
std::optional<std::string> ParseWidthSpeed(std::string_view tok, IbPortSeen& p) {
  std::size_t x = tok.find('x');
  if (x == std::string_view::npos || x == 0) return "expected a width and speed like 4xHDR";
  std::string_view w = tok.substr(0, x);
  std::string_view s = tok.substr(x + 1);
  if (w != "??") {
    std::optional<int> width = text::ToIntIn(w, 1, 12);
    if (!width || !ValidWidth(*width)) return "expected a width and speed like 4xHDR";
    p.width = width;
  }
  if (s != "???") {
    const Generation* g = GenerationNamed(s);
    if (!g) return "expected a width and speed like 4xHDR";
    p.speed = std::string(g->name);
    p.lane_gbps = g->lane_gbps;
  }
  FillRate(p);
  return std::nullopt;
}

// "S-0002c9020046c588" inside its quotes: the node type letter and GUID.
std::optional<std::pair<char, std::string>> NodeName(Cursor& c) {
  if (!c.Eat("\"")) return std::nullopt;
  std::string_view rest = c.Rest();
  if (rest.size() < 3 || rest[1] != '-') return std::nullopt;
  char letter = rest[0];
  if (letter != 'S' && letter != 'H' && letter != 'R') return std::nullopt;
  c.Eat(rest.substr(0, 2));
  std::string_view hex = c.HexDigits();
  if (hex.size() != 16 || !c.Eat("\"")) return std::nullopt;
  return std::make_pair(letter, *NormalGuid(hex));
}

bool SkippedLine(std::string_view t) {
  static constexpr std::array<std::string_view, 6> kIds = {
      "vendid=", "devid=", "sysimgguid=", "switchguid=", "caguid=", "rtguid="};
  for (std::string_view k : kIds) {
    if (t.starts_with(k)) return true;
  }
  if (t == "Non-Chassis Nodes" || t.starts_with("Hostname: ")) return true;
  if (t.starts_with("Chassis "))
    return text::ToIntIn(Cursor(t.substr(8)).Digits(), 0, 255).has_value();
  return false;
}

}  // namespace

Result<IbSubnet> ParseIbnetdiscover(std::string_view input, std::string_view source) {
  if (Status s = text::CheckInput(input, input.size()); !s)
    return Error{fmt::format("{}: {}", source, s.error().message)};
  IbSubnet out;
  out.source = std::string(source);
  std::vector<std::string_view> lines = text::Lines(input);
  std::optional<IbNodeRef> node;
  bool any_node = false;
  GuidSeen guids;

  for (std::size_t i = 0; i < lines.size(); ++i) {
    const int ln = static_cast<int>(i) + 1;
    std::string_view raw = lines[i];
    std::string_view t = text::Trim(raw);
    if (t.empty() || t.starts_with("#") || SkippedLine(t)) continue;

    if (t.starts_with("Switch") || t.starts_with("Ca") || t.starts_with("Rt")) {
      Cursor c(t);
      std::string_view kind = c.Token();
      char want = kind == "Switch" ? 'S' : kind == "Ca" ? 'H' : kind == "Rt" ? 'R' : '\0';
      if (want == '\0')
        return LineErr(source, ln, "expected a node line (Switch, Ca, Rt) or a port line", raw);
      c.SkipSpace();
      if (!text::ToIntIn(c.Digits(), 1, 255))
        return LineErr(source, ln, "expected the node's number of ports", raw);
      c.SkipSpace();
      std::optional<std::pair<char, std::string>> name = NodeName(c);
      if (!name || name->first != want) {
        return LineErr(source, ln, fmt::format("expected \"{}-\" and a 16-digit node GUID", want),
                       raw);
      }
      c.SkipSpace();
      std::string_view rest = c.Rest();
      std::size_t open = rest.find('"');
      std::size_t close = rest.rfind('"');
      if (!rest.starts_with("#") || open == std::string_view::npos || close <= open) {
        return LineErr(source, ln, "expected # \"NODE DESCRIPTION\" after the node GUID", raw);
      }
      IbNodeRef n;
      n.guid = name->second;
      n.is_switch = want == 'S';
      n.desc = Desc(rest.substr(open + 1, close - open - 1), source, ln, out.warnings);
      if (n.is_switch) {
        // "base port 0 lid N lmc M" (or "enhanced port 0 ...").
        Cursor tail(rest.substr(close + 1));
        tail.SkipSpace();
        std::string_view sp0 = tail.Token();
        tail.SkipSpace();
        std::optional<int> lid;
        if ((sp0 == "base" || sp0 == "enhanced") && tail.Eat("port 0 lid "))
          lid = text::ToIntIn(tail.Digits(), 0, kMaxLid);
        if (!lid)
          return LineErr(source, ln,
                         "expected \"base port 0 lid N lmc M\" after the switch's description",
                         raw);
        n.lid = *lid;
      }
      guids.Note(n.guid, n.desc, source, ln, out.warnings);
      node = std::move(n);
      any_node = true;
      continue;
    }

    if (!t.starts_with("["))
      return LineErr(source, ln, "expected a node line (Switch, Ca, Rt) or a port line", raw);
    if (!node) return LineErr(source, ln, "port line before any node line", raw);
    IbPortSeen p;
    p.line = ln;
    p.node = *node;
    Cursor c(t);
    std::optional<int> port = BracketPort(c);
    if (!port)
      return LineErr(source, ln,
                     fmt::format("expected [PORT] with a port number from 1 to {}", kMaxPort), raw);
    p.port = *port;
    if (c.Eat("(")) {
      std::optional<std::string> pg = NormalGuid(c.HexDigits());
      if (!pg || !c.Eat(")"))
        return LineErr(source, ln, "expected (PORT GUID) after the port number", raw);
      p.port_guid = *pg;
    }
    if (!OptionalExt(c)) return LineErr(source, ln, "expected [ext N]", raw);
    c.SkipSpace();
    std::optional<std::pair<char, std::string>> peer_name = NodeName(c);
    if (!peer_name)
      return LineErr(source, ln,
                     "expected the peer as \"S-\", \"H-\" or \"R-\" and a 16-digit GUID", raw);
    std::optional<int> peer_port = BracketPort(c);
    if (!peer_port)
      return LineErr(source, ln, fmt::format("expected [PORT] after the peer, 1 to {}", kMaxPort),
                     raw);
    if (!OptionalExt(c)) return LineErr(source, ln, "expected [ext N]", raw);
    c.SkipSpace();
    if (c.Eat("(")) {
      std::optional<std::string> pg = NormalGuid(c.HexDigits());
      if (!pg || !c.Eat(")")) return LineErr(source, ln, "expected (PEER PORT GUID)", raw);
      p.peer_port_guid = *pg;
      c.SkipSpace();
    }
    if (!c.Eat("#")) return LineErr(source, ln, "expected # and the peer's description", raw);
    c.SkipSpace();
    if (c.Eat("lid ")) {  // a CA's own port: "lid N lmc M" first
      std::optional<int> lid = text::ToIntIn(c.Digits(), 0, kMaxLid);
      c.SkipSpace();
      if (!lid || !c.Eat("lmc ") || c.Digits().empty())
        return LineErr(source, ln, "expected \"lid N lmc M\"", raw);
      p.node.lid = *lid;
      c.SkipSpace();
    }
    std::string_view rest = c.Rest();
    std::size_t close = rest.rfind("\" lid ");
    if (!rest.starts_with("\"") || close == std::string_view::npos || close == 0) {
      return LineErr(source, ln,
                     "expected \"PEER DESCRIPTION\" lid N WIDTHxSPEED (truncated line?)", raw);
    }
    IbNodeRef peer;
    peer.guid = peer_name->second;
    peer.is_switch = peer_name->first == 'S';
    peer.desc = Desc(rest.substr(1, close - 1), source, ln, out.warnings);
    Cursor tail(rest.substr(close + 6));
    std::optional<int> peer_lid = text::ToIntIn(tail.Digits(), 0, kMaxLid);
    tail.SkipSpace();
    std::string_view ws = tail.Token();
    if (!peer_lid || ws.empty())
      return LineErr(source, ln, "expected lid N WIDTHxSPEED at the end (truncated line?)", raw);
    peer.lid = *peer_lid;
    if (std::optional<std::string> bad = ParseWidthSpeed(ws, p))
      return LineErr(source, ln, *bad, raw);
    // What may follow: -f's " s=N w=N v=N", Xsigo's " slot N" or " (scp)".
    p.peer = std::move(peer);
    p.peer_port = *peer_port;
    out.ports.push_back(std::move(p));
  }
  if (!any_node) return Error{fmt::format("{}: no devices in the ibnetdiscover output", source)};
  CheckBothEnds(out);
  return out;
}

std::vector<std::string> CrossCheckSubnets(const IbSubnet& a, const IbSubnet& b) {
  Identities ids;
  ids.Learn(a);
  ids.Learn(b);

  struct Cable {
    std::string key;
    std::string end1, end2;
    std::size_t port;  // index of the first line listing it
  };
  struct View {
    std::vector<Cable> cables;  // in output order, each once
    std::unordered_map<std::string, std::size_t> by_key;
    std::unordered_map<std::string, std::size_t> by_end;
  };
  auto build = [&](const IbSubnet& s) {
    View v;
    for (std::size_t i = 0; i < s.ports.size(); ++i) {
      const IbPortSeen& p = s.ports[i];
      if (!p.peer) continue;
      std::string e1 = ids.Key(LocalEnd(p));
      std::string e2 = ids.Key(PeerEnd(p));
      if (e1.empty() || e2.empty()) continue;
      if (e2 < e1) std::swap(e1, e2);
      std::string key = e1 + "|" + e2;
      if (v.by_key.contains(key)) continue;
      v.by_key.emplace(key, v.cables.size());
      v.by_end.emplace(e1, v.cables.size());
      v.by_end.emplace(e2, v.cables.size());
      v.cables.push_back({std::move(key), std::move(e1), std::move(e2), i});
    }
    return v;
  };
  View va = build(a);
  View vb = build(b);

  auto show = [](const IbSubnet& s, const Cable& c) {
    const IbPortSeen& p = s.ports[c.port];
    return fmt::format("{}: {} to {}", Where(s.source, p.line), ShowEnd(p.node, p.port),
                       ShowEnd(*p.peer, p.peer_port));
  };

  std::vector<std::string> diffs;
  for (const Cable& c : va.cables) {
    const IbPortSeen& p = a.ports[c.port];
    if (auto it = vb.by_key.find(c.key); it != vb.by_key.end()) {
      const IbPortSeen& q = b.ports[vb.cables[it->second].port];
      bool width_differs = p.width && q.width && *p.width != *q.width;
      bool speed_differs = !p.speed.empty() && !q.speed.empty() && p.speed != q.speed;
      if (width_differs || speed_differs) {
        diffs.push_back(fmt::format("{} is {}, but {}: {}", show(a, c), ShowLink(p),
                                    Where(b.source, q.line), ShowLink(q)));
      }
      continue;
    }
    std::optional<std::size_t> other;
    if (auto e = vb.by_end.find(c.end1); e != vb.by_end.end()) other = e->second;
    if (auto e = vb.by_end.find(c.end2); !other && e != vb.by_end.end()) other = e->second;
    if (other) {
      diffs.push_back(fmt::format("{}, but {}", show(a, c), show(b, vb.cables[*other])));
    } else {
      diffs.push_back(fmt::format("{}, but {} lists no cable there", show(a, c), b.source));
    }
  }
  for (const Cable& c : vb.cables) {
    if (va.by_key.contains(c.key)) continue;
    // A cable sharing an end with one of a's was reported above, from a's side.
    if (va.by_end.contains(c.end1) || va.by_end.contains(c.end2)) continue;
    diffs.push_back(fmt::format("{}, but {} lists no cable there", show(b, c), a.source));
  }
  return diffs;
}

}  // namespace gpuforge::facts
