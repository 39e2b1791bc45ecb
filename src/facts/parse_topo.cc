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

// Cells of a matrix line. nvidia-smi pads with extra tabs ("0\t\tN/A"), and NIC rows have no
// affinity cells, so empty cells carry no meaning and are dropped.
std::vector<std::string_view> Cells(std::string_view line) {
  std::vector<std::string_view> out;
  for (std::string_view c : text::Split(line, '\t')) {
    c = text::Trim(c);
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
  std::vector<std::string_view> header = Cells(lines[i]);
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
    std::vector<std::string_view> cells = Cells(line);
    std::string_view dev = cells[0];
    auto col = std::find(m.devices.begin(), m.devices.end(), dev);
    if (col == m.devices.end()) {
      return LineError(i, fmt::format("row {} is not one of the columns", Quote(dev)));
    }
    if (std::any_of(m.rows.begin(), m.rows.end(),
                    [&](const TopoRow& r) { return r.device == dev; })) {
      return LineError(i, fmt::format("row {} appears twice", dev));
    }
    std::size_t n = m.devices.size();
    if (cells.size() - 1 < n || cells.size() - 1 > n + affinity.size()) {
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
    for (std::size_t a = 0; a + n + 1 < cells.size(); ++a) {
      std::string value(cells[a + n + 1].substr(0, 256));
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
