#include "gpuforge/inventory/loader.h"

#include <fmt/format.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/parser.h>
#include <yaml-cpp/yaml.h>

#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "gpuforge/base/names.h"
#include "gpuforge/base/read_file.h"
#include "gpuforge/base/text.h"
#include "gpuforge/inventory/schema.h"
#include "gpuforge/inventory/yaml_reader.h"
#include "inventory/sections.h"

namespace gpuforge::inventory {

namespace internal {

namespace {

model::Cooling CoolingOf(const std::string& s) {
  return s == "air" ? model::Cooling::kAir : model::Cooling::kLiquid;
}

}  // namespace

using quantity::Dimension;

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
    out->text[k] = *v;
    out->where[k] = r_.Pos(key);
  }
}

}  // namespace internal

std::string LoadOutcome::FormatDiagnostics() const {
  std::string out;
  for (const Diagnostic& d : diags.items()) out += FormatDiagnostic(d, source.get());
  std::size_t errors = diags.error_count();
  if (errors > 0) out += fmt::format("{} error{} in {}\n", errors, errors == 1 ? "" : "s", source ? source->path() : "inventory");
  return out;
}

namespace {

// Counts the values of one document and stops, by throwing, past the limit.
class ValueCounter : public YAML::EventHandler {
 public:
  struct Over {
    YAML::Mark mark;
  };
  explicit ValueCounter(std::size_t limit) : limit_(limit) {}
  std::size_t count() const { return count_; }

  void OnDocumentStart(const YAML::Mark&) override {}
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& m, YAML::anchor_t) override { Add(m); }
  void OnAlias(const YAML::Mark& m, YAML::anchor_t) override { Add(m); }
  void OnScalar(const YAML::Mark& m, const std::string&, YAML::anchor_t, const std::string&) override { Add(m); }
  void OnSequenceStart(const YAML::Mark& m, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {
    Add(m);
  }
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark& m, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override { Add(m); }
  void OnMapEnd() override {}

 private:
  void Add(const YAML::Mark& m) {
    if (++count_ > limit_) throw Over{m};
  }
  std::size_t limit_;
  std::size_t count_ = 0;
};

}  // namespace

ValueCount CountYamlValues(std::string_view text, std::size_t limit) {
  std::istringstream in{std::string(text)};
  ValueCounter counter(limit);
  try {
    YAML::Parser parser(in);
    parser.HandleNextDocument(counter);
  } catch (const ValueCounter::Over& over) {
    return {counter.count(), over.mark.line + 1, over.mark.column + 1};
  } catch (const YAML::Exception&) {
    // A syntax error: YAML::Load reports it with its position.
  }
  return {counter.count(), 0, 0};
}

LoadOutcome LoadString(std::string_view text, const std::string& path) {
  LoadOutcome out;
  out.source = std::make_shared<SourceFile>(path, std::string(text));
  // yaml-cpp makes at most 1.5 values of a byte (":," in a flow sequence is a map, a null key and
  // a null value: 3 for 2 bytes), so a text of up to kMaxYamlValues / 1.5 bytes (1.33 MiB) cannot
  // pass the budget and is not counted; larger files pay for the streaming count, and a file over
  // budget never becomes a tree (#28 item 21).
  if (text.size() * 3 / 2 + 16 > kMaxYamlValues) {
    const ValueCount n = CountYamlValues(text, kMaxYamlValues);
    if (n.line > 0) {
      out.diags.Error(SourcePos{path, n.line, n.col},
                      fmt::format("the inventory holds more than {} YAML values (scalars, lists and maps) by here; "
                                  "gpuforge stops at that many to keep the parsed file near 1 GB of memory. One line "
                                  "per node or per cable fits about 16,000 nodes: write nodes and links as hostlist "
                                  "ranges (gpu[0001-4096], leaf01:[1-32]) instead",
                                  kMaxYamlValues));
      return out;
    }
  }
  internal::Loader loader(path, &out.diags);
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
    // Values quoted in a message may hold newlines or other control characters (YAML
    // escapes); they are shown escaped so every diagnostic stays on one line. The rest is our
    // own text, UTF-8 and backslashes included.
    d.message = text::Escape(d.message, {.keep_non_ascii = true, .escape_backslash = false, .named_line_ends = true});
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
  // A pipe is read too (the same cap), and "-" is standard input, named "<stdin>" in messages;
  // its relative file references resolve against the working directory (#28 item 24).
  const std::string label = path == "-" ? std::string(base::kStdinLabel) : path;
  auto fail = [&](std::string message) {
    LoadOutcome out;
    out.source = std::make_shared<SourceFile>(label, "");
    out.diags.Error(SourcePos{label, 0, 0}, std::move(message));
    return out;
  };
  // One bounded reader for every user-given file (base/read_file.h): a device is refused
  // without reading it, and the cap holds whatever stat says (`lint /dev/zero` grew past 2 GB
  // before); a pipe is read to the same cap.
  base::InputFile in{path, "inventory", 64u << 20, false};
  in.allow_pipe = true;
  Result<std::string> read = base::ReadInputFile(in);
  if (!read.ok()) return fail(read.error().message);
  return LoadString(*read, label);
}

}  // namespace gpuforge::inventory
