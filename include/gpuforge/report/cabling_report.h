#pragma once

// How `gpuforge cabling` reads (#31): the bad cables first, one line each with the action;
// the rail rule per rail; the cables that are fine or were not measured folded by hostlist
// ("gpu[001-064]:mlx5_[0-7]"); the notes. JSON is gpuforge.cabling/v1 (docs/cabling.md);
// JUnit is in report/junit.h.

#include <string>

#include <nlohmann/json.hpp>

#include "gpuforge/facts/cabling.h"
#include "gpuforge/report/style.h"

namespace gpuforge::report {

std::string CablingText(const facts::CablingResult& r, const Style& s);
nlohmann::ordered_json CablingJson(const facts::CablingResult& r, std::string_view cluster);
// "cabling: 512 designed, 509 OK, 1 MISWIRED, 2 SWAPPED".
std::string CablingTally(const facts::CablingResult& r);

}  // namespace gpuforge::report
