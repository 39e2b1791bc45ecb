// `nvidia-smi topo -m` from a node. A matrix that parses is square, its rows in column order,
// "X" exactly on the diagonal, and Link() answers every pair from it.

#include "facts_check.h"
#include "gpuforge/facts/parse.h"

namespace facts = gpuforge::facts;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto m = facts::ParseTopo(gpuforge::fuzz::AsText(data, size));
  gpuforge::fuzz::CheckError(m);
  if (!m.ok()) return 0;
  const std::size_t n = m->devices.size();
  FUZZ_CHECK(n > 0 && m->rows.size() == n, "%zu devices, %zu rows", n, m->rows.size());
  for (std::size_t r = 0; r < n; ++r) {
    const facts::TopoRow& row = m->rows[r];
    FUZZ_CHECK(row.device == m->devices[r], "row %zu is %s, column %zu is %s", r, row.device.c_str(), r,
               m->devices[r].c_str());
    FUZZ_CHECK(row.links.size() == n, "row %s has %zu links for %zu columns", row.device.c_str(), row.links.size(), n);
    for (std::size_t c = 0; c < n; ++c) {
      FUZZ_CHECK((row.links[c] == "X") == (r == c), "row %s column %zu is '%s'", row.device.c_str(), c,
                 row.links[c].c_str());
      FUZZ_CHECK(m->Link(m->devices[r], m->devices[c]) == row.links[c], "Link(%s, %s) disagrees with the row",
                 m->devices[r].c_str(), m->devices[c].c_str());
      (void)facts::NvLinkCount(row.links[c]);
    }
  }
  FUZZ_CHECK(m->Link("no such device", m->devices[0]).empty(), "Link() of an unknown device");
  facts::NodeFacts f;
  f.topology = *m;
  gpuforge::fuzz::CheckShowable(f);
  return 0;
}
