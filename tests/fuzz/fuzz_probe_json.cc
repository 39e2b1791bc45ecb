// What the controller reads from an agent: probe result lines (ParseJsonLine) and the exchange
// lines of multi-node probes (ParseExchangeOffer, ParseExchangeReply). Whatever parses must
// serialise back to a line that parses to the same value.

#include <string>
#include <vector>

#include "fuzz_check.h"
#include "gpuforge/probe/probe.h"

namespace probe = gpuforge::probe;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view line = gpuforge::fuzz::AsText(data, size);

  if (auto r = probe::ParseJsonLine("node n, agent run x", line); r.ok()) {
    const std::string again = probe::ToJsonLine(*r);
    FUZZ_CHECK(again.find('\n') == std::string::npos, "ToJsonLine wrote a newline");
    FUZZ_CHECK(!probe::IsExchangeLine(again), "a result line reads as an exchange line");
    auto r2 = probe::ParseJsonLine("again", again);
    FUZZ_CHECK(r2.ok(), "ToJsonLine's own line does not parse: %s",
               r2.ok() ? "" : r2.error().message.c_str());
    FUZZ_CHECK(*r2 == *r, "the result changed through ToJsonLine: %s", again.c_str());
  } else {
    FUZZ_CHECK(r.error().message.starts_with("node n, agent run x: "), "an error without its source: %s",
               r.error().message.c_str());
  }

  if (auto offer = probe::ParseExchangeOffer("n", line); offer.ok()) {
    FUZZ_CHECK(probe::ValidExchangePart(*offer), "an offer outside the part alphabet");
    const std::string again = probe::ExchangeOfferLine(*offer);
    FUZZ_CHECK(probe::IsExchangeLine(again), "an offer line does not read as an exchange line");
    auto offer2 = probe::ParseExchangeOffer("n", again);
    FUZZ_CHECK(offer2.ok() && *offer2 == *offer, "the offer changed through ExchangeOfferLine");
  }

  if (auto parts = probe::ParseExchangeReply("n", line); parts.ok()) {
    FUZZ_CHECK(!parts->empty(), "a reply without parts");
    for (const std::string& p : *parts) FUZZ_CHECK(probe::ValidExchangePart(p), "a part outside the alphabet");
    const std::string again = probe::ExchangeReplyLine(*parts);
    FUZZ_CHECK(probe::IsExchangeLine(again), "a reply line does not read as an exchange line");
    auto parts2 = probe::ParseExchangeReply("n", again);
    FUZZ_CHECK(parts2.ok() && *parts2 == *parts, "the parts changed through ExchangeReplyLine");
  }
  return 0;
}
