#pragma once

// How every report format writes a measured number (text, JUnit, HTML, baseline comparisons),
// so that a value reads the same in the terminal, the CI summary and the acceptance report.
// The JSON formats carry the exact double; these are for people.

#include <optional>
#include <string>
#include <string_view>

namespace gpuforge::report::format {

// Three significant figures below 10, one decimal below 100, whole numbers above ("0.0123",
// "45.6", "10", "352", "123456"): an exponent only below 1e-4; "nan"/"inf" for those.
std::string Number(double x);

// Number and unit: "352 GB/s", "12" when the unit is empty.
std::string Quantity(double x, std::string_view unit);

// Quantity of a value that may be absent: "" when it is.
std::string Quantity(const std::optional<double>& x, std::string_view unit);

}  // namespace gpuforge::report::format
