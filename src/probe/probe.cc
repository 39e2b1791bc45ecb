#include "gpuforge/probe/probe.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>

#include "gpuforge/base/text.h"
#include "probe/registry.h"

namespace gpuforge::probe {
namespace {

constexpr std::string_view kParamChars =
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.,:/=+-";
constexpr std::string_view kWordChars =
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.:/ -+,=()";
constexpr std::size_t kMaxLine = std::size_t{1} << 20;  // a full nccl-tests sweep with per-node samples fits

bool Within(std::string_view s, std::string_view alphabet, std::size_t max) {
  return s.size() <= max && s.find_first_not_of(alphabet) == std::string_view::npos;
}

}  // namespace

const char* ToString(Outcome o) {
  switch (o) {
    case Outcome::kOk: return "ok";
    case Outcome::kSkip: return "skip";
    case Outcome::kError: return "error";
  }
  return "?";
}

gpuforge::Result<double> Context::Number(const std::string& name) const {
  auto it = params.find(name);
  if (it == params.end()) return Error{fmt::format("parameter {} is not set", name)};
  const std::string& v = it->second;
  char* end = nullptr;
  double d = std::strtod(v.c_str(), &end);
  if (v.empty() || end != v.c_str() + v.size() || !std::isfinite(d)) {
    return Error{fmt::format("parameter {}: '{}' is not a number", name, v)};
  }
  return d;
}

gpuforge::Result<std::string> Context::Text(const std::string& name) const {
  auto it = params.find(name);
  if (it == params.end()) return Error{fmt::format("parameter {} is not set", name)};
  return it->second;
}

std::vector<std::unique_ptr<Probe>> AllProbes() { return internal::MakeAll(); }

std::unique_ptr<Probe> FindProbe(std::string_view key) {
  for (std::unique_ptr<Probe>& p : AllProbes()) {
    if (p->key() == key) return std::move(p);
  }
  return nullptr;
}

gpuforge::Result<std::map<std::string, std::string>> ResolveParams(const Probe& p,
                                                                   const std::map<std::string, std::string>& given) {
  std::map<std::string, std::string> out;
  const std::vector<Param> known = p.params();
  for (const Param& k : known) out[k.name] = k.default_value;
  for (const auto& [name, value] : given) {
    bool ok = std::any_of(known.begin(), known.end(), [&](const Param& k) { return k.name == name; });
    if (!ok) {
      std::string names;
      for (const Param& k : known) names += (names.empty() ? "" : ", ") + k.name;
      return Error{fmt::format("probe {} has no parameter '{}' (it has: {})", p.key(), text::Printable(name, 64),
                               names.empty() ? "none" : names)};
    }
    if (value.empty() || !Within(value, kParamChars, 256)) {
      return Error{fmt::format("probe {}: parameter {} must be 1 to 256 of [A-Za-z0-9_.,:/=+-], not '{}'", p.key(), name,
                               text::Printable(value, 64))};
    }
    out[name] = value;
  }
  return out;
}

ProbeResult RunProbe(Probe& p, const std::map<std::string, std::string>& params, const std::atomic<bool>* cancel,
                     Exchange exchange) {
  Context ctx{params, cancel, std::move(exchange)};
  const auto start = std::chrono::steady_clock::now();
  ProbeResult r;
  try {
    r = p.Run(ctx);
  } catch (const std::exception& e) {
    // Probes do not throw by design; this keeps a slip from ending the agent without a line.
    r = Fail(p.key(), "probe.internal_error", fmt::format("{} threw: {}", p.key(), e.what()));
  }
  r.probe = p.key();
  r.params = params;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

ProbeResult Skip(std::string probe, std::string code, std::string reason) {
  ProbeResult r;
  r.probe = std::move(probe);
  r.outcome = Outcome::kSkip;
  r.code = std::move(code);
  r.reason = std::move(reason);
  return r;
}

ProbeResult Fail(std::string probe, std::string code, std::string reason) {
  ProbeResult r = Skip(std::move(probe), std::move(code), std::move(reason));
  r.outcome = Outcome::kError;
  return r;
}

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  // Nearest rank: the smallest value with at least p% of the samples at or below it.
  const double rank = std::ceil(std::clamp(p, 0.0, 100.0) / 100.0 * static_cast<double>(v.size()));
  const std::size_t i = rank < 1 ? 0 : static_cast<std::size_t>(rank) - 1;
  return v[std::min(i, v.size() - 1)];
}

std::string ToJsonLine(const ProbeResult& r) {
  nlohmann::ordered_json ms = nlohmann::ordered_json::array();
  for (const Measurement& m : r.measurements) {
    ms.push_back({{"entity", m.entity}, {"metric", m.metric}, {"value", m.value}, {"unit", m.unit},
                  {"samples", m.samples}, {"info", m.info}});
  }
  nlohmann::ordered_json j = {{"schema", kSchema},     {"probe", r.probe},   {"outcome", ToString(r.outcome)},
                              {"code", r.code},        {"reason", r.reason}, {"params", r.params},
                              {"seconds", r.seconds},  {"measurements", ms}, {"log", r.log}};
  return j.dump(-1, ' ', true, nlohmann::ordered_json::error_handler_t::replace);
}

gpuforge::Result<ProbeResult> ParseJsonLine(std::string_view source, std::string_view line) {
  auto bad = [&](std::string_view why) {
    return Error{fmt::format("{}: not a probe result ({}): '{}'", source, why, text::Printable(line, 80))};
  };
  if (line.size() > kMaxLine) return bad("longer than 1 MiB");
  nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return bad("not a JSON object");
  if (!j.contains("schema") || j["schema"] != kSchema) return bad(fmt::format("schema is not {}", kSchema));
  auto word = [&](const nlohmann::json& o, const char* key, std::string* out, std::size_t max) -> Status {
    if (!o.contains(key) || !o[key].is_string()) return bad(fmt::format("'{}' is missing or not text", key));
    const std::string v = o[key].get<std::string>();
    if (!Within(v, kWordChars, max)) return bad(fmt::format("'{}' has unexpected characters", key));
    *out = v;
    return {};
  };
  auto number = [&](const nlohmann::json& o, const char* key, double* out) -> Status {
    if (!o.contains(key) || !o[key].is_number()) return bad(fmt::format("'{}' is missing or not a number", key));
    *out = o[key].get<double>();
    if (!std::isfinite(*out)) return bad(fmt::format("'{}' is not finite", key));
    return {};
  };
  ProbeResult r;
  if (Status s = word(j, "probe", &r.probe, 64); !s.ok()) return s.error();
  std::string outcome;
  if (Status s = word(j, "outcome", &outcome, 8); !s.ok()) return s.error();
  if (outcome == "ok") r.outcome = Outcome::kOk;
  else if (outcome == "skip") r.outcome = Outcome::kSkip;
  else if (outcome == "error") r.outcome = Outcome::kError;
  else return bad("outcome is not ok, skip or error");
  if (Status s = word(j, "code", &r.code, 64); !s.ok()) return s.error();
  if (!j.contains("reason") || !j["reason"].is_string()) return bad("'reason' is missing or not text");
  r.reason = text::Printable(j["reason"].get<std::string>(), 2000);
  if (Status s = number(j, "seconds", &r.seconds); !s.ok()) return s.error();
  if (!j.contains("params") || !j["params"].is_object()) return bad("'params' is missing or not an object");
  for (const auto& [k, v] : j["params"].items()) {
    if (!v.is_string() || !Within(k, kParamChars, 64) || !Within(v.get<std::string>(), kParamChars, 256)) {
      return bad("a parameter has unexpected characters");
    }
    r.params[k] = v.get<std::string>();
  }
  if (!j.contains("measurements") || !j["measurements"].is_array()) return bad("'measurements' is missing or not a list");
  for (const nlohmann::json& m : j["measurements"]) {
    if (!m.is_object()) return bad("a measurement is not an object");
    Measurement x;
    if (Status s = word(m, "entity", &x.entity, 128); !s.ok()) return s.error();
    if (Status s = word(m, "metric", &x.metric, 64); !s.ok()) return s.error();
    if (Status s = word(m, "unit", &x.unit, 16); !s.ok()) return s.error();
    if (Status s = number(m, "value", &x.value); !s.ok()) return s.error();
    if (!m.contains("samples") || !m["samples"].is_array()) return bad("'samples' is missing or not a list");
    for (const nlohmann::json& v : m["samples"]) {
      if (!v.is_number() || !std::isfinite(v.get<double>())) return bad("a sample is not a finite number");
      x.samples.push_back(v.get<double>());
    }
    if (!m.contains("info") || !m["info"].is_object()) return bad("'info' is missing or not an object");
    for (const auto& [k, v] : m["info"].items()) {
      if (!v.is_string() || !Within(k, kWordChars, 64)) return bad("an info entry has unexpected characters");
      x.info[k] = text::Printable(v.get<std::string>(), 256);
    }
    r.measurements.push_back(std::move(x));
  }
  if (j.contains("log")) {
    if (!j["log"].is_array()) return bad("'log' is not a list");
    for (const nlohmann::json& l : j["log"]) {
      if (!l.is_string()) return bad("a log line is not text");
      r.log.push_back(text::Printable(l.get<std::string>(), 512));
    }
  }
  return r;
}

bool ValidExchangePart(std::string_view part) {
  return Within(part, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.,:=+/-", kExchangePartMax);
}

// Decided by the line's structure, not by the words in it: a part may be the word "probe", and a
// result's log may quote the exchange schema (fuzz_probe_json found the first). A line that names
// the schema but is not JSON still counts, so that ParseExchangeOffer names what is wrong with it
// instead of the agent waiting for a reply that never comes.
bool IsExchangeLine(std::string_view line) {
  if (line.find(kExchangeSchema) == std::string_view::npos) return false;
  const nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return true;
  if (!j.is_object()) return false;
  auto schema = j.find("schema");
  return schema != j.end() && schema->is_string() && schema->get<std::string>() == kExchangeSchema;
}

std::string ExchangeOfferLine(std::string_view part) {
  return nlohmann::json{{"schema", kExchangeSchema}, {"offer", std::string(part)}}.dump();
}

std::string ExchangeReplyLine(const std::vector<std::string>& parts) {
  return nlohmann::json{{"schema", kExchangeSchema}, {"parts", parts}}.dump();
}

namespace {

gpuforge::Result<nlohmann::json> ExchangeObject(std::string_view source, std::string_view line, const char* field) {
  constexpr std::size_t kMax = std::size_t{1} << 20;
  if (line.size() > kMax) return Error{fmt::format("{}: exchange line longer than {} bytes", source, kMax)};
  nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) {
    return Error{fmt::format("{}: not an exchange line: '{}'", source, text::Printable(line, 120))};
  }
  auto schema = j.find("schema");
  if (schema == j.end() || !schema->is_string() || schema->get<std::string>() != kExchangeSchema) {
    return Error{fmt::format("{}: exchange line without schema {}", source, kExchangeSchema)};
  }
  if (j.size() != 2 || !j.contains(field)) {
    return Error{fmt::format("{}: an exchange line must hold exactly \"schema\" and \"{}\"", source, field)};
  }
  return j;
}

}  // namespace

gpuforge::Result<std::string> ParseExchangeOffer(std::string_view source, std::string_view line) {
  auto j = ExchangeObject(source, line, "offer");
  if (!j.ok()) return j.error();
  const nlohmann::json& o = (*j)["offer"];
  if (!o.is_string() || !ValidExchangePart(o.get<std::string>())) {
    return Error{fmt::format("{}: exchange offer is not a string of at most {} characters of [A-Za-z0-9_.,:=+/-]",
                             source, kExchangePartMax)};
  }
  return o.get<std::string>();
}

gpuforge::Result<std::vector<std::string>> ParseExchangeReply(std::string_view source, std::string_view line) {
  auto j = ExchangeObject(source, line, "parts");
  if (!j.ok()) return j.error();
  const nlohmann::json& a = (*j)["parts"];
  if (!a.is_array() || a.empty() || a.size() > 4096) {
    return Error{fmt::format("{}: exchange reply's parts must be a list of 1 to 4096 strings", source)};
  }
  std::vector<std::string> out;
  for (const nlohmann::json& p : a) {
    if (!p.is_string() || !ValidExchangePart(p.get<std::string>())) {
      return Error{fmt::format("{}: exchange part {} is not a string of at most {} characters of "
                               "[A-Za-z0-9_.,:=+/-]",
                               source, out.size(), kExchangePartMax)};
    }
    out.push_back(p.get<std::string>());
  }
  return out;
}

}  // namespace gpuforge::probe
