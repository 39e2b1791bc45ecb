// Parsers for the NVIDIA driver's text outputs: /proc/driver/nvidia/version and the
// nvidia-smi --query-gpu CSV.

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <set>

#include "facts/text.h"
#include "gpuforge/facts/parse.h"

namespace gpuforge::facts {

namespace {

using text::LineError;
using text::Quote;

bool IsDottedNumber(std::string_view s) {
  return s.size() <= 32 && s.find('.') != std::string_view::npos &&
         std::all_of(s.begin(), s.end(), [](char c) { return (c >= '0' && c <= '9') || c == '.'; });
}

}  // namespace

Result<DriverInfo> ParseDriverVersion(std::string_view input) {
  if (Status s = text::CheckInput(input, kMaxSectionBytes); !s) return s.error();
  std::vector<std::string_view> lines = text::Lines(input);
  for (std::size_t i = 0; i < lines.size(); ++i) {
    std::string_view line = text::Trim(lines[i]);
    if (!line.starts_with("NVRM version:")) continue;
    std::size_t km = line.find("Kernel Module");
    if (km == std::string_view::npos) break;
    DriverInfo d;
    d.open_kernel_module = line.find("Open Kernel Module") != std::string_view::npos;
    // "... Kernel Module for x86_64  580.159.04  Release Build ..." or
    // "... x86_64 Kernel Module  535.104.05  Sat Aug 19 ...": the first dotted number.
    std::string_view rest = line.substr(km);
    while (!rest.empty()) {
      auto [word, tail] = text::HeadTail(rest);
      if (IsDottedNumber(word)) {
        d.version = std::string(word);
        return d;
      }
      rest = tail;
    }
    return LineError(i, fmt::format("no driver version after 'Kernel Module' in {}", Quote(line)));
  }
  return Error{"no 'NVRM version: ... Kernel Module <version>' line"};
}

namespace {

// Header names as nvidia-smi prints them, units dropped; older drivers' names mapped to the
// current ones so columns are found by meaning, not by position.
std::string CanonicalColumn(std::string_view h) {
  h = text::Trim(h);
  if (std::size_t br = h.find(" ["); br != std::string_view::npos) h = h.substr(0, br);
  std::string name(h);
  constexpr std::string_view kOld = "clocks_throttle_reasons.";
  if (name.starts_with(kOld)) name = "clocks_event_reasons." + name.substr(kOld.size());
  if (name == "gpu_name") name = "name";
  if (name == "gpu_bus_id") name = "pci.bus_id";
  if (name == "gpu_uuid") name = "uuid";
  return name;
}

// A number followed by nothing or by its unit ("143771 MiB", "700.00 W", "1980 MHz").
std::optional<double> Quantity(std::string_view cell, std::string_view unit) {
  auto [num, rest] = text::HeadTail(cell);
  if (!rest.empty() && rest != unit) return std::nullopt;
  return text::ToDouble(num);
}

struct Row {
  const std::vector<std::string>& header;
  const std::vector<std::string_view>& cells;
  std::size_t line;
  std::vector<GpuFieldError>* errors;  // where error cells of this GPU go

  // The cell of a column, or nullopt when the query did not ask for it.
  std::optional<std::string_view> Get(std::string_view column) const {
    for (std::size_t i = 0; i < header.size(); ++i) {
      if (header[i] == column) return text::Trim(cells[i]);
    }
    return std::nullopt;
  }

  Error Bad(std::string_view column, std::string_view what, std::string_view cell) const {
    return LineError(line, fmt::format("{}: expected {}, got {}", column, what, Quote(cell)));
  }

  // The cell when it holds a value; nullopt when the column is not asked for, absent (N/A,
  // [Not Supported]) or an error, which is recorded for the GPU.
  std::optional<std::string_view> Value(std::string_view column) const {
    std::optional<std::string_view> cell = Get(column);
    if (!cell) return std::nullopt;
    if (text::IsErrorCell(*cell)) {
      std::string q = Quote(*cell, 64);
      errors->push_back({std::string(column), q.substr(1, q.size() - 2)});
      return std::nullopt;
    }
    if (text::IsNotAvailable(*cell)) return std::nullopt;
    return cell;
  }

  template <class T>
  Status Number(std::string_view column, std::string_view unit, double scale, double lo, double hi,
                std::optional<T>& out) const {
    std::optional<std::string_view> cell = Value(column);
    if (!cell) return Status::Ok();
    std::optional<double> v = Quantity(*cell, unit);
    if (!v || *v < lo || *v > hi) {
      return Bad(column, unit.empty() ? "a number" : fmt::format("a number of {}", unit), *cell);
    }
    out = static_cast<T>(*v * scale);
    return Status::Ok();
  }

  Status Flag(std::string_view column, std::optional<bool>& out) const {
    std::optional<std::string_view> cell = Value(column);
    if (!cell) return Status::Ok();
    if (*cell == "Enabled") {
      out = true;
    } else if (*cell == "Disabled") {
      out = false;
    } else {
      return Bad(column, "Enabled or Disabled", *cell);
    }
    return Status::Ok();
  }

  Status Text(std::string_view column, std::string& out) const {
    std::optional<std::string_view> cell = Value(column);
    if (!cell) return Status::Ok();
    if (cell->size() > 96) return Bad(column, "at most 96 characters", *cell);
    out = std::string(*cell);
    return Status::Ok();
  }

  // "0x233510DE": device id in the high 16 bits, vendor in the low 16 (NVML's pciDeviceId).
  Status DeviceId(std::optional<std::uint16_t>& out) const {
    std::optional<std::string_view> cell = Value("pci.device_id");
    if (!cell) return Status::Ok();
    std::optional<std::uint64_t> v = cell->starts_with("0x") ? text::ToHex(*cell) : std::nullopt;
    if (!v || *v > 0xffffffffu) return Bad("pci.device_id", "a hex PCI id like 0x233510DE", *cell);
    out = static_cast<std::uint16_t>(*v >> 16);
    return Status::Ok();
  }
};

constexpr std::size_t kMaxGpus = 1024;

Result<Gpu> ReadGpu(const Row& row) {
  Gpu g;
  std::string_view index = row.Get("index").value_or("");
  std::optional<int> idx = text::ToIntIn(index, 0, kMaxGpus - 1);
  if (!idx) return row.Bad("index", "a GPU index", index);
  g.index = *idx;
  std::string_view bus = row.Get("pci.bus_id").value_or("");
  std::optional<std::string> bdf = NormalizeBusId(bus);
  if (!bdf) return row.Bad("pci.bus_id", "a PCI bus id", bus);
  g.pci_bus_id = *bdf;
  constexpr double kMiB = 1024.0 * 1024.0;
  const std::size_t errors_before = row.errors->size();
  for (Status st : {
           row.Text("name", g.name),
           row.DeviceId(g.pci_device_id),
           row.Text("uuid", g.uuid),
           row.Text("driver_version", g.driver_version),
           row.Text("vbios_version", g.vbios_version),
           row.Number("memory.total", "MiB", kMiB, 0, 1 << 30, g.memory_total_bytes),
           row.Number("power.limit", "W", 1, 0, 100000, g.power_limit_w),
           row.Number("power.draw", "W", 1, 0, 100000, g.power_draw_w),
           row.Number("temperature.gpu", "", 1, -100, 1000, g.temperature_c),
           row.Flag("ecc.mode.current", g.ecc_enabled),
           row.Number("ecc.errors.uncorrected.volatile.total", "", 1, 0, 1e15,
                      g.ecc_uncorrected_volatile),
           row.Number("pcie.link.gen.current", "", 1, 1, 16, g.pcie_gen),
           row.Number("pcie.link.gen.max", "", 1, 1, 16, g.pcie_gen_max),
           row.Number("pcie.link.width.current", "", 1, 0, 64, g.pcie_width),
           row.Number("pcie.link.width.max", "", 1, 0, 64, g.pcie_width_max),
           row.Number("clocks.max.sm", "MHz", 1, 0, 100000, g.max_sm_clock_mhz),
           row.Flag("persistence_mode", g.persistence_mode),
       }) {
    if (!st) return st.error();
  }
  // A name that is an error cell is that GPU's failure (kept in errors); one that is missing
  // or N/A is output this parser does not understand.
  const bool name_error = std::any_of(row.errors->begin() + static_cast<std::ptrdiff_t>(errors_before),
                                      row.errors->end(), [](const GpuFieldError& e) { return e.field == "name"; });
  if (g.name.empty() && !name_error) return row.Bad("name", "a GPU name", row.Get("name").value_or(""));
  if (std::optional<std::string_view> cell = row.Value("clocks_event_reasons.active")) {
    g.clock_event_reasons = text::ToHex(*cell);
    if (!cell->starts_with("0x") || !g.clock_event_reasons) {
      return row.Bad("clocks_event_reasons.active", "a hex bit mask", *cell);
    }
  }
  return g;
}

}  // namespace

Result<std::vector<Gpu>> ParseQueryGpuCsv(std::string_view input) {
  if (Status s = text::CheckInput(input, kMaxSectionBytes); !s) return s.error();
  std::vector<std::string_view> lines = text::Lines(input);
  if (lines.empty() || text::Trim(lines[0]).empty())
    return Error{"empty output, expected a CSV header"};
  std::vector<std::string> header;
  for (std::string_view h : text::Split(lines[0], ',')) header.push_back(CanonicalColumn(h));
  for (std::string_view required : {"index", "name", "pci.bus_id"}) {
    if (std::find(header.begin(), header.end(), required) == header.end()) {
      return LineError(
          0, fmt::format("expected a CSV header with {}, got {}", required, Quote(lines[0])));
    }
  }
  std::vector<Gpu> gpus;
  std::set<int> indices;
  for (std::size_t i = 1; i < lines.size(); ++i) {
    if (text::Trim(lines[i]).empty()) continue;
    std::vector<std::string_view> cells = text::Split(lines[i], ',');
    if (cells.size() != header.size()) {
      return LineError(i, fmt::format("expected {} fields, got {}", header.size(), cells.size()));
    }
    if (gpus.size() == kMaxGpus) return LineError(i, fmt::format("more than {} GPUs", kMaxGpus));
    std::vector<GpuFieldError> errors;
    Result<Gpu> g = ReadGpu(Row{header, cells, i, &errors});
    if (!g) return g.error();
    g->errors = std::move(errors);
    if (!indices.insert(g->index).second) {
      return LineError(i, fmt::format("GPU index {} listed twice", g->index));
    }
    gpus.push_back(std::move(*g));
  }
  std::sort(gpus.begin(), gpus.end(), [](const Gpu& a, const Gpu& b) { return a.index < b.index; });
  return gpus;
}

}  // namespace gpuforge::facts
