#pragma once

// What the facts targets check beyond "parses or says why": whatever a parser returns can be
// shown (`facts --format json`, the one-line summary) without throwing, as cmd_facts shows it.

#include <nlohmann/json.hpp>

#include <string>

#include "fuzz_check.h"
#include "gpuforge/base/result.h"
#include "gpuforge/facts/facts.h"
#include "gpuforge/facts/json.h"

namespace gpuforge::fuzz {

inline void CheckShowable(const facts::NodeFacts& f) {
  try {
    (void)facts::ToJson(f).dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
  } catch (const nlohmann::json::exception& e) {
    FUZZ_CHECK(false, "facts --format json would throw: %s", e.what());
  }
  (void)facts::Summary(f);
}

// A refusal must say what is wrong.
template <class T>
void CheckError(const Result<T>& r) {
  if (!r.ok()) FUZZ_CHECK(!r.error().message.empty(), "an error without a message");
}

}  // namespace gpuforge::fuzz
