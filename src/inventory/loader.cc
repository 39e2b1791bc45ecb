#include "gpuforge/inventory/loader.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include "gpuforge/base/hostlist.h"
#include "gpuforge/base/names.h"
#include "gpuforge/inventory/schema.h"
#include "gpuforge/model/gpu_catalog.h"
#include "gpuforge/inventory/yaml_reader.h"

namespace gpuforge::inventory {

namespace {

using quantity::Dimension;

YAML::Node Get(const YAML::Node& map, std::string_view key) { return YamlReader::Get(map, key); }
bool Has(const YAML::Node& map, std::string_view key) { return YamlReader::Has(map, key); }

// Profiles are a few levels deep; anything deeper in an `overrides` merge is an alias cycle.
constexpr int kMaxMergeDepth = 16;

// Deep merge for node `overrides`: maps merge key by key, anything else replaces. The
// original key and value nodes are reused so positions in messages stay right.
YAML::Node Merge(const YAML::Node& base, const YAML::Node& over, int depth = 0) {
  if (!base.IsMap() || !over.IsMap() || depth > kMaxMergeDepth) return over;
  YAML::Node out(YAML::NodeType::Map);
  std::set<std::string> overridden;
  for (auto it = over.begin(); it != over.end(); ++it) {
    if (it->first.IsScalar()) overridden.insert(it->first.Scalar());
  }
  for (auto it = base.begin(); it != base.end(); ++it) {
    if (it->first.IsScalar() && overridden.count(it->first.Scalar())) continue;
    out.force_insert(it->first, it->second);
  }
  for (auto it = over.begin(); it != over.end(); ++it) {
    YAML::Node b = it->first.IsScalar() ? Get(base, it->first.Scalar()) : YAML::Node();
    out.force_insert(it->first, b.IsDefined() ? Merge(b, it->second, depth + 1) : it->second);
  }
  return out;
}

std::string Join(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& s : items) out += (out.empty() ? "" : ", ") + s;
  return out;
}

std::string DidYouMean(std::string_view word, const std::vector<std::string>& known) {
  if (auto best = names::Closest(word, known)) return fmt::format("; did you mean '{}'?", *best);
  return "";
}

// "1 bus id", "2 bus ids".
std::string Count(std::size_t n, std::string_view noun) {
  return fmt::format("{} {}{}", n, noun, n == 1 ? "" : "s");
}

// A character as a message shows it: "';'", "a space", "a control character".
std::string Describe(char c) {
  if (c == ' ') return "a space";
  if (c == '\n') return "a newline";
  if (c == '\t') return "a tab";
  auto u = static_cast<unsigned char>(c);
  if (u < 0x20 || u == 0x7f) return "a control character";
  if (u >= 0x80) return "a non-ASCII character";
  return fmt::format("'{}'", c);
}

// A message on one line: values quoted in it may hold newlines or other control characters
// (YAML escapes), which are shown escaped.
std::string OneLine(std::string_view message) {
  std::string out;
  for (char c : message) {
    auto u = static_cast<unsigned char>(c);
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\r') {
      out += "\\r";
    } else if (u < 0x20 || u == 0x7f) {
      out += fmt::format("\\x{:02x}", u);
    } else {
      out += c;
    }
  }
  return out;
}

// The 0-based position a base/ message gives as "<marker>N" (1-based when `one_based`).
std::optional<std::size_t> PositionIn(std::string_view message, std::string_view marker, bool one_based) {
  std::size_t at = message.rfind(marker);
  if (at == std::string_view::npos) return std::nullopt;
  std::size_t v = 0;
  const char* begin = message.data() + at + marker.size();
  auto [ptr, ec] = std::from_chars(begin, message.data() + message.size(), v);
  if (ec != std::errc() || ptr == begin || (one_based && v == 0)) return std::nullopt;
  return one_based ? v - 1 : v;
}

// Linux user names as useradd accepts them by default.
std::optional<std::string> CheckUser(std::string_view u) {
  bool ok = !u.empty() && u.size() <= 32 &&
            (std::islower(static_cast<unsigned char>(u[0])) || u[0] == '_');
  for (char c : u) {
    ok = ok && (std::islower(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) ||
                c == '_' || c == '-');
  }
  if (ok) return std::nullopt;
  return "a user name is lower-case letters, digits, '_' and '-', starting with a letter or '_', "
         "at most 32 characters";
}

model::NetKind NetKindOf(const std::string& s) {
  return s == "infiniband" ? model::NetKind::kInfiniband
         : s == "roce"     ? model::NetKind::kRoce
                           : model::NetKind::kEthernet;
}

model::Cooling CoolingOf(const std::string& s) {
  return s == "air" ? model::Cooling::kAir : model::Cooling::kLiquid;
}

// The ssh settings one layer (defaults, a profile, a group, a node) sets; what it leaves unset
// falls through to the layer below.
struct SshLayer {
  std::optional<std::string> user;
  std::optional<int> port;
  std::optional<std::string> identity_file;
  std::optional<std::string> jump;
  std::optional<bool> sudo;

  void ApplyTo(model::SshSettings* s) const {
    if (user) {
      s->user = *user;
      s->user_set = true;
    }
    if (port) {
      s->port = *port;
      s->port_set = true;
    }
    if (identity_file) s->identity_file = *identity_file;
    if (jump) s->jump = *jump;
    if (sudo) s->sudo = *sudo;
  }
};

// What a profile or group contributes to its nodes' ssh and vars.
struct Layer {
  SshLayer ssh;
  std::map<std::string, std::string> vars;
};

class Loader {
 public:
  Loader(const std::string& file, Diagnostics* diags) : r_(file, diags) {
    cluster_.source_file = file;
  }

  void Load(const YAML::Node& root);
  model::Cluster Take() {
    cluster_.BuildIndex();
    return std::move(cluster_);
  }

 private:
  // Expands a hostlist scalar, reporting errors at the right column of the file.
  std::optional<std::vector<std::string>> Expand(const YAML::Node& n, std::string_view what,
                                                 std::size_t limit = kMaxNodes);
  // Expands `text`, which starts at character `offset` of the scalar `n`.
  std::optional<std::vector<std::string>> ExpandPart(const YAML::Node& n, std::string_view text,
                                                     std::size_t offset, std::string_view what,
                                                     std::size_t limit);
  // Refuses a hostlist whose text holds a character outside [A-Za-z0-9] + `extra` + "[],",
  // pointing at it; `rule` says what the names may hold.
  bool CheckHostlistChars(const YAML::Node& n, std::string_view extra, std::string_view what,
                          std::string_view rule);
  // Reports `check`'s verdict on `value`; when the value is the whole scalar and the reason
  // says "at position N", the caret points at that character.
  void CheckWith(const YAML::Node& n, std::optional<std::string> (*check)(std::string_view),
                 std::string_view value, std::string_view what);
  // Values that reach config files and shell commands (vars, NCCL settings): false, with the
  // caret on the first character names::CheckSafeValue refuses, when it refuses the value.
  bool CheckSafe(const YAML::Node& n, std::string_view value, std::string_view what, std::string_view why);
  // Whether an unknown node or switch name may be one that a failed entry declared.
  bool MaybeFromFailedEntry(const std::string& name) const;
  // Notes the names a failed node or switch entry may have declared.
  void NoteFailedEntry(const YAML::Node& name_node);

  void LoadCluster(const YAML::Node& n);
  void LoadRacks(const YAML::Node& n);
  SshLayer LoadSsh(const YAML::Node& n, std::string_view what);
  std::map<std::string, std::string> LoadVars(const YAML::Node& n, std::string_view what);
  void LoadProfiles(const YAML::Node& n);
  // Loads one profile (a base one, or one derived by a node's overrides) with its ssh and
  // vars; false when it could not be loaded at all.
  bool LoadProfileEntry(const std::string& name, const YAML::Node& body, SourcePos where);
  std::optional<model::Profile> LoadProfile(const std::string& name, const YAML::Node& n);
  std::vector<model::GpuSpec> LoadGpus(const YAML::Node& n, std::string_view what);
  std::vector<model::NicSpec> LoadNics(const YAML::Node& n, std::string_view what, bool* complete);
  void LoadGroups(const YAML::Node& n);
  void LoadNodes(const YAML::Node& n);
  // The profile a node entry with `overrides` uses, "<profile>@<entry>"; nullopt on errors.
  std::optional<std::string> DeriveProfile(const std::string& base, const YAML::Node& entry,
                                           const YAML::Node& name_node, std::string_view what);
  void LoadNetworks(const YAML::Node& n);
  void LoadSwitches(const YAML::Node& n);
  void LoadLinks(const YAML::Node& n);
  void LoadStorage(const YAML::Node& n);
  void LoadSoftware(const YAML::Node& n);
  void LoadScheduler(const YAML::Node& n);
  void LoadWorkload(const YAML::Node& n);
  void LoadOverrides(const YAML::Node& n, std::string_view what, model::Overrides* out);

  struct EndpointList {
    std::vector<model::Endpoint> ends;
    bool ok = false;
  };
  EndpointList ExpandEndpoint(const YAML::Node& n, std::string_view what);

  const model::Node* FindNode(const std::string& name) const {
    auto it = node_index_.find(name);
    return it == node_index_.end() ? nullptr : &cluster_.nodes[it->second];
  }
  const model::Switch* FindSwitch(const std::string& name) const {
    auto it = switch_index_.find(name);
    return it == switch_index_.end() ? nullptr : &cluster_.switches[it->second];
  }
  const model::Profile* FindProfile(const std::string& name) const {
    auto it = profile_index_.find(name);
    return it == profile_index_.end() ? nullptr : &cluster_.profiles[it->second];
  }
  std::vector<std::string> NetworkNames() const;

  YamlReader r_;
  model::Cluster cluster_;
  // Lookups by name; the model's own are linear, and an inventory may hold 65536 nodes.
  std::unordered_map<std::string, std::size_t> node_index_, switch_index_, profile_index_;
  std::map<std::string, YAML::Node> profile_nodes_;  // as written, for `overrides`
  Layer defaults_;
  std::map<std::string, Layer> profile_layers_;
  std::map<std::string, Layer> group_layers_;
  bool racks_declared_ = false;
  // Names from entries that failed to load: references to them are not reported again, so
  // one mistake does not bury the file in follow-on errors.
  std::unordered_set<std::string> broken_nodes_;
  std::set<std::string> broken_nic_profiles_;  // a NIC entry failed: missing NICs are not news
  std::set<std::string> broken_switches_;      // switches without a usable port count
  std::vector<std::string> failed_prefixes_;   // of node and switch entries whose names are unknown
};

std::vector<std::string> Loader::NetworkNames() const {
  std::vector<std::string> known;
  for (const auto& n : cluster_.networks) known.push_back(n.name);
  return known;
}

std::optional<std::vector<std::string>> Loader::Expand(const YAML::Node& n, std::string_view what,
                                                       std::size_t limit) {
  auto text = r_.ScalarOf(n, what);
  if (!text) return std::nullopt;
  return ExpandPart(n, *text, 0, what, limit);
}

std::optional<std::vector<std::string>> Loader::ExpandPart(const YAML::Node& n, std::string_view text,
                                                           std::size_t offset, std::string_view what,
                                                           std::size_t limit) {
  Result<std::vector<std::string>> names = hostlist::Expand(text, limit);
  if (names.ok()) return std::move(*names);
  // The hostlist module says "at column N" (0-based within the expression); the caret shows
  // it, so the message need not.
  std::string msg = names.error().message;
  if (auto col = PositionIn(msg, " at column ", false)) {
    msg.erase(msg.rfind(" at column "));
    r_.Error(r_.PosAt(n, offset + *col), fmt::format("{}: {}", what, msg));
  } else {
    r_.Error(n, fmt::format("{}: {}", what, msg));
  }
  return std::nullopt;
}

bool Loader::CheckHostlistChars(const YAML::Node& n, std::string_view extra, std::string_view what,
                                std::string_view rule) {
  if (!n.IsScalar()) return true;  // ScalarOf reports it
  const std::string& s = n.Scalar();
  for (std::size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (std::isalnum(static_cast<unsigned char>(c)) || extra.find(c) != std::string_view::npos ||
        c == '[' || c == ']' || c == ',') {
      continue;
    }
    r_.Error(r_.PosAt(n, i), fmt::format("{} '{}' contains {}; {}", what, s, Describe(c), rule));
    return false;
  }
  return true;
}

void Loader::CheckWith(const YAML::Node& n, std::optional<std::string> (*check)(std::string_view),
                       std::string_view value, std::string_view what) {
  auto bad = check(value);
  if (!bad) return;
  std::optional<std::size_t> at;
  if (n.IsScalar() && n.Scalar() == value) at = PositionIn(*bad, " at position ", true);
  if (at) {
    r_.Error(r_.PosAt(n, *at), fmt::format("{}: {}", what, *bad));
  } else {
    r_.Error(n, fmt::format("{}: {}", what, *bad));
  }
}

bool Loader::CheckSafe(const YAML::Node& n, std::string_view value, std::string_view what, std::string_view why) {
  auto bad = names::CheckSafeValue(value);
  if (!bad) return true;
  // The alphabet lives in base/names; asking it one character at a time finds the culprit.
  for (std::size_t i = 0; i < value.size(); ++i) {
    if (names::CheckSafeValue(value.substr(i, 1))) {
      r_.Error(n.IsScalar() && n.Scalar() == value ? r_.PosAt(n, i) : r_.Pos(n),
               fmt::format("{} contains {}; {}, so values may hold only letters, digits and _.,:=^/+-%@~", what,
                           Describe(value[i]), why));
      return false;
    }
  }
  r_.Error(n, fmt::format("{}: {}", what, *bad));
  return false;
}

bool Loader::MaybeFromFailedEntry(const std::string& name) const {
  return std::any_of(failed_prefixes_.begin(), failed_prefixes_.end(),
                     [&](const std::string& p) { return name.starts_with(p); });
}

void Loader::NoteFailedEntry(const YAML::Node& name_node) {
  // The names an entry would have declared start with its text up to the first bracket or
  // odd character; with nothing usable, any unknown name may be one of them.
  std::string prefix;
  if (name_node.IsScalar()) {
    for (char c : name_node.Scalar()) {
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '.' && c != '_') break;
      prefix += c;
    }
  }
  failed_prefixes_.push_back(prefix);
}

void Loader::Load(const YAML::Node& root) {
  if (root.IsNull() || !root.IsDefined()) {
    r_.Error(SourcePos{r_.file(), 1, 1}, "the inventory is empty; it needs at least 'cluster', 'profiles' and 'nodes'");
    return;
  }
  if (!r_.CheckMap(root, "the inventory", schema::kInventory)) return;
  if (auto v = r_.Int(root, "version", "the inventory", 0, 1000000)) {
    if (*v != 1) {
      r_.Error(Get(root, "version"), fmt::format("inventory version {} is not supported; this gpuforge reads version 1", *v));
    }
  }
  for (std::string_view key : {"cluster", "profiles", "nodes"}) {
    if (!Has(root, key)) r_.Missing(root, key, "the inventory");
  }
  if (Has(root, "cluster")) LoadCluster(Get(root, "cluster"));
  if (Has(root, "racks")) LoadRacks(Get(root, "racks"));
  if (Has(root, "defaults")) {
    YAML::Node d = Get(root, "defaults");
    if (r_.CheckMap(d, "defaults", schema::kDefaults)) {
      defaults_.ssh = LoadSsh(Get(d, "ssh"), "defaults.ssh");
      defaults_.vars = LoadVars(Get(d, "vars"), "defaults.vars");
    }
  }
  // Order matters: each part may refer only to what is loaded before it.
  if (Has(root, "networks")) LoadNetworks(Get(root, "networks"));
  if (Has(root, "profiles")) LoadProfiles(Get(root, "profiles"));
  if (Has(root, "groups")) LoadGroups(Get(root, "groups"));
  if (Has(root, "nodes")) LoadNodes(Get(root, "nodes"));
  if (Has(root, "switches")) LoadSwitches(Get(root, "switches"));
  if (Has(root, "links")) LoadLinks(Get(root, "links"));
  if (Has(root, "storage")) LoadStorage(Get(root, "storage"));
  if (Has(root, "software")) LoadSoftware(Get(root, "software"));
  if (Has(root, "workload")) LoadWorkload(Get(root, "workload"));
  if (Has(root, "lint")) {
    YAML::Node l = Get(root, "lint");
    if (r_.CheckMap(l, "lint", schema::kLint)) {
      if (Has(l, "thresholds")) LoadOverrides(Get(l, "thresholds"), "lint.thresholds", &cluster_.lint.thresholds);
      YAML::Node dis = Get(l, "disable");
      if (Has(l, "disable") && r_.CheckSeq(dis, "lint.disable")) {
        for (const YAML::Node& id : dis) {
          if (auto s = r_.ScalarOf(id, "a rule id in lint.disable")) {
            CheckWith(id, names::CheckName, *s, "rule id in lint.disable");
            cluster_.lint.disabled.push_back(*s);
            cluster_.lint.thresholds.where.emplace("disable:" + *s, r_.Pos(id));
          }
        }
      }
    }
  }
  if (Has(root, "validation")) {
    YAML::Node v = Get(root, "validation");
    cluster_.validation.where = r_.Pos(v);
    if (r_.CheckMap(v, "validation", schema::kValidation)) {
      if (auto p = r_.Str(v, "profile", "validation")) {
        CheckWith(Get(v, "profile"), names::CheckName, *p, "validation profile");
        cluster_.validation.profile = *p;
      }
      if (Has(v, "thresholds")) LoadOverrides(Get(v, "thresholds"), "validation.thresholds", &cluster_.validation.thresholds);
    }
  }
}

void Loader::LoadCluster(const YAML::Node& n) {
  if (!r_.CheckMap(n, "cluster", schema::kCluster)) return;
  if (auto name = r_.Str(n, "name", "cluster", true)) {
    CheckWith(Get(n, "name"), names::CheckName, *name, "cluster name");
    cluster_.name = *name;
  }
  YAML::Node site = Get(n, "site");
  if (Has(n, "site") && r_.CheckMap(site, "cluster.site", schema::kSite)) {
    model::Site& s = cluster_.site;
    s.where = r_.Pos(site);
    s.rack_power_limit_w = r_.Qty(site, "rack_power_limit", "cluster.site", Dimension::kPower);
    if (auto c = r_.Choice(site, "cooling", "cluster.site", {"air", "liquid"})) s.cooling = CoolingOf(*c);
    s.power_price_per_kwh = r_.Num(site, "power_price_per_kwh", "cluster.site", 0, 1e6);
    if (auto pue = r_.Num(site, "pue", "cluster.site", 1.0, 5.0)) s.pue = *pue;
  }
  YAML::Node eco = Get(n, "economics");
  if (Has(n, "economics") && r_.CheckMap(eco, "cluster.economics", schema::kEconomics)) {
    model::Economics& e = cluster_.economics;
    e.where = r_.Pos(eco);
    e.capex = r_.Num(eco, "capex", "cluster.economics", 0, 1e15);
    e.gpu_unit_price = r_.Num(eco, "gpu_unit_price", "cluster.economics", 0, 1e12);
    e.rent_per_gpu_hour = r_.Num(eco, "rent_per_gpu_hour", "cluster.economics", 0, 1e6);
    e.opex_per_year = r_.Num(eco, "opex_per_year", "cluster.economics", 0, 1e15);
  }
}

void Loader::LoadRacks(const YAML::Node& n) {
  if (!r_.CheckOpenMap(n, "racks")) return;
  racks_declared_ = true;
  std::set<std::string> seen;
  for (auto it = n.begin(); it != n.end(); ++it) {
    YAML::Node key = it->first;
    YAML::Node body = it->second;
    if (!key.IsScalar()) continue;  // reported by CheckOpenMap
    if (!CheckHostlistChars(key, "_.-", "rack name", "rack names are letters, digits, '_', '.' and '-'")) continue;
    auto names = Expand(key, "rack name", 4096);
    if (!names) continue;
    std::string what = fmt::format("rack '{}'", key.Scalar());
    std::optional<double> limit;
    std::optional<model::Cooling> cooling;
    if (!body.IsNull()) {
      if (!r_.CheckMap(body, what, schema::kRack)) continue;
      limit = r_.Qty(body, "power_limit", what, Dimension::kPower);
      if (auto c = r_.Choice(body, "cooling", what, {"air", "liquid"})) cooling = CoolingOf(*c);
    }
    for (const std::string& name : *names) {
      CheckWith(key, names::CheckName, name, "rack name");
      if (!seen.insert(name).second) {
        r_.Error(key, fmt::format("rack '{}' is declared twice", name));
        continue;
      }
      cluster_.racks.push_back({name, limit, cooling, r_.Pos(key)});
    }
  }
}

SshLayer Loader::LoadSsh(const YAML::Node& n, std::string_view what) {
  SshLayer out;
  if (!n.IsDefined() || n.IsNull()) return out;
  if (!r_.CheckMap(n, what, schema::kSsh)) return out;
  if (auto u = r_.Str(n, "user", what)) {
    if (auto bad = CheckUser(*u)) {
      r_.Error(Get(n, "user"), fmt::format("'user' in {} is '{}'; {}", what, *u, *bad));
    } else {
      out.user = *u;
    }
  }
  if (auto p = r_.Int(n, "port", what, 1, 65535)) out.port = static_cast<int>(*p);
  if (auto f = r_.Str(n, "identity_file", what)) {
    CheckWith(Get(n, "identity_file"), names::CheckPath, *f, fmt::format("'identity_file' in {}", what));
    out.identity_file = *f;
  }
  if (auto j = r_.Str(n, "jump", what)) {
    // [user@]host[:port]: every part reaches an ssh command line.
    YAML::Node jn = Get(n, "jump");
    std::string host = *j;
    std::string jwhat = fmt::format("'jump' in {}", what);
    bool ok = true;
    if (auto at = host.find('@'); at != std::string::npos) {
      if (auto bad = CheckUser(host.substr(0, at))) {
        r_.Error(jn, fmt::format("{} is '{}': the part before '@' is not a user name; {}", jwhat, *j, *bad));
        ok = false;
      }
      host = host.substr(at + 1);
    }
    if (auto colon = host.rfind(':'); colon != std::string::npos) {
      std::string port = host.substr(colon + 1);
      int v = 0;
      auto [ptr, ec] = std::from_chars(port.data(), port.data() + port.size(), v);
      if (ec != std::errc() || ptr != port.data() + port.size() || v < 1 || v > 65535) {
        r_.Error(jn, fmt::format("{} is '{}': the port after ':' must be a number from 1 to 65535", jwhat, *j));
        ok = false;
      }
      host = host.substr(0, colon);
    }
    if (auto bad = names::CheckHostname(host)) {
      r_.Error(jn, fmt::format("{} is '{}': {}", jwhat, *j, *bad));
      ok = false;
    }
    if (ok) out.jump = *j;
  }
  out.sudo = r_.Bool(n, "sudo", what);
  return out;
}

std::map<std::string, std::string> Loader::LoadVars(const YAML::Node& n, std::string_view what) {
  std::map<std::string, std::string> out;
  if (!n.IsDefined() || n.IsNull()) return out;
  if (!r_.CheckOpenMap(n, what)) return out;
  for (auto it = n.begin(); it != n.end(); ++it) {
    YAML::Node key_node = it->first;
    YAML::Node value = it->second;
    if (!key_node.IsScalar()) continue;
    const std::string& key = key_node.Scalar();
    bool ok = !key.empty() && key.size() <= 64 && (std::isalpha(static_cast<unsigned char>(key[0])) || key[0] == '_');
    for (char c : key) ok = ok && (std::isalnum(static_cast<unsigned char>(c)) || c == '_');
    if (!ok) {
      r_.Error(key_node, fmt::format("variable name '{}' in {} must be letters, digits and '_', starting with a letter or '_'", key, what));
      continue;
    }
    auto v = r_.ScalarOf(value, fmt::format("variable '{}' in {}", key, what));
    if (!v) continue;
    if (!CheckSafe(value, *v, fmt::format("variable '{}' in {}", key, what),
                   "variables are written into rendered files and commands")) {
      continue;
    }
    out[key] = *v;
  }
  return out;
}

void Loader::LoadNetworks(const YAML::Node& n) {
  if (!r_.CheckOpenMap(n, "networks")) return;
  for (auto it = n.begin(); it != n.end(); ++it) {
    YAML::Node key = it->first;
    YAML::Node b = it->second;
    if (!key.IsScalar()) continue;
    std::string name = key.Scalar();
    if (cluster_.FindNetwork(name) != nullptr) continue;  // duplicate key: reported by CheckOpenMap
    CheckWith(key, names::CheckName, name, "network name");
    std::string what = fmt::format("network '{}'", name);
    model::Network net;
    net.name = name;
    net.where = r_.Pos(key);
    // Registered even when its body is wrong, so NICs, switches and tiers on it are not
    // reported as well.
    if (r_.CheckMap(b, what, schema::kNetwork)) {
      if (auto role = r_.Choice(b, "role", what, {"compute", "storage", "control"}, true)) {
        net.role = *role == "compute"   ? model::NetRole::kCompute
                   : *role == "storage" ? model::NetRole::kStorage
                                        : model::NetRole::kControl;
      }
      if (auto kind = r_.Choice(b, "kind", what, {"infiniband", "roce", "ethernet"}, true)) net.kind = NetKindOf(*kind);
      if (auto rate = r_.Qty(b, "rate", what, Dimension::kBandwidth)) net.rate_bytes_per_s = *rate;
      static const std::map<std::string, model::Topology> kTopo = {
          {"fat-tree", model::Topology::kFatTree},
          {"spine-leaf", model::Topology::kSpineLeaf},
          {"rail-optimized", model::Topology::kRailOptimized},
          {"single-switch", model::Topology::kSingleSwitch},
          {"l2", model::Topology::kL2},
          {"torus", model::Topology::kTorus}};
      if (auto t = r_.Choice(b, "topology", what,
                             {"fat-tree", "spine-leaf", "rail-optimized", "single-switch", "l2", "torus"})) {
        net.topology = kTopo.at(*t);
      }
    }
    cluster_.networks.push_back(std::move(net));
  }
}

std::vector<model::GpuSpec> Loader::LoadGpus(const YAML::Node& n, std::string_view what) {
  std::vector<model::GpuSpec> out;
  std::vector<YAML::Node> items;
  if (n.IsSequence()) {
    for (const YAML::Node& i : n) items.push_back(i);
  } else {
    items.push_back(n);
  }
  const std::string gwhat = fmt::format("gpus of {}", what);
  for (const YAML::Node& g : items) {
    if (!r_.CheckMap(g, gwhat, schema::kGpu)) continue;
    model::GpuSpec spec;
    spec.where = r_.Pos(g);
    auto model_name = r_.Str(g, "model", gwhat, true);
    auto count = r_.Int(g, "count", gwhat, 0, 64, true);
    if (!model_name || !count) continue;
    CheckWith(Get(g, "model"), names::CheckName, *model_name, "GPU model");
    spec.model = *model_name;
    spec.count = static_cast<int>(*count);
    const model::GpuModelInfo* info = model::FindGpuModel(*model_name);
    if (info != nullptr) {
      spec.generation = std::string(info->generation);
      spec.memory_bytes = info->memory_bytes;
      spec.tdp_w = info->tdp_w;
      spec.nvlink_bytes_per_s = info->nvlink_bytes_per_s;
      spec.form_factor = info->sxm ? model::FormFactor::kSxm : model::FormFactor::kPcie;
      spec.nvswitch = info->sxm && info->nvlink_bytes_per_s > 0 && spec.count >= 8;
    }
    auto mem = r_.Qty(g, "memory", gwhat, Dimension::kSize);
    auto tdp = r_.Qty(g, "tdp", gwhat, Dimension::kPower);
    if (info == nullptr && (!Has(g, "memory") || !Has(g, "tdp"))) {
      std::vector<std::string> known;
      for (const auto& m : model::GpuCatalog()) known.emplace_back(m.name);
      r_.Error(Get(g, "model"),
               fmt::format("GPU model '{}' is not in gpuforge's catalogue, so 'memory' and 'tdp' must be given{}",
                           *model_name, DidYouMean(*model_name, known)));
    }
    if (mem) spec.memory_bytes = *mem;
    if (tdp) spec.tdp_w = *tdp;
    if (auto ff = r_.Choice(g, "form_factor", gwhat, {"sxm", "pcie"})) {
      spec.form_factor = *ff == "sxm" ? model::FormFactor::kSxm : model::FormFactor::kPcie;
    }
    if (auto sw = r_.Bool(g, "nvswitch", gwhat)) spec.nvswitch = *sw;
    if (auto bw = r_.Qty(g, "nvlink_bandwidth", gwhat, Dimension::kBandwidth)) spec.nvlink_bytes_per_s = *bw;
    YAML::Node pci = Get(g, "pci");
    if (Has(g, "pci") && r_.CheckSeq(pci, fmt::format("'pci' in {}", gwhat))) {
      std::set<std::string> seen;
      for (const YAML::Node& p : pci) {
        if (auto s = r_.ScalarOf(p, "a GPU PCI bus id")) {
          CheckWith(p, names::CheckPciBusId, *s, "GPU PCI bus id");
          if (!seen.insert(*s).second) r_.Error(p, fmt::format("GPU PCI bus id '{}' is listed twice", *s));
        }
      }
      if (pci.size() != static_cast<std::size_t>(spec.count)) {
        r_.Error(pci, fmt::format("'pci' in {} lists {} for {} (count: {}); give one per GPU, in GPU index order", gwhat,
                                  Count(pci.size(), "bus id"), Count(spec.count, "GPU"), spec.count));
      }
      for (const YAML::Node& p : pci) spec.pci_bus_ids.push_back(p.IsScalar() ? p.Scalar() : "");
    }
    YAML::Node numa = Get(g, "numa");
    if (Has(g, "numa") && r_.CheckSeq(numa, fmt::format("'numa' in {}", gwhat))) {
      for (const YAML::Node& p : numa) {
        auto v = r_.IntOf(p, "a NUMA node", 0, 1023);
        spec.numa_nodes.push_back(v ? static_cast<int>(*v) : 0);
      }
      if (spec.numa_nodes.size() != static_cast<std::size_t>(spec.count)) {
        r_.Error(numa, fmt::format("'numa' in {} lists {} for {} (count: {}); give one per GPU, in GPU index order", gwhat,
                                   Count(spec.numa_nodes.size(), "NUMA node"), Count(spec.count, "GPU"), spec.count));
      }
    }
    out.push_back(std::move(spec));
  }
  return out;
}

std::vector<model::NicSpec> Loader::LoadNics(const YAML::Node& n, std::string_view what, bool* complete) {
  std::vector<model::NicSpec> out;
  if (!r_.CheckSeq(n, fmt::format("'nics' in {}", what))) {
    *complete = false;
    return out;
  }
  std::set<std::string> seen;
  const std::string nwhat = fmt::format("a NIC of {}", what);
  for (const YAML::Node& e : n) {
    if (!r_.CheckMap(e, nwhat, schema::kNic)) {
      *complete = false;
      continue;
    }
    YAML::Node name_node = Get(e, "name");
    if (!Has(e, "name")) {
      r_.Missing(e, "name", nwhat);
      *complete = false;
      continue;
    }
    // A NIC entry may name several devices ("mlx5_[0-7]"); per-device fields may then be
    // lists of the same length.
    auto devs = Expand(name_node, "NIC name", 64);
    if (!devs) {
      *complete = false;
      continue;
    }
    const std::size_t count = devs->size();
    auto per_device = [&](std::string_view key) -> std::vector<YAML::Node> {
      YAML::Node v = Get(e, key);
      std::vector<YAML::Node> vals;
      if (!v.IsDefined() || v.IsNull()) return vals;
      if (v.IsSequence()) {
        for (const YAML::Node& x : v) vals.push_back(x);
        if (vals.size() != count) {
          r_.Error(v, fmt::format("'{}' of NIC '{}' lists {} values for {} NICs; give one value for all, or one per NIC",
                                  key, name_node.Scalar(), vals.size(), count));
          vals.clear();
        }
      } else {
        vals.assign(count, v);
      }
      return vals;
    };
    std::vector<YAML::Node> numas = per_device("numa"), pcis = per_device("pci"), rails = per_device("rail"),
                            netdevs = per_device("netdev");
    model::NicSpec base;
    base.where = r_.Pos(e);
    if (auto kind = r_.Choice(e, "kind", nwhat, {"infiniband", "roce", "ethernet"}, true)) base.kind = NetKindOf(*kind);
    if (auto rate = r_.Qty(e, "rate", nwhat, Dimension::kBandwidth, true)) base.rate_bytes_per_s = *rate;
    if (auto port = r_.Int(e, "port", nwhat, 1, 16)) base.port = static_cast<int>(*port);
    if (auto net = r_.Str(e, "network", nwhat)) {
      if (cluster_.FindNetwork(*net) == nullptr) {
        r_.Error(Get(e, "network"), fmt::format("NIC '{}' of {} is on network '{}', which is not defined under 'networks'{}",
                                                name_node.Scalar(), what, *net, DidYouMean(*net, NetworkNames())));
      }
      base.network = *net;
    }
    for (std::size_t i = 0; i < count; ++i) {
      model::NicSpec nic = base;
      nic.name = (*devs)[i];
      CheckWith(name_node, names::CheckDeviceName, nic.name, "NIC name");
      if (!seen.insert(nic.name).second) {
        r_.Error(name_node, fmt::format("NIC '{}' appears twice in {}", nic.name, what));
      }
      if (!numas.empty()) {
        if (auto v = r_.IntOf(numas[i], "'numa' of a NIC", 0, 1023)) nic.numa_node = static_cast<int>(*v);
      }
      if (!pcis.empty()) {
        if (auto s = r_.ScalarOf(pcis[i], "'pci' of a NIC")) {
          CheckWith(pcis[i], names::CheckPciBusId, *s, "NIC PCI bus id");
          nic.pci_bus_id = *s;
        }
      }
      if (!rails.empty()) {
        if (auto v = r_.IntOf(rails[i], "'rail' of a NIC", 0, 1023)) nic.rail = static_cast<int>(*v);
      }
      if (!netdevs.empty()) {
        if (auto s = r_.ScalarOf(netdevs[i], "'netdev' of a NIC")) {
          CheckWith(netdevs[i], names::CheckDeviceName, *s, "NIC netdev");
          nic.netdev = *s;
        }
      }
      out.push_back(std::move(nic));
    }
  }
  return out;
}

std::optional<model::Profile> Loader::LoadProfile(const std::string& name, const YAML::Node& b) {
  std::string what = fmt::format("profile '{}'", name);
  if (!r_.CheckMap(b, what, schema::kProfile)) return std::nullopt;
  model::Profile p;
  p.name = name;
  p.where = r_.Pos(b);
  if (Has(b, "gpus")) p.gpus = LoadGpus(Get(b, "gpus"), what);
  YAML::Node cpu = Get(b, "cpu");
  const std::string cwhat = fmt::format("cpu of {}", what);
  if (Has(b, "cpu") && r_.CheckMap(cpu, cwhat, schema::kCpu)) {
    p.cpu.where = r_.Pos(cpu);
    if (auto m = r_.Str(cpu, "model", cwhat)) {
      // Free text for people, but it still reaches config comments: keep it printable.
      bool ok = m->size() <= 128;
      for (char c : *m) {
        ok = ok && (std::isalnum(static_cast<unsigned char>(c)) || std::string_view(" ._-+@()/").find(c) != std::string_view::npos);
      }
      if (!ok) r_.Error(Get(cpu, "model"), fmt::format("'model' in {} may hold letters, digits, spaces and ._-+@()/ only, at most 128 characters", cwhat));
      p.cpu.model = *m;
    }
    if (auto v = r_.Int(cpu, "sockets", cwhat, 1, 16, true)) p.cpu.sockets = static_cast<int>(*v);
    if (auto v = r_.Int(cpu, "cores_per_socket", cwhat, 1, 1024, true)) p.cpu.cores_per_socket = static_cast<int>(*v);
    if (auto v = r_.Int(cpu, "threads_per_core", cwhat, 1, 8)) p.cpu.threads_per_core = static_cast<int>(*v);
  }
  if (auto m = r_.Qty(b, "memory", what, Dimension::kSize)) p.memory_bytes = *m;
  YAML::Node nvme = Get(b, "nvme");
  const std::string nwhat = fmt::format("nvme of {}", what);
  if (Has(b, "nvme") && r_.CheckMap(nvme, nwhat, schema::kNvme)) {
    if (auto v = r_.Int(nvme, "count", nwhat, 0, 64, true)) p.nvme.count = static_cast<int>(*v);
    if (auto v = r_.Qty(nvme, "size", nwhat, Dimension::kSize)) p.nvme.size_bytes = *v;
    if (auto v = r_.Qty(nvme, "read_bandwidth", nwhat, Dimension::kBandwidth)) p.nvme.read_bytes_per_s = *v;
    if (auto v = r_.Qty(nvme, "write_bandwidth", nwhat, Dimension::kBandwidth)) p.nvme.write_bytes_per_s = *v;
  }
  if (Has(b, "nics")) {
    bool complete = true;
    p.nics = LoadNics(Get(b, "nics"), what, &complete);
    if (!complete) broken_nic_profiles_.insert(name);
  }
  // Non-GPU draw (CPUs, memory, NICs, fans, storage): guide 000, "Cooling and Power", has 8
  // H200s at 5.6 kW "plus CPUs, memory, networking, storage — call it 8kW per node", which is
  // 300 W per GPU; a node without GPUs still draws something.
  p.other_power_w = std::max(500.0, 300.0 * p.gpu_count());
  YAML::Node power = Get(b, "power");
  const std::string pwhat = fmt::format("power of {}", what);
  if (Has(b, "power") && r_.CheckMap(power, pwhat, schema::kPower)) {
    p.max_power_w = r_.Qty(power, "max", pwhat, Dimension::kPower);
    if (auto o = r_.Qty(power, "other", pwhat, Dimension::kPower)) p.other_power_w = *o;
  }
  return p;
}

bool Loader::LoadProfileEntry(const std::string& name, const YAML::Node& body, SourcePos where) {
  auto p = LoadProfile(name, body);
  if (!p) return false;
  p->where = std::move(where);
  std::string what = fmt::format("profile '{}'", name);
  profile_layers_[name] = Layer{LoadSsh(Get(body, "ssh"), what + " ssh"), LoadVars(Get(body, "vars"), what + " vars")};
  profile_index_[name] = cluster_.profiles.size();
  cluster_.profiles.push_back(std::move(*p));
  return true;
}

void Loader::LoadProfiles(const YAML::Node& n) {
  if (!r_.CheckOpenMap(n, "profiles")) return;
  for (auto it = n.begin(); it != n.end(); ++it) {
    YAML::Node key = it->first;
    YAML::Node body = it->second;
    if (!key.IsScalar()) continue;
    std::string name = key.Scalar();
    if (profile_nodes_.count(name)) continue;  // duplicate key: reported by CheckOpenMap
    CheckWith(key, names::CheckName, name, "profile name");
    profile_nodes_[name] = body;
    LoadProfileEntry(name, body, r_.Pos(key));
  }
}

void Loader::LoadGroups(const YAML::Node& n) {
  if (!r_.CheckOpenMap(n, "groups")) return;
  for (auto it = n.begin(); it != n.end(); ++it) {
    YAML::Node key = it->first;
    YAML::Node body = it->second;
    if (!key.IsScalar() || group_layers_.count(key.Scalar())) continue;
    model::Group g;
    g.name = key.Scalar();
    g.where = r_.Pos(key);
    CheckWith(key, names::CheckName, g.name, "group name");
    std::string what = fmt::format("group '{}'", g.name);
    Layer layer;
    // A group whose body is wrong is still a group, so its members are not reported as well.
    if (!body.IsNull() && r_.CheckMap(body, what, schema::kGroup)) {
      layer.ssh = LoadSsh(Get(body, "ssh"), what + " ssh");
      layer.vars = LoadVars(Get(body, "vars"), what + " vars");
    }
    layer.ssh.ApplyTo(&g.ssh);
    g.vars = layer.vars;
    group_layers_[g.name] = std::move(layer);
    cluster_.groups.push_back(std::move(g));
  }
}

std::optional<std::string> Loader::DeriveProfile(const std::string& base, const YAML::Node& entry,
                                                 const YAML::Node& name_node, std::string_view what) {
  YAML::Node over = Get(entry, "overrides");
  if (!r_.CheckMap(over, fmt::format("'overrides' in {}", what), schema::kProfile)) return std::nullopt;
  std::string name = fmt::format("{}@{}", base, name_node.Scalar());
  if (FindProfile(name) != nullptr) return name;  // the same entry text twice: nodes clash anyway
  // Most of the merged profile is the base profile's text, already checked: keep only problems
  // at places not reported yet, so one bad profile line stays one error.
  Diagnostics scratch;
  Diagnostics* outer = r_.Redirect(&scratch);
  bool ok = LoadProfileEntry(name, Merge(profile_nodes_[base], over), r_.Pos(over));
  r_.Redirect(outer);
  bool fresh_errors = false;
  for (const Diagnostic& d : scratch.items()) {
    bool reported = std::any_of(outer->items().begin(), outer->items().end(), [&](const Diagnostic& m) {
      return m.pos.line == d.pos.line && m.pos.col == d.pos.col;
    });
    if (reported) continue;
    fresh_errors = fresh_errors || d.severity == DiagSeverity::kError;
    outer->Add(d);
  }
  if (!ok || fresh_errors) return std::nullopt;
  return name;
}

void Loader::LoadNodes(const YAML::Node& n) {
  if (!r_.CheckSeq(n, "nodes")) return;
  std::map<std::string, SourcePos> seen_addrs;
  std::size_t total = 0;
  for (const YAML::Node& e : n) {
    YAML::Node name_node = Get(e, "name");
    if (!r_.CheckMap(e, "a node entry", schema::kNode) || !Has(e, "name")) {
      if (e.IsMap()) r_.Missing(e, "name", "a node entry");
      NoteFailedEntry(name_node);
      continue;
    }
    std::optional<std::vector<std::string>> names;
    if (CheckHostlistChars(name_node, "-.", "node name",
                           "a node name is a host name: letters, digits, '-' and '.' (with hostlist brackets)")) {
      names = Expand(name_node, "node name");
    }
    if (!names) {
      NoteFailedEntry(name_node);
      continue;
    }
    total += names->size();
    if (total > kMaxNodes) {
      r_.Error(name_node, fmt::format("the inventory declares more than {} nodes, the most one inventory may hold; split it", kMaxNodes));
      return;
    }
    const std::string what = fmt::format("node entry '{}'", name_node.Scalar());
    broken_nodes_.insert(names->begin(), names->end());
    // A failed part makes the entry declare no nodes, but its other parts are still checked
    // so that one run reports everything.
    bool ok = true;
    std::vector<std::string> addrs = *names;
    YAML::Node addr_node = Get(e, "address");
    if (Has(e, "address")) {
      std::optional<std::vector<std::string>> a;
      if (CheckHostlistChars(addr_node, "-.:", "address",
                             "an address is an IPv4 or IPv6 address or a host name (with hostlist brackets)")) {
        a = Expand(addr_node, "node address");
      }
      if (a && a->size() != names->size()) {
        r_.Error(addr_node, fmt::format("{} names {} nodes but its address list expands to {} addresses; they are paired in order, so the counts must match",
                                        what, names->size(), a->size()));
        a.reset();
      }
      ok = ok && a.has_value();
      if (a) addrs = std::move(*a);
    }
    std::vector<std::string> racks;
    if (Has(e, "rack")) {
      YAML::Node rack_node = Get(e, "rack");
      std::optional<std::vector<std::string>> rk;
      if (CheckHostlistChars(rack_node, "_.-", "rack", "rack names are letters, digits, '_', '.' and '-'")) {
        rk = Expand(rack_node, "rack", 4096);
      }
      if (rk && rk->size() != 1 && rk->size() != names->size()) {
        r_.Error(rack_node, fmt::format("{} names {} nodes but its rack list expands to {} racks; give one rack, or one per node in order",
                                        what, names->size(), rk->size()));
        rk.reset();
      }
      for (const std::string& rack : rk ? std::set<std::string>(rk->begin(), rk->end()) : std::set<std::string>()) {
        CheckWith(rack_node, names::CheckName, rack, "rack name");
        if (cluster_.FindRack(rack) != nullptr) continue;
        if (racks_declared_) {
          std::vector<std::string> known;
          for (const auto& rr : cluster_.racks) known.push_back(rr.name);
          r_.Error(rack_node, fmt::format("{} refers to rack '{}', which is not declared under 'racks'{}", what, rack,
                                          DidYouMean(rack, known)));
          rk.reset();
          break;
        }
        cluster_.racks.push_back({rack, std::nullopt, std::nullopt, r_.Pos(rack_node)});
      }
      ok = ok && rk.has_value();
      if (rk) racks = std::move(*rk);
    }
    std::string effective_profile;
    if (auto profile_name = r_.Str(e, "profile", what, true)) {
      if (FindProfile(*profile_name) != nullptr) {
        effective_profile = *profile_name;
        if (Has(e, "overrides")) effective_profile = DeriveProfile(*profile_name, e, name_node, what).value_or("");
      } else if (profile_nodes_.count(*profile_name) == 0) {
        std::vector<std::string> known;
        for (const auto& [k, v] : profile_nodes_) known.push_back(k);
        r_.Error(Get(e, "profile"), fmt::format("{} refers to profile '{}', which is not defined under 'profiles'{}", what,
                                                *profile_name, DidYouMean(*profile_name, known)));
      }  // else: a broken profile, already reported where it is defined
    }
    ok = ok && !effective_profile.empty();
    model::NodeRole role = model::NodeRole::kCompute;
    if (auto ro = r_.Choice(e, "role", what, {"compute", "login", "controller", "storage"})) {
      role = *ro == "compute"      ? model::NodeRole::kCompute
             : *ro == "login"      ? model::NodeRole::kLogin
             : *ro == "controller" ? model::NodeRole::kController
                                   : model::NodeRole::kStorage;
    }
    std::vector<std::string> groups;
    YAML::Node gnode = Get(e, "groups");
    if (Has(e, "groups") && r_.CheckSeq(gnode, fmt::format("'groups' in {}", what))) {
      for (const YAML::Node& g : gnode) {
        auto s = r_.ScalarOf(g, "a group name");
        if (!s) continue;
        if (!group_layers_.count(*s)) {
          std::vector<std::string> known;
          for (const auto& [k, v] : group_layers_) known.push_back(k);
          r_.Error(g, fmt::format("{} is in group '{}', which is not defined under 'groups'{}", what, *s, DidYouMean(*s, known)));
          continue;
        }
        if (std::find(groups.begin(), groups.end(), *s) != groups.end()) {
          r_.Error(g, fmt::format("{} lists group '{}' twice", what, *s));
          continue;
        }
        groups.push_back(*s);
      }
    }
    // Precedence, lowest first: defaults < profile < groups (in listed order) < node.
    const Layer node_layer{LoadSsh(Get(e, "ssh"), what + " ssh"), LoadVars(Get(e, "vars"), what + " vars")};
    if (!ok) continue;
    std::vector<const Layer*> layers = {&defaults_, &profile_layers_[effective_profile]};
    for (const std::string& g : groups) layers.push_back(&group_layers_[g]);
    layers.push_back(&node_layer);
    model::SshSettings ssh;
    ssh.user = "root";
    std::map<std::string, std::string> vars;
    for (const Layer* l : layers) {
      l->ssh.ApplyTo(&ssh);
      for (const auto& [k, v] : l->vars) vars[k] = v;
    }

    for (std::size_t i = 0; i < names->size(); ++i) {
      const std::string& name = (*names)[i];
      if (auto bad = names::CheckHostname(name)) {
        r_.Error(name_node, fmt::format("node name '{}': {}", name, *bad));
        continue;
      }
      if (auto bad = names::CheckAddress(addrs[i])) {
        r_.Error(Has(e, "address") ? addr_node : name_node, fmt::format("address '{}' of node {}: {}", addrs[i], name, *bad));
        continue;
      }
      SourcePos pos = r_.Pos(name_node);
      if (const model::Node* first = FindNode(name)) {
        r_.Error(name_node, fmt::format("node '{}' is declared twice (first at {})", name, first->where.ToString()));
        continue;
      }
      if (auto [it, fresh] = seen_addrs.emplace(addrs[i], pos); !fresh) {
        r_.Error(Has(e, "address") ? addr_node : name_node,
                 fmt::format("address '{}' of node {} is already used by a node declared at {}", addrs[i], name,
                             it->second.ToString()));
        continue;
      }
      model::Node node;
      node.name = name;
      node.address = addrs[i];
      node.rack = racks.empty() ? "" : racks.size() == 1 ? racks[0] : racks[i];
      node.profile = effective_profile;
      node.role = role;
      node.groups = groups;
      node.ssh = ssh;
      node.vars = vars;
      node.where = pos;
      node_index_[name] = cluster_.nodes.size();
      cluster_.nodes.push_back(std::move(node));
      broken_nodes_.erase(name);
    }
  }
}

void Loader::LoadSwitches(const YAML::Node& n) {
  if (!r_.CheckSeq(n, "switches")) return;
  for (const YAML::Node& e : n) {
    YAML::Node name_node = Get(e, "name");
    if (!r_.CheckMap(e, "a switch entry", schema::kSwitch) || !Has(e, "name")) {
      if (e.IsMap()) r_.Missing(e, "name", "a switch entry");
      NoteFailedEntry(name_node);
      continue;
    }
    std::optional<std::vector<std::string>> names;
    if (CheckHostlistChars(name_node, "-.", "switch name",
                           "a switch name is a host name: letters, digits, '-' and '.' (with hostlist brackets)")) {
      names = Expand(name_node, "switch name", 16384);
    }
    if (!names) {
      NoteFailedEntry(name_node);
      continue;
    }
    std::string what = fmt::format("switch entry '{}'", name_node.Scalar());
    model::Switch base;
    base.where = r_.Pos(name_node);
    if (auto t = r_.Choice(e, "tier", what, {"leaf", "spine", "core"}, true)) {
      base.tier = *t == "leaf" ? model::SwitchTier::kLeaf : *t == "spine" ? model::SwitchTier::kSpine : model::SwitchTier::kCore;
    }
    if (auto net = r_.Str(e, "network", what, true)) {
      if (cluster_.FindNetwork(*net) == nullptr) {
        r_.Error(Get(e, "network"), fmt::format("{} is on network '{}', which is not defined under 'networks'{}", what, *net,
                                                DidYouMean(*net, NetworkNames())));
      }
      base.network = *net;
    }
    if (auto m = r_.Str(e, "model", what)) {
      CheckWith(Get(e, "model"), names::CheckName, *m, "switch model");
      base.model = *m;
    }
    auto ports = r_.Int(e, "ports", what, 1, 4096, true);
    if (ports) base.ports = static_cast<int>(*ports);
    if (auto rate = r_.Qty(e, "port_rate", what, Dimension::kBandwidth, true)) base.port_rate_bytes_per_s = *rate;
    for (const std::string& name : *names) {
      CheckWith(name_node, names::CheckHostname, name, "switch name");
      if (FindSwitch(name) != nullptr) {
        r_.Error(name_node, fmt::format("switch '{}' is declared twice", name));
        continue;
      }
      if (FindNode(name) != nullptr || broken_nodes_.count(name)) {
        r_.Error(name_node, fmt::format("switch '{}' has the name of a node; link ends could not tell them apart", name));
        continue;
      }
      if (!ports) broken_switches_.insert(name);
      model::Switch s = base;
      s.name = name;
      switch_index_[name] = cluster_.switches.size();
      cluster_.switches.push_back(std::move(s));
    }
  }
}

Loader::EndpointList Loader::ExpandEndpoint(const YAML::Node& n, std::string_view what) {
  EndpointList out;
  auto text = r_.ScalarOf(n, what);
  if (!text) return out;
  // Split at the one ':' outside brackets: DEVICES:PORTS.
  int depth = 0;
  std::vector<std::size_t> colons;
  for (std::size_t i = 0; i < text->size(); ++i) {
    char c = (*text)[i];
    if (c == '[') ++depth;
    if (c == ']') --depth;
    if (c == ':' && depth == 0) colons.push_back(i);
  }
  if (colons.size() != 1) {
    r_.Error(n, fmt::format("{} '{}' must be NODE:NIC or SWITCH:PORT, with one ':' (hostlists allowed on both sides, "
                            "e.g. gpu[01-04]:mlx5_0 or leaf1:[1-4])",
                            what, *text));
    return out;
  }
  const std::size_t colon = colons[0];
  auto devs = ExpandPart(n, std::string_view(*text).substr(0, colon), 0, what, kMaxNodes);
  if (!devs) return out;
  auto ports = ExpandPart(n, std::string_view(*text).substr(colon + 1), colon + 1, what, 4096);
  if (!ports) return out;
  if (devs->size() * ports->size() > kMaxNodes * 16) {
    r_.Error(n, fmt::format("{} '{}' expands to {} endpoints; the limit is {}", what, *text,
                            devs->size() * ports->size(), kMaxNodes * 16));
    return out;
  }
  // One message per link end, naming the first problem: a wrong range must not print a
  // screenful of errors.
  std::vector<std::string> problems;
  bool silent_failure = false;
  std::vector<std::string> known;  // built on first need
  for (const std::string& d : *devs) {
    const model::Switch* sw = FindSwitch(d);
    const model::Node* node = FindNode(d);
    if (sw == nullptr && node == nullptr) {
      if (broken_nodes_.count(d) || MaybeFromFailedEntry(d)) {
        silent_failure = true;
        continue;
      }
      if (known.empty()) {
        for (const auto& s : cluster_.switches) known.push_back(s.name);
        if (cluster_.nodes.size() < 5000) {
          for (const auto& s : cluster_.nodes) known.push_back(s.name);
        }
      }
      problems.push_back(fmt::format("'{}' is neither a node nor a switch{}", d, DidYouMean(d, known)));
      continue;
    }
    if (sw != nullptr && broken_switches_.count(d)) {
      silent_failure = true;
      continue;
    }
    for (const std::string& p : *ports) {
      model::Endpoint ep;
      ep.device = d;
      if (sw != nullptr) {
        ep.kind = model::Endpoint::Kind::kSwitchPort;
        int port = 0;
        auto [ptr, ec] = std::from_chars(p.data(), p.data() + p.size(), port);
        if (ec != std::errc() || ptr != p.data() + p.size() || port < 1 || port > sw->ports) {
          problems.push_back(fmt::format("switch {} has ports 1-{}; there is no port '{}'", d, sw->ports, p));
          continue;
        }
        ep.port = port;
      } else {
        ep.kind = model::Endpoint::Kind::kNic;
        const model::Profile* prof = FindProfile(node->profile);
        bool has = prof != nullptr && std::any_of(prof->nics.begin(), prof->nics.end(),
                                                  [&](const model::NicSpec& s) { return s.name == p; });
        if (!has) {
          if (prof == nullptr || broken_nic_profiles_.count(prof->name)) {
            silent_failure = true;
            continue;
          }
          std::vector<std::string> nics;
          for (const auto& s : prof->nics) nics.push_back(s.name);
          std::string hint = nics.empty() ? "; the profile has no 'nics'" : DidYouMean(p, nics);
          if (hint.empty()) hint = fmt::format(" (it has {})", Join(nics));
          problems.push_back(fmt::format("node {} (profile '{}') has no NIC '{}'{}", d, prof->name, p, hint));
          continue;
        }
        ep.nic = p;
      }
      out.ends.push_back(std::move(ep));
    }
  }
  if (!problems.empty()) {
    std::string more = problems.size() > 1 ? fmt::format(" (and {} in this link end)", Count(problems.size() - 1, "more problem")) : "";
    r_.Error(n, fmt::format("{} '{}': {}{}", what, *text, problems.front(), more));
  }
  out.ok = problems.empty() && !silent_failure;
  return out;
}

void Loader::LoadLinks(const YAML::Node& n) {
  if (!r_.CheckSeq(n, "links")) return;
  std::map<std::string, SourcePos> used;  // "leaf1:3" / "gpu001:mlx5_0" -> first use
  for (const YAML::Node& e : n) {
    if (!r_.CheckMap(e, "a link entry", schema::kLink)) continue;
    std::optional<double> rate = r_.Qty(e, "rate", "a link entry", Dimension::kBandwidth);
    bool complete = true;
    for (std::string_view key : {"from", "to"}) {
      if (!Has(e, key)) {
        r_.Missing(e, key, "a link entry");
        complete = false;
      }
    }
    if (!complete) continue;
    YAML::Node from = Get(e, "from"), to = Get(e, "to");
    EndpointList a = ExpandEndpoint(from, "link end");
    EndpointList b = ExpandEndpoint(to, "link end");
    if (!a.ok || !b.ok) continue;
    if (a.ends.size() != b.ends.size()) {
      r_.Error(to, fmt::format("link '{}' -> '{}' pairs {} endpoints with {}; the two sides are zipped in order, so they must "
                               "expand to the same count",
                               from.Scalar(), to.Scalar(), a.ends.size(), b.ends.size()));
      continue;
    }
    // Problems are reported once per side of the entry, with a count, as in ExpandEndpoint.
    struct Problem {
      std::string first;
      std::size_t count = 0;
    };
    Problem twice_from, twice_to, nic_to_nic, loop;
    auto note = [](Problem* p, std::string msg) {
      if (p->count++ == 0) p->first = std::move(msg);
    };
    for (std::size_t i = 0; i < a.ends.size(); ++i) {
      model::Link l{a.ends[i], b.ends[i], 0, r_.Pos(e)};
      if (l.a.kind == model::Endpoint::Kind::kNic && l.b.kind == model::Endpoint::Kind::kNic) {
        note(&nic_to_nic, fmt::format("link {} -> {} joins two NICs; gpuforge models NICs cabled to switch ports",
                                      l.a.ToString(), l.b.ToString()));
        continue;
      }
      if (l.a.device == l.b.device) {
        note(&loop, fmt::format("link {} -> {} joins {} to itself", l.a.ToString(), l.b.ToString(), l.a.device));
        continue;
      }
      bool dup = false;
      for (auto [ep, side, problem] : {std::tuple{&l.a, &from, &twice_from}, std::tuple{&l.b, &to, &twice_to}}) {
        std::string key = ep->ToString();
        auto [it, inserted] = used.emplace(key, r_.Pos(*side));
        if (!inserted) {
          const char* thing = ep->kind == model::Endpoint::Kind::kNic ? "NIC" : "switch port";
          note(problem, fmt::format("{} {} is cabled twice, first at {}", thing, key, it->second.ToString()));
          dup = true;
        }
      }
      if (dup) continue;
      auto end_rate = [&](const model::Endpoint& ep) {
        if (ep.kind == model::Endpoint::Kind::kSwitchPort) return FindSwitch(ep.device)->port_rate_bytes_per_s;
        const model::Profile* p = FindProfile(FindNode(ep.device)->profile);
        for (const auto& nic : p->nics) {
          if (nic.name == ep.nic) return nic.rate_bytes_per_s;
        }
        return 0.0;
      };
      l.rate_bytes_per_s = rate ? *rate : std::min(end_rate(l.a), end_rate(l.b));
      // Keep node ends first so readers of the model need not check both orders.
      if (l.b.kind == model::Endpoint::Kind::kNic) std::swap(l.a, l.b);
      cluster_.links.push_back(std::move(l));
    }
    for (auto [problem, at] : {std::pair{&nic_to_nic, &to}, std::pair{&loop, &to}, std::pair{&twice_from, &from},
                               std::pair{&twice_to, &to}}) {
      if (problem->count == 0) continue;
      std::string more = problem->count > 1 ? fmt::format(" (and {} more like it in this entry)", problem->count - 1) : "";
      r_.Error(*at, problem->first + more);
    }
  }
}

void Loader::LoadStorage(const YAML::Node& n) {
  if (!r_.CheckMap(n, "storage", schema::kStorage)) return;
  cluster_.storage.where = r_.Pos(n);
  cluster_.storage.dataset_bytes = r_.Qty(n, "dataset", "storage", Dimension::kSize);
  YAML::Node tiers = Get(n, "tiers");
  if (!Has(n, "tiers") || !r_.CheckSeq(tiers, "storage.tiers")) return;
  std::set<std::string> seen;
  for (const YAML::Node& t : tiers) {
    if (!r_.CheckMap(t, "a storage tier", schema::kTier)) continue;
    model::StorageTier tier;
    tier.where = r_.Pos(t);
    auto name = r_.Str(t, "name", "a storage tier", true);
    if (!name) continue;
    CheckWith(Get(t, "name"), names::CheckName, *name, "storage tier name");
    if (!seen.insert(*name).second) r_.Error(Get(t, "name"), fmt::format("storage tier '{}' is declared twice", *name));
    tier.name = *name;
    std::string what = fmt::format("storage tier '{}'", *name);
    static const std::map<std::string, model::StorageKind> kKinds = {
        {"local-nvme", model::StorageKind::kLocalNvme}, {"lustre", model::StorageKind::kLustre},
        {"beegfs", model::StorageKind::kBeegfs},        {"nfs", model::StorageKind::kNfs},
        {"nas", model::StorageKind::kNas},              {"object", model::StorageKind::kObject}};
    if (auto k = r_.Choice(t, "kind", what, {"local-nvme", "lustre", "beegfs", "nfs", "nas", "object"}, true)) {
      tier.kind = kKinds.at(*k);
      tier.scope = tier.kind == model::StorageKind::kLocalNvme ? model::StorageScope::kNode : model::StorageScope::kCluster;
    }
    if (auto ro = r_.Choice(t, "role", what, {"hot", "warm", "cold"}, true)) {
      tier.role = *ro == "hot" ? model::StorageRole::kHot : *ro == "warm" ? model::StorageRole::kWarm : model::StorageRole::kCold;
    }
    if (auto s = r_.Choice(t, "scope", what, {"node", "cluster"})) {
      tier.scope = *s == "node" ? model::StorageScope::kNode : model::StorageScope::kCluster;
    }
    if (auto v = r_.Qty(t, "read_bandwidth", what, Dimension::kBandwidth, true)) tier.read_bytes_per_s = *v;
    if (auto v = r_.Qty(t, "write_bandwidth", what, Dimension::kBandwidth)) tier.write_bytes_per_s = *v;
    tier.latency_s = r_.Qty(t, "latency", what, Dimension::kDuration);
    if (auto v = r_.Qty(t, "capacity", what, Dimension::kSize)) tier.capacity_bytes = *v;
    if (auto net = r_.Str(t, "network", what)) {
      if (cluster_.FindNetwork(*net) == nullptr) {
        r_.Error(Get(t, "network"), fmt::format("{} is on network '{}', which is not defined under 'networks'{}", what, *net,
                                                DidYouMean(*net, NetworkNames())));
      }
      tier.network = *net;
    }
    if (auto m = r_.Str(t, "mount", what)) {
      CheckWith(Get(t, "mount"), names::CheckPath, *m, fmt::format("'mount' of {}", what));
      tier.mount = *m;
    }
    if (auto c = r_.Bool(t, "checkpoints", what)) tier.checkpoints = *c;
    cluster_.storage.tiers.push_back(std::move(tier));
  }
}

void Loader::LoadScheduler(const YAML::Node& n) {
  const std::string what = "software.scheduler";
  if (!r_.CheckMap(n, what, schema::kScheduler)) return;
  model::Scheduler& s = cluster_.software.scheduler;
  s.where = r_.Pos(n);
  if (auto k = r_.Choice(n, "kind", what, {"slurm", "kubernetes", "none"}, true)) {
    s.kind = *k == "slurm"        ? model::SchedulerKind::kSlurm
             : *k == "kubernetes" ? model::SchedulerKind::kKubernetes
                                  : model::SchedulerKind::kNone;
  }
  if (auto c = r_.Str(n, "controller", what)) {
    YAML::Node cn = Get(n, "controller");
    if (names::CheckHostname(*c)) {
      CheckWith(cn, names::CheckHostname, *c, "scheduler controller");
    } else if (FindNode(*c) == nullptr && !broken_nodes_.count(*c) && !MaybeFromFailedEntry(*c)) {
      std::vector<std::string> known;
      if (cluster_.nodes.size() < 5000) {
        for (const auto& x : cluster_.nodes) known.push_back(x.name);
      }
      r_.Error(cn, fmt::format("scheduler controller '{}' is not a node in the inventory{}", *c, DidYouMean(*c, known)));
    }
    s.controller = *c;
  }
  if (auto g = r_.Choice(n, "gres_autodetect", what, {"nvml", "off"})) s.gres_autodetect_nvml = *g == "nvml";
  if (auto v = r_.Bool(n, "volcano", what)) s.volcano = *v;
  if (auto p = r_.Choice(n, "topology_manager_policy", what, {"none", "best-effort", "restricted", "single-numa-node"})) {
    s.topology_manager_policy = *p;
  }
  if (auto p = r_.Choice(n, "cpu_manager_policy", what, {"none", "static"})) s.cpu_manager_policy = *p;
  YAML::Node res = Get(n, "reserved");
  if (Has(n, "reserved") && r_.CheckMap(res, what + ".reserved", schema::kReserved)) {
    if (auto c = r_.Int(res, "cpus", what + ".reserved", 0, 1024)) s.reserved_cpus = static_cast<int>(*c);
    s.reserved_memory_bytes = r_.Qty(res, "memory", what + ".reserved", Dimension::kSize);
  }
  YAML::Node parts = Get(n, "partitions");
  if (Has(n, "partitions") && r_.CheckSeq(parts, what + ".partitions")) {
    std::set<std::string> seen;
    for (const YAML::Node& p : parts) {
      if (!r_.CheckMap(p, "a partition", schema::kPartition)) continue;
      model::Partition part;
      auto name = r_.Str(p, "name", "a partition", true);
      if (!name) continue;
      CheckWith(Get(p, "name"), names::CheckName, *name, "partition name");
      if (!seen.insert(*name).second) r_.Error(Get(p, "name"), fmt::format("partition '{}' is declared twice", *name));
      part.name = *name;
      std::string pwhat = fmt::format("partition '{}'", *name);
      if (auto d = r_.Bool(p, "default", pwhat)) part.is_default = *d;
      part.max_time_s = r_.Qty(p, "max_time", pwhat, Dimension::kDuration);
      if (!Has(p, "nodes")) {
        r_.Missing(p, "nodes", pwhat);
        continue;
      }
      YAML::Node nodes_node = Get(p, "nodes");
      auto nodes = Expand(nodes_node, fmt::format("nodes of {}", pwhat));
      if (!nodes) continue;
      std::vector<std::string> missing;
      for (const std::string& node : *nodes) {
        if (FindNode(node) == nullptr && !broken_nodes_.count(node) && !MaybeFromFailedEntry(node)) {
          missing.push_back(node);
        }
      }
      if (missing.size() == 1) {
        r_.Error(nodes_node, fmt::format("{} lists node '{}', which is not in the inventory", pwhat, missing.front()));
      } else if (!missing.empty()) {
        r_.Error(nodes_node, fmt::format("{} lists {} nodes that are not in the inventory, the first '{}'", pwhat,
                                         missing.size(), missing.front()));
      }
      part.nodes = std::move(*nodes);
      s.partitions.push_back(std::move(part));
    }
  }
}

void Loader::LoadSoftware(const YAML::Node& n) {
  if (!r_.CheckMap(n, "software", schema::kSoftware)) return;
  model::Software& sw = cluster_.software;
  sw.where = r_.Pos(n);
  auto version = [&](const YAML::Node& map, std::string_view key, std::string_view what) -> std::string {
    auto v = r_.Str(map, key, what);
    if (!v) return "";
    CheckWith(Get(map, key), names::CheckVersion, *v, fmt::format("'{}' in {}", key, what));
    return *v;
  };
  YAML::Node os = Get(n, "os");
  if (Has(n, "os") && r_.CheckMap(os, "software.os", schema::kOs)) {
    if (auto d = r_.Choice(os, "distro", "software.os", {"ubuntu", "debian", "rhel", "rocky", "almalinux"}, true)) sw.os_distro = *d;
    sw.os_version = version(os, "version", "software.os");
  }
  YAML::Node drv = Get(n, "driver");
  if (Has(n, "driver") && r_.CheckMap(drv, "software.driver", schema::kDriver)) {
    sw.driver_branch = version(drv, "branch", "software.driver");
    sw.driver_version = version(drv, "version", "software.driver");
  }
  sw.cuda_version = version(n, "cuda", "software");
  YAML::Node nccl = Get(n, "nccl");
  if (Has(n, "nccl") && r_.CheckMap(nccl, "software.nccl", schema::kNccl)) {
    sw.nccl_where = r_.Pos(nccl);
    sw.nccl_version = version(nccl, "version", "software.nccl");
    if (auto f = r_.Str(nccl, "topo_file", "software.nccl")) {
      CheckWith(Get(nccl, "topo_file"), names::CheckPath, *f, "'topo_file' in software.nccl");
      sw.nccl_topo_file = *f;
    }
    YAML::Node env = Get(nccl, "env");
    if (Has(nccl, "env") && r_.CheckOpenMap(env, "software.nccl.env")) {
      for (auto it = env.begin(); it != env.end(); ++it) {
        YAML::Node key = it->first;
        YAML::Node value = it->second;
        if (!key.IsScalar()) continue;
        const std::string& k = key.Scalar();
        CheckWith(key, names::CheckEnvName, k, "NCCL environment variable");
        auto v = r_.ScalarOf(value, fmt::format("NCCL environment variable {}", k));
        if (!v) continue;
        if (!CheckSafe(value, *v, fmt::format("value of {}", k),
                       "NCCL settings are written to nccl.conf and job environments")) {
          continue;
        }
        if (k == "NCCL_TOPO_FILE" && !sw.nccl_topo_file.empty() && *v != sw.nccl_topo_file) {
          r_.Error(value, fmt::format("NCCL_TOPO_FILE is '{}' here but software.nccl.topo_file is '{}'; say it once", *v, sw.nccl_topo_file));
        }
        sw.nccl_env.emplace_back(k, *v);
      }
    }
  }
  YAML::Node rdma = Get(n, "rdma");
  if (Has(n, "rdma") && r_.CheckMap(rdma, "software.rdma", schema::kRdma)) {
    if (auto k = r_.Choice(rdma, "kind", "software.rdma", {"rdma-core", "mlnx-ofed", "doca-ofed"}, true)) sw.ofed_kind = *k;
    sw.rdma_core_version = version(rdma, "version", "software.rdma");
  }
  if (Has(n, "scheduler")) LoadScheduler(Get(n, "scheduler"));
  YAML::Node repos = Get(n, "repositories");
  if (Has(n, "repositories") && r_.CheckSeq(repos, "software.repositories")) {
    std::set<std::string> seen;
    for (const YAML::Node& y : repos) {
      if (!r_.CheckMap(y, "a repository", schema::kRepository)) continue;
      model::Repository repo;
      repo.where = r_.Pos(y);
      auto name = r_.Str(y, "name", "a repository", true);
      if (!name) continue;
      CheckWith(Get(y, "name"), names::CheckName, *name, "repository name");
      if (!seen.insert(*name).second) r_.Error(Get(y, "name"), fmt::format("repository '{}' is declared twice", *name));
      repo.name = *name;
      const std::string what = fmt::format("repository '{}'", *name);
      if (auto url = r_.Str(y, "url", what, true)) {
        CheckWith(Get(y, "url"), names::CheckUrl, *url, fmt::format("'url' of {}", what));
        repo.url = *url;
      }
      if (auto suite = r_.Str(y, "suite", what)) {
        CheckWith(Get(y, "suite"), names::CheckPath, "/" + *suite, fmt::format("'suite' of {}", what));
        repo.suite = *suite;
      }
      YAML::Node comps = Get(y, "components");
      if (Has(y, "components") && r_.CheckSeq(comps, fmt::format("'components' of {}", what))) {
        for (const YAML::Node& c : comps) {
          auto v = r_.ScalarOf(c, fmt::format("a component of {}", what));
          if (!v) continue;
          CheckWith(c, names::CheckName, *v, fmt::format("a component of {}", what));
          repo.components.push_back(*v);
        }
      }
      if (auto key = r_.Str(y, "signed_by", what)) {
        CheckWith(Get(y, "signed_by"), names::CheckPath, *key, fmt::format("'signed_by' of {}", what));
        repo.signed_by = *key;
      }
      if (auto t = r_.Bool(y, "trusted", what)) repo.trusted = *t;
      if (repo.trusted && !repo.signed_by.empty()) {
        r_.Error(Get(y, "trusted"), fmt::format("{} is both trusted (no signature check) and signed_by a key; pick one", what));
      }
      sw.repositories.push_back(std::move(repo));
    }
  }
  YAML::Node pkgs = Get(n, "packages");
  if (Has(n, "packages") && r_.CheckSeq(pkgs, "software.packages")) {
    std::set<std::string> seen;
    for (const YAML::Node& y : pkgs) {
      if (!r_.CheckMap(y, "a package", schema::kExtraPackage)) continue;
      model::ExtraPackage pkg;
      pkg.where = r_.Pos(y);
      auto name = r_.Str(y, "name", "a package", true);
      if (!name) continue;
      // Debian policy's package name alphabet (RPM's is wider; this is the common part).
      const unsigned char first = name->empty() ? 0 : static_cast<unsigned char>((*name)[0]);
      const bool ok = !name->empty() && name->size() <= 128 && (std::islower(first) != 0 || std::isdigit(first) != 0) &&
                      name->find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789.+-") == std::string::npos;
      if (!ok) {
        r_.Error(Get(y, "name"), fmt::format("package name '{}' must be [a-z0-9.+-], starting with a letter or digit", *name));
        continue;
      }
      if (!seen.insert(*name).second) r_.Error(Get(y, "name"), fmt::format("package '{}' is listed twice", *name));
      pkg.name = *name;
      pkg.version = version(y, "version", fmt::format("package '{}'", *name));
      if (auto unit = r_.Str(y, "service", fmt::format("package '{}'", *name))) {
        CheckWith(Get(y, "service"), names::CheckName, *unit, fmt::format("'service' of package '{}'", *name));
        pkg.service = *unit;
      }
      sw.packages.push_back(std::move(pkg));
    }
  }
}

void Loader::LoadWorkload(const YAML::Node& n) {
  const std::string what = "workload";
  if (!r_.CheckMap(n, what, schema::kWorkload)) return;
  model::Workload& w = cluster_.workload;
  w.present = true;
  w.where = r_.Pos(n);
  if (auto p = r_.Qty(n, "params", what, Dimension::kCount, true)) w.params = *p;
  if (auto p = r_.Choice(n, "precision", what, {"fp32", "bf16", "fp16", "fp8"})) w.precision = *p;
  if (auto o = r_.Choice(n, "optimizer", what, {"adam", "adamw", "sgd"})) w.optimizer = *o;
  YAML::Node par = Get(n, "parallelism");
  if (Has(n, "parallelism") && r_.CheckMap(par, "workload.parallelism", schema::kParallelism)) {
    if (auto v = r_.Int(par, "data", "workload.parallelism", 1, 1 << 20)) w.parallelism.data = static_cast<int>(*v);
    if (auto v = r_.Int(par, "tensor", "workload.parallelism", 1, 1024)) w.parallelism.tensor = static_cast<int>(*v);
    if (auto v = r_.Int(par, "pipeline", "workload.parallelism", 1, 1024)) w.parallelism.pipeline = static_cast<int>(*v);
  }
  w.checkpoint_interval_s = r_.Qty(n, "checkpoint_interval", what, Dimension::kDuration);
  if (auto v = r_.Qty(n, "read_bandwidth_per_gpu", what, Dimension::kBandwidth)) w.read_bytes_per_s_per_gpu = *v;
}

void Loader::LoadOverrides(const YAML::Node& n, std::string_view what, model::Overrides* out) {
  if (!r_.CheckOpenMap(n, what)) return;
  for (auto it = n.begin(); it != n.end(); ++it) {
    YAML::Node key = it->first;
    YAML::Node value = it->second;
    if (!key.IsScalar()) continue;
    const std::string& k = key.Scalar();
    bool ok = !k.empty() && k.size() <= 128;
    for (char c : k) {
      ok = ok && (std::islower(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) || c == '_' ||
                  c == '.' || c == '-');
    }
    if (!ok) {
      r_.Error(key, fmt::format("threshold key '{}' in {} must be a check or rule id and a parameter, like fabric.ethernet_scale.max_gpus", k, what));
      continue;
    }
    auto v = r_.ScalarOf(value, fmt::format("threshold {}", k));
    if (!v) continue;
    double d = 0;
    auto [ptr, ec] = std::from_chars(v->data(), v->data() + v->size(), d);
    if (ec != std::errc() || ptr != v->data() + v->size() || !std::isfinite(d)) {
      // Quantities with units are accepted too; they are stored in base units.
      bool parsed = false;
      for (auto dim : {Dimension::kBandwidth, Dimension::kSize, Dimension::kPower, Dimension::kDuration}) {
        Result<double> q = quantity::Parse(*v, dim);
        if (q.ok()) {
          d = *q;
          parsed = true;
          break;
        }
      }
      if (!parsed) {
        r_.Error(value, fmt::format("threshold {} in {} must be a number or a quantity with a unit, not '{}'", k, what, *v));
        continue;
      }
    }
    out->values[k] = d;
    out->where[k] = r_.Pos(key);
  }
}

}  // namespace

std::string LoadOutcome::FormatDiagnostics() const {
  std::string out;
  for (const Diagnostic& d : diags.items()) out += FormatDiagnostic(d, source.get());
  std::size_t errors = diags.error_count();
  if (errors > 0) out += fmt::format("{} error{} in {}\n", errors, errors == 1 ? "" : "s", source ? source->path() : "inventory");
  return out;
}

LoadOutcome LoadString(std::string_view text, const std::string& path) {
  LoadOutcome out;
  out.source = std::make_shared<SourceFile>(path, std::string(text));
  Loader loader(path, &out.diags);
  try {
    // yaml-cpp reports syntax errors by throwing, and its node accessors throw on trees they
    // dislike; this is the one place that catches them, so no exception leaves the loader.
    YAML::Node root = YAML::Load(out.source->text());
    loader.Load(root);
  } catch (const YAML::ParserException& e) {
    ReportSyntaxError(e, *out.source, &out.diags);
  } catch (const YAML::Exception& e) {
    SourcePos pos = e.mark.is_null() ? SourcePos{path, 0, 0} : SourcePos{path, e.mark.line + 1, e.mark.column + 1};
    out.diags.Error(pos, fmt::format("cannot read this part of the inventory: {}", e.msg));
  }
  // A derived profile or a shared layer can surface one problem through several entries.
  std::vector<Diagnostic> unique;
  std::set<std::tuple<int, int, std::string>> seen;
  for (Diagnostic d : out.diags.items()) {
    d.message = OneLine(d.message);
    if (seen.insert({d.pos.line, d.pos.col, d.message}).second) unique.push_back(std::move(d));
  }
  Diagnostics deduped;
  for (auto& d : unique) deduped.Add(std::move(d));
  deduped.Sort();
  out.diags = std::move(deduped);
  if (!out.diags.has_errors()) out.cluster = loader.Take();
  return out;
}

LoadOutcome LoadFile(const std::string& path) {
  namespace fs = std::filesystem;
  auto fail = [&](std::string message) {
    LoadOutcome out;
    out.source = std::make_shared<SourceFile>(path, "");
    out.diags.Error(SourcePos{path, 0, 0}, std::move(message));
    return out;
  };
  std::error_code ec;
  if (fs::is_directory(path, ec)) return fail("cannot read inventory: it is a directory, not a file");
  // Sized before reading, so a wrong path to a disk image is refused without reading it.
  constexpr std::uintmax_t kMaxBytes = 64u << 20;
  if (auto size = fs::file_size(path, ec); !ec && size > kMaxBytes) {
    return fail("inventory is larger than 64 MiB; refusing to read it");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return fail(fmt::format("cannot read inventory: {}", std::strerror(errno)));
  std::ostringstream ss;
  ss << in.rdbuf();
  std::string text = ss.str();
  if (text.size() > kMaxBytes) return fail("inventory is larger than 64 MiB; refusing to read it");
  return LoadString(text, path);
}

}  // namespace gpuforge::inventory
