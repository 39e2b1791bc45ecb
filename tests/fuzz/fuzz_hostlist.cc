// hostlist::Expand on any text, and the round trip Fold promises: the names an expression
// expands to fold into an expression that expands to the same set. The input is also read as
// names, one a line, to fold names no expression of ours would produce.

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "fuzz_check.h"
#include "gpuforge/base/hostlist.h"

namespace {

namespace hostlist = gpuforge::hostlist;

// Small, so that a wide range costs a refusal, not seconds of expansion.
constexpr std::size_t kLimit = 512;

bool Plain(const std::string& name) {
  return !name.empty() && name.find_first_of(",[] \t\n\r\v\f") == std::string::npos;
}

void CheckFoldRoundTrip(const std::vector<std::string>& names) {
  std::set<std::string> want;
  for (const std::string& n : names) {
    if (Plain(n)) want.insert(n);
  }
  std::vector<std::string> plain(want.begin(), want.end());
  const std::string folded = hostlist::Fold(plain);
  if (want.empty()) {
    FUZZ_CHECK(folded.empty(), "Fold of no names gave '%s'", folded.c_str());
    return;
  }
  auto again = hostlist::Expand(folded, kLimit * 4);
  FUZZ_CHECK(again.ok(), "Fold gave '%s', which does not expand: %s", folded.c_str(),
             again.ok() ? "" : again.error().message.c_str());
  std::set<std::string> got(again->begin(), again->end());
  FUZZ_CHECK(got == want, "Fold gave '%s', which expands to %zu names, not the %zu folded",
             folded.c_str(), got.size(), want.size());
  FUZZ_CHECK(again->size() == got.size(), "Fold gave '%s', which expands with duplicates",
             folded.c_str());
  FUZZ_CHECK(hostlist::Fold(*again) == folded, "Fold is not stable on '%s'", folded.c_str());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text = gpuforge::fuzz::AsText(data, size);
  if (auto names = hostlist::Expand(text, kLimit); names.ok()) {
    FUZZ_CHECK(!names->empty() && names->size() <= kLimit, "Expand gave %zu names", names->size());
    for (const std::string& n : *names) {
      FUZZ_CHECK(Plain(n), "Expand gave a name with a separator or bracket: '%s'", n.c_str());
    }
    CheckFoldRoundTrip(*names);
  } else {
    FUZZ_CHECK(!names.error().message.empty(), "an error without a message");
  }
  std::vector<std::string> lines;
  std::size_t start = 0;
  while (start <= text.size() && lines.size() < kLimit) {
    std::size_t nl = text.find('\n', start);
    if (nl == std::string_view::npos) nl = text.size();
    lines.emplace_back(text.substr(start, nl - start));
    start = nl + 1;
  }
  CheckFoldRoundTrip(lines);
  return 0;
}
