// Parser for `nvidia-smi topo -m`: a tab-separated matrix (with ANSI underline escapes in the
// header even when piped), a legend, and on systems with NICs a "NIC Legend".

#include <fmt/format.h>

#include <algorithm>
#include <array>

#include "facts/text.h"
#include "gpuforge/facts/parse.h"

namespace gpuforge::facts {

namespace {

using text::LineError;
using text::Quote;

constexpr std::size_t kMaxDevices = 512;
constexpr std::array<std::string_view, 3> kAffinityColumns = {"CPU Affinity", "NUMA Affinity",
                                                              "GPU NUMA ID"};

// Cells of a matrix line, empty ones kept: on a cgroup-limited node the CPU Affinity cell is
// empty, and dropping it would shift NUMA Affinity into its place. Tab-separated as nvidia-smi
// prints it; a copy whose tabs became spaces (a paste) is split at runs of two or more spaces,
// where empty cells cannot be seen.
std::vector<std::string_view> RawCells(std::string_view line, bool tabs) {
  std::vector<std::string_view> out;
  if (tabs) {
    for (std::string_view c : text::Split(line, '\t')) out.push_back(text::Trim(c));
    return out;
  }
  // Expanded tabs put every cell on a tab stop, so a single space before a column that is a
  // multiple of 8 also ends a cell ("112-127,240-255 7"); the space inside "CPU Affinity" does
  // not.
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && line[i] == ' ') ++i;
    if (i == line.size()) break;
    std::size_t j = i;
    while (j < line.size()) {
      if (line[j] != ' ') {
        ++j;
        continue;
      }
      std::size_t k = j;
      while (k < line.size() && line[k] == ' ') ++k;
      if (k - j >= 2 || k == line.size() || k % 8 == 0) break;
      j = k;
    }
    out.push_back(text::Trim(line.substr(i, j - i)));
    i = j;
  }
  return out;
}

// Cells of a header line: nvidia-smi starts it with a tab, so empty cells carry no meaning.
std::vector<std::string_view> HeaderCells(std::string_view line, bool tabs) {
  std::vector<std::string_view> out;
  for (std::string_view c : RawCells(line, tabs)) {
    if (!c.empty()) out.push_back(c);
  }
  return out;
}

bool IsLinkCell(std::string_view c) {
  return c.size() <= 16 && std::all_of(c.begin(), c.end(), [](char ch) {
           return std::isalnum(static_cast<unsigned char>(ch)) || ch == '#';
         });
}

}  // namespace

Result<TopoMatrix> ParseTopo(std::string_view input) {
  if (Status s = text::CheckInput(input, kMaxSectionBytes); !s) return s.error();
  const std::string clean = text::StripAnsi(input);
  std::vector<std::string_view> lines = text::Lines(clean);
  std::size_t i = 0;
  while (i < lines.size() && text::Trim(lines[i]).empty()) ++i;
  if (i == lines.size()) return Error{"empty output, expected the topology matrix"};

  TopoMatrix m;
  const bool tabs = lines[i].find('\t') != std::string_view::npos;
  std::vector<std::string_view> header = HeaderCells(lines[i], tabs);
  std::vector<std::string> affinity;  // affinity column names, in order
  for (std::string_view h : header) {
    bool is_affinity =
        std::find(kAffinityColumns.begin(), kAffinityColumns.end(), h) != kAffinityColumns.end();
    if (is_affinity) {
      affinity.emplace_back(h);
    } else if (!affinity.empty() || !text::IsToken(h, 32)) {
      return LineError(i, fmt::format("unexpected column {} in the matrix header", Quote(h)));
    } else {
      m.devices.emplace_back(h);
    }
  }
  if (m.devices.empty() || !m.devices[0].starts_with("GPU")) {
    return LineError(i, fmt::format("expected a header of GPU columns, got {}", Quote(lines[i])));
  }
  if (m.devices.size() > kMaxDevices) {
    return LineError(i, fmt::format("more than {} devices", kMaxDevices));
  }
  for (std::size_t a = 0; a < m.devices.size(); ++a) {
    if (std::count(m.devices.begin(), m.devices.end(), m.devices[a]) > 1) {
      return LineError(i, fmt::format("column {} appears twice", m.devices[a]));
    }
  }

  for (++i; i < lines.size(); ++i) {
    std::string_view line = lines[i];
    if (text::Trim(line).empty() || text::Trim(line).starts_with("Legend:")) break;
    std::vector<std::string_view> cells = RawCells(line, tabs);
    while (!cells.empty() && cells.front().empty()) cells.erase(cells.begin());
    std::string_view dev = cells[0];
    auto col = std::find(m.devices.begin(), m.devices.end(), dev);
    if (col == m.devices.end()) {
      return LineError(i, fmt::format("row {} is not one of the columns", Quote(dev)));
    }
    if (std::any_of(m.rows.begin(), m.rows.end(),
                    [&](const TopoRow& r) { return r.device == dev; })) {
      return LineError(i, fmt::format("row {} appears twice", dev));
    }
    const std::size_t n = m.devices.size();
    std::vector<std::string_view> rest;  // the affinity cells, one per affinity column
    if (cells.size() > n + 1) rest.assign(cells.begin() + static_cast<std::ptrdiff_t>(n + 1), cells.end());
    if (!tabs) {
      // Spaces hide empty cells; the one that can be empty is CPU Affinity (cgroup), the first
      // column, so the cells that are there belong to the last columns.
      while (!rest.empty() && rest.size() < affinity.size()) rest.insert(rest.begin(), "");
    } else if (rest.size() > affinity.size()) {
      // nvidia-smi follows NUMA Affinity with one empty cell ("0\t\tN/A"), and NIC rows end in
      // empty cells: those are padding, the cells that matter keep their place.
      auto numa = std::find(affinity.begin(), affinity.end(), "NUMA Affinity");
      std::size_t pad = static_cast<std::size_t>(numa - affinity.begin()) + 1;
      if (numa != affinity.end() && pad < rest.size() && rest[pad].empty()) {
        rest.erase(rest.begin() + static_cast<std::ptrdiff_t>(pad));
      }
      while (rest.size() > affinity.size() && rest.back().empty()) rest.pop_back();
    }
    bool links_there = cells.size() > n;
    for (std::size_t c = 1; links_there && c <= n; ++c) links_there = !cells[c].empty();
    if (!links_there || rest.size() > affinity.size()) {
      return LineError(i, fmt::format("{}: expected {} link cells{}, got {} cells", dev, n,
                                      affinity.empty() ? ""
                                                       : fmt::format(" and up to {} affinity cells",
                                                                     affinity.size()),
                                      cells.size() - 1));
    }
    TopoRow row;
    row.device = std::string(dev);
    for (std::size_t c = 0; c < n; ++c) {
      std::string_view cell = cells[c + 1];
      if (!IsLinkCell(cell)) {
        return LineError(i, fmt::format("{} to {}: expected a link type, got {}", dev, m.devices[c],
                                        Quote(cell)));
      }
      bool self = m.devices[c] == dev;
      if (self != (cell == "X")) {
        return LineError(i, fmt::format("{} to {}: {} on the diagonal", dev, m.devices[c],
                                        self ? "expected X" : "X off"));
      }
      row.links.emplace_back(cell);
    }
    for (std::size_t a = 0; a < rest.size(); ++a) {
      if (!rest[a].empty() && !text::IsToken(rest[a], 256)) {
        return LineError(i, fmt::format("{} {}: expected a list or a number, got {}", dev,
                                        affinity[a], Quote(rest[a])));
      }
      std::string value(rest[a]);
      if (affinity[a] == "CPU Affinity") row.cpu_affinity = value;
      if (affinity[a] == "NUMA Affinity") row.numa_affinity = value;
      if (affinity[a] == "GPU NUMA ID") row.gpu_numa_id = value;
    }
    m.rows.push_back(std::move(row));
  }
  for (const std::string& d : m.devices) {
    if (std::none_of(m.rows.begin(), m.rows.end(),
                     [&](const TopoRow& r) { return r.device == d; })) {
      return Error{fmt::format("no row for {} (truncated output?)", d)};
    }
  }
  // Rows in column order, whatever order they came in.
  std::vector<TopoRow> ordered;
  for (const std::string& d : m.devices) {
    for (TopoRow& r : m.rows) {
      if (r.device == d) ordered.push_back(std::move(r));
    }
  }
  m.rows = std::move(ordered);

  for (; i < lines.size(); ++i) {
    if (text::Trim(lines[i]) != "NIC Legend:") continue;
    for (++i; i < lines.size(); ++i) {
      std::string_view l = text::Trim(lines[i]);
      if (l.empty()) {
        if (m.nic_legend.empty()) continue;
        break;
      }
      std::size_t colon = l.find(':');
      std::string_view key = colon == std::string_view::npos ? l : l.substr(0, colon);
      std::string_view name =
          colon == std::string_view::npos ? "" : text::Trim(l.substr(colon + 1));
      if (!key.starts_with("NIC") || !text::IsToken(key, 32) || !text::IsToken(name, 64)) {
        return LineError(i, fmt::format("expected 'NIC<n>: <device>', got {}", Quote(l)));
      }
      m.nic_legend.emplace_back(key, name);
    }
    break;
  }
  return m;
}

}  // namespace gpuforge::facts
