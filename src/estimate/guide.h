#pragma once

// The figures the estimates take from the two guides in shared/seeds/, each with the section
// it comes from, so a default is never a bare number in a formula.

#include <optional>
#include <string_view>

namespace gpuforge::estimate::guide {

// 000_bf90931f775ecd9c.txt ("How to Build a GPU Cluster for AI Training in 2026").
inline constexpr std::string_view k000 = "guide 000";
// 004_910c09f65559b553.txt ("How to Build a GPU Cluster for Deep Learning").
inline constexpr std::string_view k004 = "guide 004";

// 8,760 h / 12: a month of running full-time.
inline constexpr double kHoursPerMonth = 730;
inline constexpr double kHoursPerYear = 8760;

// 000 "Cooling and Power": "Air cooling works up to about 20kW per rack."
inline constexpr double kAirCoolingRackLimitW = 20e3;

// 000 "Storage": "Sequential read bandwidth: at least 1GB/s per GPU".
inline constexpr double kReadBytesPerSPerGpu = 1e9;

// 000 "Storage": "Capacity: 5-10x your dataset size".
inline constexpr double kCapacityMinMultiple = 5;
inline constexpr double kCapacityMaxMultiple = 10;

// 004 FAQ: "If your checkpointing takes more than 2 minutes, optimize your storage."
inline constexpr double kCheckpointMaxS = 120;

// 004 "When to Build vs When to Rent": "$3-4 per A100-hour"; the middle of the range.
inline constexpr double kRentPerGpuHour = 3.5;

// 000 "GPU Selection" table, USD, Q2 2026: H200 ~$35K, B100 ~$45K, MI400X ~$28K. Nothing
// for any other model. `model` is matched through the GPU catalogue's spellings.
std::optional<double> GpuUnitPrice(std::string_view model);

}  // namespace gpuforge::estimate::guide
