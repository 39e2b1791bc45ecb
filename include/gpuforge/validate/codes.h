#pragma once

// The catalogue of the codes validate's verdicts carry: every non-PASS has one, spelled
// `area.what` like facts' drift codes (facts/drift.h), with the state a verdict with it has,
// what it means and the first thing to do. Reports and CI key on the code, never on the
// message. It holds validate's own codes (judging, planning, reaching the agent) and every code
// a probe's SKIP or ERROR result can carry (src/probe/**, which comes before validate and so
// spells them as literals; tests/validate/codes_test.cc holds the two together). The drift
// codes a `facts` verdict carries are facts::DriftCodes(); the few that mean the same thing
// here are rows of both. docs/validate.md lists every code (tested).

#include <span>
#include <string>
#include <string_view>

namespace gpuforge::validate {

enum class State { kPass, kWarn, kFail, kSkip, kError };
const char* ToString(State s);  // "PASS", ...

struct CodeInfo {
  std::string_view code;         // "ib.link_width"
  State severity;                // the state of a verdict with this code
  std::string_view summary;      // what it means, for people
  std::string_view next_step;    // what to do first; a verdict may name the node, check or file
  std::string_view renamed_from = {};  // its underscored spelling before the rename ("ib_link_width")
};

// In catalogue order: validate's own codes, then the probes' by area.
std::span<const CodeInfo> Codes();
// nullptr when the catalogue has no such code (a probe's code from an agent of another version).
const CodeInfo* FindCode(std::string_view code);
// The row of a code gpuforge itself gives a verdict. A code missing from the catalogue is a
// bug; builds without NDEBUG (every test build) stop on it, naming the code.
CodeInfo Code(std::string_view code);

}  // namespace gpuforge::validate
