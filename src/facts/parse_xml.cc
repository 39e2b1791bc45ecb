// Parser for `nvidia-smi -q -x`: the per-GPU details the CSV query has no field for.

#include <fmt/format.h>

#include <pugixml.hpp>

#include "facts/text.h"
#include "gpuforge/facts/parse.h"

namespace gpuforge::facts {

namespace {

// Element text, trimmed; "" for a missing element, N/A and [Not Supported].
std::string Text(const pugi::xml_node& n, const char* path) {
  std::string_view v = text::Trim(n.first_element_by_path(path).child_value());
  if (text::IsNotAvailable(v)) return "";
  return std::string(v.substr(0, 96));
}

std::optional<std::uint64_t> Count(const pugi::xml_node& n, const char* path) {
  return text::ToUint(Text(n, path));
}

std::optional<bool> YesNo(const pugi::xml_node& n, const char* path) {
  std::string v = Text(n, path);
  if (v == "Yes") return true;
  if (v == "No") return false;
  return std::nullopt;
}

std::optional<std::uint64_t> Sum(std::optional<std::uint64_t> a, std::optional<std::uint64_t> b) {
  if (!a && !b) return std::nullopt;
  return a.value_or(0) + b.value_or(0);
}

}  // namespace

Result<SmiLog> ParseSmiXml(std::string_view input) {
  if (Status s = text::CheckInput(input, kMaxSectionBytes); !s) return s.error();
  pugi::xml_document doc;
  // parse_default without DOCTYPE handling: nvidia-smi names its DTD, and no entity in it is
  // needed. pugixml expands no external or custom entities, so hostile input cannot grow.
  pugi::xml_parse_result r = doc.load_buffer(input.data(), input.size(), pugi::parse_default);
  if (!r) {
    std::size_t line = 1;
    for (std::ptrdiff_t i = 0; i < r.offset && static_cast<std::size_t>(i) < input.size(); ++i) {
      line += input[static_cast<std::size_t>(i)] == '\n';
    }
    return Error{fmt::format("line {}: XML: {}", line, r.description())};
  }
  pugi::xml_node log = doc.child("nvidia_smi_log");
  if (!log) return Error{"XML: no <nvidia_smi_log> root element"};
  SmiLog out;
  out.driver_version = Text(log, "driver_version");
  out.cuda_version = Text(log, "cuda_version");
  for (pugi::xml_node g : log.children("gpu")) {
    GpuDetail d;
    std::string_view id = g.attribute("id").value();
    std::optional<std::string> bdf = NormalizeBusId(id);
    if (!bdf) return Error{fmt::format("XML: <gpu id={}>: expected a PCI bus id", text::Quote(id))};
    d.pci_bus_id = *bdf;
    d.product_name = Text(g, "product_name");
    d.architecture = Text(g, "product_architecture");
    d.performance_state = Text(g, "performance_state");
    std::string mig = Text(g, "mig_mode/current_mig");
    if (mig == "Enabled") d.mig_enabled = true;
    if (mig == "Disabled") d.mig_enabled = false;
    d.module_id = text::ToIntIn(Text(g, "platformInfo/module_id"), 0, 1 << 16);
    // 255 is /dev/nvidiactl (open-gpu-kernel-modules kernel-open/common/inc/nv-linux.h,
    // NV_CONTROL_DEVICE_MINOR) and 254 /dev/nvidia-modeset: never a GPU's.
    d.minor_number = text::ToIntIn(Text(g, "minor_number"), 0, 253);
    d.inforom_image = Text(g, "inforom_version/img_version");
    d.gsp_firmware = Text(g, "gsp_firmware_version");
    d.remapped_rows_pending = YesNo(g, "remapped_rows/remapped_row_pending");
    d.remapped_rows_failure = YesNo(g, "remapped_rows/remapped_row_failure");
    d.sram_uncorrectable_aggregate =
        Sum(Count(g, "ecc_errors/aggregate/sram_uncorrectable_parity"),
            Count(g, "ecc_errors/aggregate/sram_uncorrectable_secded"));
    if (!d.sram_uncorrectable_aggregate) {  // drivers before 550 had one counter
      d.sram_uncorrectable_aggregate = Count(g, "ecc_errors/aggregate/sram_uncorrectable");
    }
    d.dram_uncorrectable_aggregate = Count(g, "ecc_errors/aggregate/dram_uncorrectable");
    d.sram_correctable_aggregate = Count(g, "ecc_errors/aggregate/sram_correctable");
    d.dram_correctable_aggregate = Count(g, "ecc_errors/aggregate/dram_correctable");
    // Renamed with the CSV field: clocks_throttle_reasons -> clocks_event_reasons.
    for (const char* block : {"clocks_event_reasons", "clocks_throttle_reasons"}) {
      for (pugi::xml_node reason : g.child(block).children()) {
        std::string_view name = reason.name();
        if (text::Trim(reason.child_value()) != "Active") continue;
        for (std::string_view prefix : {"clocks_event_reason_", "clocks_throttle_reason_"}) {
          if (name.starts_with(prefix)) name.remove_prefix(prefix.size());
        }
        d.active_clock_event_reasons.emplace_back(name.substr(0, 64));
      }
    }
    d.fabric_state = Text(g, "fabric/state");
    std::string max_power = Text(g, "gpu_power_readings/max_power_limit");
    if (max_power.ends_with(" W")) {
      d.max_power_limit_w = text::ToDouble(max_power.substr(0, max_power.size() - 2));
    }
    out.gpus.push_back(std::move(d));
  }
  return out;
}

}  // namespace gpuforge::facts
