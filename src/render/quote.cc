#include "render/quote.h"

#include <nlohmann/json.hpp>

namespace gpuforge::render {

std::string YamlQuote(std::string_view s) {
  return nlohmann::json(std::string(s)).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string ShellQuote(std::string_view s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

std::string CommentText(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) out += (c >= 0x20 && c < 0x7f) ? c : '?';
  return out;
}

std::string XmlCommentText(std::string_view s) {
  std::string out = CommentText(s);
  for (std::size_t i = 1; i < out.size(); ++i) {
    if (out[i] == '-' && out[i - 1] == '-') out[i] = '?';
  }
  return out;
}

std::string XmlAttr(std::string_view s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

}  // namespace gpuforge::render
