// The code catalogue (validate/codes.h): one spelling, every code a probe or judge can give
// in it, every row in docs/validate.md.

#include "gpuforge/validate/codes.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "gpuforge/facts/drift.h"
#include "gpuforge_test_paths.h"
#include "validate/verdicts.h"

namespace gpuforge::validate {
namespace {

namespace fs = std::filesystem;

std::string Slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Where the sources give a code, as a literal: the shapes the probes (src/probe, which cannot
// include codes.h) and the judges (src/validate) use. A code given any other way would be
// missed here, so the sources keep to these shapes.
const std::regex& CodePatterns() {
  static const std::regex re(
      // Skip(key, "code", ...), Fail(key(), "code", ...)
      R"re(\b(?:Skip|Fail)\(\s*[^,;()]*(?:\(\))?\s*,\s*"([^"]*)")re"
      // Failure{"code", ...}, fail({"code", ...}), stop({"code", ...}), push_back({"code", ...}),
      // return {"code", ...} and the library loaders' {nullptr, "code", ...}
      R"re(|Failure\{\s*"([^"]*)")re"
      R"re(|\b(?:fail|stop|push_back)\(\s*\{\s*"([^"]*)")re"
      R"re(|return\s*\{\s*"([^"]*)"\s*,\s*(?:fmt::format|std::move|")")re"
      R"re(|\{\s*nullptr\s*,\s*"([^"]*)")re"
      // code == "code", code = "code"
      R"re(|\bcode\s*(?:==|!=|=)\s*"([^"]*)")re"
      // the judges and planners: Mark(v, "code"), ErrorVerdict(run, "code", ...),
      // NotApplicable(plan, check, node, "code", ...), LeaveOut(plan, check, node, "code", ...),
      // problem("code", ...)
      R"re(|\bMark\([^;"]*"([^"]*)")re"
      R"re(|\bErrorVerdict\(\s*run\s*,\s*"([^"]*)")re"
      R"re(|\bNotApplicable\([^;]*?,\s*"([a-z]+\.[a-z_]+)"\s*,)re"
      R"re(|\bLeaveOut\([^;]*?,\s*"([a-z]+\.[a-z_]+)"\s*,)re"
      R"re(|\bproblem\(\s*"([^"]*)")re"
      // validate/drain.cc: DrainError(node, "code", ...), drain_error("code", ...)
      R"re(|\b(?:DrainError\([^;"]*|drain_error\(\s*)"([^"]*)")re"
      // validate/blame.h: BlameOwnFailures(verdicts, "code")
      R"re(|\bBlameOwnFailures\([^;"]*"([^"]*)")re"
      // validate/burnin.cc: With(v, "code", ...); a table's codes are `.code = "code"` (above)
      R"re(|\bWith\(\s*v\s*,\s*"([^"]*)")re");
  return re;
}

// Every code literal under src/probe and src/validate (but the catalogue itself), with the
// file it was found in; a failed system call's code is "sys.<call>_failed" (probes.h).
std::map<std::string, std::string> CodesInSources() {
  std::map<std::string, std::string> found;
  const std::regex sys(R"re(SysFailure\(\s*"([a-z_]+)")re");
  for (const char* dir : {"src/probe", "src/validate"}) {
    for (const fs::directory_entry& e : fs::recursive_directory_iterator(fs::path(GPUFORGE_SOURCE_DIR) / dir)) {
      const std::string ext = e.path().extension().string();
      if (!e.is_regular_file() || (ext != ".cc" && ext != ".h") || e.path().filename() == "codes.cc") continue;
      const std::string text = Slurp(e.path());
      const std::string where = fs::relative(e.path(), GPUFORGE_SOURCE_DIR).string();
      for (std::sregex_iterator it(text.begin(), text.end(), CodePatterns()), end; it != end; ++it) {
        for (std::size_t g = 1; g < it->size(); ++g) {
          if ((*it)[g].matched) found.emplace((*it)[g].str(), where);
        }
      }
      for (std::sregex_iterator it(text.begin(), text.end(), sys), end; it != end; ++it) {
        found.emplace("sys." + (*it)[1].str() + "_failed", where);
      }
    }
  }
  // gpuforge cabling's verdict codes, one `return "cabling.x";` per state (facts::CodeOf).
  const std::regex cabling(R"re(return\s*"(cabling\.[a-z_]+)"\s*;)re");
  const std::string text = Slurp(fs::path(GPUFORGE_SOURCE_DIR) / "src/facts/cabling.cc");
  for (std::sregex_iterator it(text.begin(), text.end(), cabling), end; it != end; ++it) {
    found.emplace((*it)[1].str(), "src/facts/cabling.cc");
  }
  return found;
}

// Literals the patterns above also catch that are not codes: entities and parameter names in
// brace-initialised measurements and parameter lists.
bool NotACode(const std::string& s) { return s == "allreduce" || s == "size" || s == "iters" || s == "tx_depth" || s == "gpu"; }

TEST(Codes, OneSpellingEachOnce) {
  const std::regex dotted(R"re([a-z]+\.[a-z0-9_]+)re");
  std::set<std::string_view> seen;
  for (const CodeInfo& c : Codes()) {
    EXPECT_TRUE(std::regex_match(std::string(c.code), dotted)) << c.code;
    EXPECT_TRUE(seen.insert(c.code).second) << c.code << " twice";
    EXPECT_NE(c.severity, State::kPass) << c.code;
    EXPECT_FALSE(c.summary.empty()) << c.code;
    EXPECT_EQ(c.renamed_from.find('.'), std::string_view::npos) << c.code << ": renamed from a dotted spelling?";
  }
  EXPECT_EQ(Codes().size(), 159u);
}

TEST(Codes, ADriftCodeHereMeansWhatItMeansInFacts) {
  for (const CodeInfo& c : Codes()) {
    for (const facts::DriftCode& d : facts::DriftCodes()) {
      if (d.code != c.code) continue;
      EXPECT_NE(c.summary.find("the drift code of the same name"), std::string_view::npos) << c.code;
    }
  }
}

TEST(Codes, EveryCodeTheProbesAndJudgesGiveIsInTheCatalogue) {
  const std::map<std::string, std::string> found = CodesInSources();
  std::size_t codes = 0;
  for (const auto& [code, where] : found) {
    if (NotACode(code)) continue;
    ++codes;
    EXPECT_NE(FindCode(code), nullptr) << where << " gives '" << code << "', which src/validate/codes.cc lacks";
  }
  // The scan works: it sees codes of every kind of source.
  for (const char* known : {"probe.bad_param", "gpu.no_cuda_driver", "nccl.wrong_data", "rdma.no_device", "ib.no_devices",
                            "sys.open_failed", "tcp.timeout", "threshold.below", "ib.link_width", "agent.missing",
                            "storage.no_mount", "check.no_judge", "gpu.persistence_off"}) {
    EXPECT_TRUE(found.count(known)) << known;
  }
  EXPECT_GT(codes, 100u);
  // And the other way: a row no source gives is dead. The exceptions: agent.timeout is the
  // agent's watchdog's, in src/cli/cmd_agent.cc (whose literal is still "timeout");
  // baseline.regression is the baseline comparison's tag, in src/report/baseline.cc.
  for (const CodeInfo& c : Codes()) {
    if (found.count(std::string(c.code)) || c.code == "agent.timeout" || c.code == "baseline.regression") continue;
    ADD_FAILURE() << c.code << " is in the catalogue, but no probe or judge gives it";
  }
}

TEST(Codes, EveryCodeIsInDocsValidateMd) {
  const std::string docs = Slurp(fs::path(GPUFORGE_SOURCE_DIR) / "docs/validate.md");
  ASSERT_FALSE(docs.empty()) << "docs/validate.md is missing";
  for (const CodeInfo& c : Codes()) {
    // Its row in the catalogue table, with its state.
    const std::string row = "| `" + std::string(c.code) + "` | " + ToString(c.severity) + " |";
    EXPECT_NE(docs.find(row), std::string::npos) << "docs/validate.md lacks the row starting " << row;
    if (!c.renamed_from.empty()) {
      const std::string renamed = "`" + std::string(c.renamed_from) + "` -> `" + std::string(c.code) + "`";
      EXPECT_NE(docs.find(renamed), std::string::npos) << "docs/validate.md's rename list lacks " << renamed;
    }
  }
}

TEST(Codes, MarkGivesTheCodeAndItsState) {
  Verdict v;
  internal::Mark(v, "nccl.no_ib");
  EXPECT_EQ(v.code, "nccl.no_ib");
  EXPECT_EQ(v.state, State::kFail);
  internal::Mark(v, "rdma.no_pair");
  EXPECT_EQ(v.state, State::kSkip);
}

#ifndef NDEBUG
TEST(CodesDeathTest, ACodeMissingFromTheCatalogueStopsLoudly) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(Code("nccl.no_such_thing"), "code 'nccl.no_such_thing' is not in src/validate/codes.cc");
}
#endif

}  // namespace
}  // namespace gpuforge::validate
