#pragma once

// XML text for the report formats that write XML (JUnit): escaping that keeps the document
// well-formed whatever the verdicts hold (node output can hold any byte).

#include <string>
#include <string_view>

namespace gpuforge::report::xml {

// For element text and attribute values: &, <, >, " and ' as entities; bytes that XML 1.0 does
// not allow (control characters other than tab and line ends, malformed UTF-8, surrogates,
// U+FFFE/U+FFFF) as '?'. In attributes (`attribute`), tab and line ends as character
// references too, so that parsers' attribute normalisation keeps them.
std::string Escape(std::string_view s, bool attribute = false);

}  // namespace gpuforge::report::xml
