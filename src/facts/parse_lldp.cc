// lldpctl's neighbour listings: `-f json0`, `-f json` and `-f keyvalue` (#31).
//
// The shapes are lldpd's own (src/client/json_writer.c, kv_writer.c and display.c in
// github.com/lldpd/lldpd; tests/integration/test_lldpcli.py pins them):
// - json0 keeps every tag a list of objects: {"lldp":[{"interface":[{"name":"eth0","via":"LLDP",
//   "chassis":[{"id":[{"type":"mac","value":"..."}],"name":[{"value":"leaf1"}],...}],
//   "port":[{"id":[{"type":"ifname","value":"swp1"}],"descr":[{"value":"..."}]}]}]}]}.
// - json collapses a one-element list into its element, an object whose only key is "value"
//   into that value, and moves an object's "name" out as the key of a wrapping object:
//   {"lldp":{"interface":{"eth0":{"via":"LLDP","chassis":{"leaf1":{"id":{...},...}},
//   "port":{"id":{...},"descr":"..."}}}}}, with "interface" a list of such one-key objects
//   where there are several interfaces or neighbours (lldpd issue #236), and a chassis with no
//   name left unwrapped.
// - keyvalue prints lldp.IF.via=LLDP, lldp.IF.chassis.TYPE=ID, lldp.IF.chassis.name=...,
//   lldp.IF.port.TYPE=ID, lldp.IF.port.descr=...; the id's subtype replaces the "id" tag, and
//   a second neighbour on one interface repeats the whole block from its "via" line (newer
//   lldpd print "alias" before "via").
// lldpd up to 1.0.16 (Debian 12) wrote JSON object keys, the interface and chassis names among
// them, without escaping (fixed in 1.0.17, "client/json: escape object keys"), so a raw
// control byte inside a string is read as its \u escape here, with a warning, instead of
// losing the whole node's neighbours.

#include <fmt/format.h>

#include <array>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "facts/text.h"
#include "gpuforge/base/text.h"
#include "gpuforge/facts/fabric.h"
#include "gpuforge/facts/parse.h"

namespace gpuforge::facts {

namespace {

using J = nlohmann::json;

// lldpd's own output nests about eight deep; anything far deeper is not lldpctl's.
constexpr int kMaxDepth = 64;

// The id subtypes lldpd names (src/lib/atoms/chassis.c and port.c: *_id_subtype_map).
constexpr std::array<std::string_view, 6> kIdTypes = {"ifname", "ifalias", "local",
                                                      "mac",    "ip",      "unhandled"};

bool IsIdType(std::string_view s) {
  for (std::string_view t : kIdTypes) {
    if (s == t) return true;
  }
  return false;
}

int LineAt(std::string_view text, std::size_t byte) {
  int line = 1;
  for (std::size_t i = 0; i < byte && i < text.size(); ++i) line += text[i] == '\n';
  return line;
}

// A name kept as sent when it is printable ASCII, else with every other byte as a C escape
// (so it can neither match a designed name nor reach a terminal raw), with a warning.
class Cleaner {
 public:
  explicit Cleaner(LldpSeen* seen) : seen_(seen) {}
  std::string operator()(std::string_view s, std::string_view what, std::string_view where) {
    if (gpuforge::text::IsPrintable(s)) return std::string(s);
    std::string shown = gpuforge::text::Escape(s, {.max = 200});
    seen_->warnings.push_back(fmt::format(
        "{}: {} '{}' has control or non-ASCII bytes; kept escaped", where, what, shown));
    return shown;
  }

 private:
  LldpSeen* seen_;
};

// ---------------------------------------------------------------------------------------------
// JSON

// Escapes raw control bytes inside strings (see the file comment) and measures nesting, in one
// pass. The lines where bytes were escaped are returned for the warnings.
struct Prepared {
  std::string text;
  std::vector<int> escaped_lines;
  int too_deep_line = 0;
};

Prepared Prepare(std::string_view in) {
  Prepared p;
  p.text.reserve(in.size());
  bool in_string = false, escape = false;
  int depth = 0, line = 1;
  for (char c : in) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '\n') ++line;
    if (in_string) {
      if (escape) {
        escape = false;
      } else if (c == '\\') {
        escape = true;
      } else if (c == '"') {
        in_string = false;
      } else if (u < 0x20) {
        p.text += fmt::format("\\u{:04x}", u);
        if (p.escaped_lines.empty() || p.escaped_lines.back() != line)
          p.escaped_lines.push_back(line);
        continue;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      if (++depth > kMaxDepth && p.too_deep_line == 0) p.too_deep_line = line;
    } else if (c == '}' || c == ']') {
      --depth;
    }
    p.text.push_back(c);
  }
  return p;
}

// Every element of a list, or the one value that stands for a one-element list (json).
template <class F>
void ForEach(const J& v, F&& f) {
  if (v.is_array()) {
    for (const J& e : v) f(e);
  } else {
    f(v);
  }
}

// The single element of a one-element list (json0), or the value itself (json).
const J* One(const J& v) {
  if (v.is_array()) return v.size() == 1 ? &v[0] : nullptr;
  return &v;
}

// A text value: "x" (json), {"value": "x"} or [{"value": "x"}] (json0).
std::optional<std::string> TextOf(const J& v) {
  const J* one = One(v);
  if (one == nullptr) return std::nullopt;
  if (one->is_string()) return one->get<std::string>();
  if (one->is_object()) {
    auto it = one->find("value");
    if (it != one->end() && it->is_string()) return it->get<std::string>();
  }
  return std::nullopt;
}

std::optional<std::string> Field(const J& obj, std::string_view key) {
  auto it = obj.find(key);
  if (it == obj.end()) return std::nullopt;
  return TextOf(*it);
}

// An id: {"type": "mac", "value": "..."} (json) or a list of one such (json0).
bool IdOf(const J& v, std::string* type, std::string* value) {
  const J* one = One(v);
  if (one == nullptr || !one->is_object()) return false;
  auto t = one->find("type");
  auto val = one->find("value");
  if (val == one->end() || !val->is_string()) return false;
  *value = val->get<std::string>();
  if (t != one->end() && t->is_string()) *type = t->get<std::string>();
  return true;
}

bool LooksLikeId(const J& v) {
  const J* one = One(v);
  return one != nullptr && one->is_object() && one->contains("value");
}

// A named thing in either shape: {"name": N, ...} (json0; N itself may be [{"value": N}]) or
// {N: {...}} (json). Returns the body, the name in *name.
const J* Named(const J& e, std::string* name) {
  if (!e.is_object()) return nullptr;
  if (auto n = e.find("name"); n != e.end()) {
    if (auto t = TextOf(*n)) {
      *name = *t;
      return &e;
    }
    return nullptr;
  }
  if (e.size() == 1 && e.begin().value().is_object()) {
    *name = e.begin().key();
    return &e.begin().value();
  }
  return nullptr;
}

Status ReadInterface(const J& entry, std::string_view source, Cleaner& clean, LldpSeen* seen) {
  std::string ifname;
  const J* body = Named(entry, &ifname);
  if (body == nullptr) {
    return Error{
        fmt::format("{}: an interface entry is neither {{\"name\": IF, ...}} (json0) nor {{IF: "
                    "{{...}}}} (json): {}",
                    source, gpuforge::text::Quote(entry.dump(), 60))};
  }
  LldpNeighbor n;
  const std::string where_raw = fmt::format("{}: interface", source);
  n.local_if = clean(ifname, "interface name", where_raw);
  n.where = fmt::format("{}: interface {}", source, n.local_if);
  auto chassis = body->find("chassis");
  auto port = body->find("port");
  if (chassis == body->end() && port == body->end()) {
    // `lldpcli show interfaces` and hand-edited files list a port with nothing heard on it.
    seen->warnings.push_back(
        fmt::format("{}: no chassis and no port: no neighbour read here", n.where));
    return Status::Ok();
  }
  if (chassis == body->end()) return Error{fmt::format("{}: a port but no chassis", n.where)};
  if (port == body->end()) return Error{fmt::format("{}: a chassis but no port", n.where)};

  const J* c = One(*chassis);
  if (c == nullptr || !c->is_object())
    return Error{fmt::format("{}: the chassis is not one object", n.where)};
  // json wraps a chassis that has a name in {NAME: {...}}; one without a name is bare, and
  // json0 keeps the name as a field.
  std::string chassis_name;
  const J* cb = c;
  if (auto id = c->find("id"); id == c->end() || !LooksLikeId(*id)) {
    cb = Named(*c, &chassis_name);
    if (cb == nullptr) return Error{fmt::format("{}: the chassis has no id", n.where)};
  } else if (auto nm = Field(*c, "name")) {
    chassis_name = *nm;
  }
  auto cid = cb->find("id");
  if (cid == cb->end() || !IdOf(*cid, &n.chassis_id_type, &n.chassis_id)) {
    return Error{fmt::format("{}: the chassis has no id", n.where)};
  }
  const J* p = One(*port);
  if (p == nullptr || !p->is_object())
    return Error{fmt::format("{}: the port is not one object", n.where)};
  auto pid = p->find("id");
  if (pid == p->end() || !IdOf(*pid, &n.port_id_type, &n.port_id)) {
    return Error{fmt::format("{}: the port has no id", n.where)};
  }
  n.chassis_name = clean(chassis_name, "chassis name", n.where);
  n.chassis_id = clean(n.chassis_id, "chassis id", n.where);
  n.chassis_id_type = clean(n.chassis_id_type, "chassis id type", n.where);
  n.port_id = clean(n.port_id, "port id", n.where);
  n.port_id_type = clean(n.port_id_type, "port id type", n.where);
  if (auto d = Field(*p, "descr")) n.port_descr = clean(*d, "port description", n.where);
  seen->neighbors.push_back(std::move(n));
  return Status::Ok();
}

// ---------------------------------------------------------------------------------------------
// keyvalue

struct KvRecord {
  std::string ifname;
  int line = 0;
  bool has_via = false;
  bool has_alias = false;
  std::optional<std::pair<std::string, std::string>> chassis_id, port_id;  // type, value
  std::string chassis_name, port_descr;
};

Status FinishRecord(KvRecord& r, std::string_view source, Cleaner& clean, LldpSeen* seen) {
  const std::string where = fmt::format("{}:{}", source, r.line);
  LldpNeighbor n;
  n.local_if = clean(r.ifname, "interface name", where);
  if (!r.chassis_id) {
    return Error{fmt::format(
        "{}: interface {}: no chassis id (lldp.{}.chassis.TYPE=...); the output may be cut short",
        where, n.local_if, n.local_if)};
  }
  if (!r.port_id) {
    return Error{fmt::format(
        "{}: interface {}: no port id (lldp.{}.port.TYPE=...); the output may be cut short", where,
        n.local_if, n.local_if)};
  }
  n.where = where;
  n.chassis_id_type = clean(r.chassis_id->first, "chassis id type", where);
  n.chassis_id = clean(r.chassis_id->second, "chassis id", where);
  n.chassis_name = clean(r.chassis_name, "chassis name", where);
  n.port_id_type = clean(r.port_id->first, "port id type", where);
  n.port_id = clean(r.port_id->second, "port id", where);
  n.port_descr = clean(r.port_descr, "port description", where);
  seen->neighbors.push_back(std::move(n));
  return Status::Ok();
}

}  // namespace

Result<LldpSeen> ParseLldpctlJson(std::string_view input, std::string_view source) {
  if (Status s = text::CheckInput(input, kMaxSectionBytes); !s)
    return Error{fmt::format("{}: {}", source, s.error().message)};
  LldpSeen seen;
  seen.source = std::string(source);
  if (text::Trim(input).empty())
    return Error{fmt::format("{}:1: empty output, not lldpctl JSON", source)};
  Prepared prep = Prepare(input);
  if (prep.too_deep_line > 0) {
    return Error{fmt::format("{}:{}: nested over {} levels deep; not lldpctl JSON", source,
                             prep.too_deep_line, kMaxDepth)};
  }
  J root;
  try {
    // The one place the JSON library's exceptions are caught: a syntax error (truncated or
    // garbled output) becomes an error naming where it is.
    root = J::parse(prep.text);
  } catch (const J::parse_error& e) {
    // Positions are in the prepared text; escapes only lengthen lines, so the line holds.
    const int line = e.byte > 0 ? LineAt(prep.text, e.byte - 1) : 1;
    std::string what = e.what();
    if (auto at = what.find("parse error"); at != std::string::npos) what = what.substr(at);
    return Error{fmt::format("{}:{}: not lldpctl JSON (cut short or garbled): {}", source, line,
                             gpuforge::text::OneLine(what, 200))};
  }
  for (int line : prep.escaped_lines) {
    seen.warnings.push_back(
        fmt::format("{}:{}: a raw control byte inside a JSON string (lldpd before 1.0.17 wrote "
                    "names unescaped); read as its \\u escape",
                    source, line));
  }
  if (!root.is_object() || !root.contains("lldp")) {
    return Error{fmt::format(
        "{}:1: no \"lldp\" object at the top; not the output of `lldpctl -f json` or `-f json0`",
        source)};
  }
  Cleaner clean(&seen);
  Status status;
  ForEach(root["lldp"], [&](const J& lldp) {
    if (!status) return;
    if (!lldp.is_object()) {
      status = Error{fmt::format("{}: \"lldp\" holds {}, not an object", source, lldp.type_name())};
      return;
    }
    auto ifaces = lldp.find("interface");
    if (ifaces == lldp.end()) return;  // no neighbour at all: {"lldp": {}}
    ForEach(*ifaces, [&](const J& entry) {
      if (!status) return;
      // json with several interfaces: [{"eth0": {...}}, {"eth1": {...}}]; json with one:
      // {"eth0": {...}}; but an object of several keys can only be a json interface map
      // written by hand or by another tool, each key an interface.
      if (entry.is_object() && !entry.contains("name") && entry.size() > 1) {
        for (auto it = entry.begin(); it != entry.end() && status; ++it) {
          status = ReadInterface(J::object({{it.key(), it.value()}}), source, clean, &seen);
        }
        return;
      }
      status = ReadInterface(entry, source, clean, &seen);
    });
  });
  if (!status) return status.error();
  return seen;
}

Result<LldpSeen> ParseLldpctlKeyvalue(std::string_view input, std::string_view source) {
  if (Status s = text::CheckInput(input, kMaxSectionBytes); !s)
    return Error{fmt::format("{}: {}", source, s.error().message)};
  LldpSeen seen;
  seen.source = std::string(source);
  Cleaner clean(&seen);
  std::optional<KvRecord> cur;
  const std::vector<std::string_view> lines = text::Lines(input);
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const int line_no = static_cast<int>(i) + 1;
    std::string_view line = lines[i];
    if (text::Trim(line).empty()) continue;
    const std::size_t eq = line.find('=');
    std::string_view key = eq == std::string_view::npos ? line : line.substr(0, eq);
    if (eq == std::string_view::npos || key.substr(0, 5) != "lldp." || key.size() < 6) {
      return Error{
          fmt::format("{}:{}: expected lldp.INTERFACE.KEY=VALUE (lldpctl -f keyvalue), got {}",
                      source, line_no, gpuforge::text::Quote(line, 60))};
    }
    std::string_view value = line.substr(eq + 1);
    std::string_view rest = key.substr(5);
    // A block starts at "lldp.IF.via" (or "lldp.IF.alias" just before it): the interface name
    // is what lies between, dots and all (a VLAN interface is "eth0.100").
    auto starts = [&](std::string_view tag) {
      return rest.size() > tag.size() + 1 && rest.substr(rest.size() - tag.size()) == tag &&
             rest[rest.size() - tag.size() - 1] == '.';
    };
    const bool is_via = starts("via"), is_alias = starts("alias");
    if (is_via || is_alias) {
      std::string_view ifname = rest.substr(0, rest.size() - (is_via ? 4 : 6));
      const bool same_block =
          is_via && cur && cur->ifname == ifname && cur->has_alias && !cur->has_via;
      if (!same_block) {
        if (cur) {
          if (Status s = FinishRecord(*cur, source, clean, &seen); !s) return s.error();
        }
        cur = KvRecord{};
        cur->ifname = std::string(ifname);
        cur->line = line_no;
      }
      (is_via ? cur->has_via : cur->has_alias) = true;
      continue;
    }
    if (!cur || rest.size() <= cur->ifname.size() ||
        rest.substr(0, cur->ifname.size()) != cur->ifname || rest[cur->ifname.size()] != '.') {
      return Error{
          fmt::format("{}:{}: {} is not in an interface block (each starts with lldp.IF.via=)",
                      source, line_no, gpuforge::text::Quote(key, 60))};
    }
    std::string_view field = rest.substr(cur->ifname.size() + 1);
    auto set_id = [&](std::optional<std::pair<std::string, std::string>>& id,
                      std::string_view part) -> Status {
      if (id) {
        return Error{fmt::format("{}:{}: interface {}: a second {} id in one block", source,
                                 line_no, gpuforge::text::Quote(cur->ifname, 40), part)};
      }
      id = std::pair{std::string(field.substr(part.size() + 1)), std::string(value)};
      return Status::Ok();
    };
    Status s;
    if (field.substr(0, 8) == "chassis." && IsIdType(field.substr(8))) {
      s = set_id(cur->chassis_id, "chassis");
    } else if (field.substr(0, 5) == "port." && IsIdType(field.substr(5))) {
      s = set_id(cur->port_id, "port");
    } else if (field == "chassis.name") {
      cur->chassis_name = std::string(value);
    } else if (field == "port.descr") {
      cur->port_descr = std::string(value);
    }
    if (!s) return s.error();
  }
  if (cur) {
    if (Status s = FinishRecord(*cur, source, clean, &seen); !s) return s.error();
  }
  return seen;
}

}  // namespace gpuforge::facts
