#pragma once

#include <span>
#include <string>
#include <string_view>

#include "gpuforge/base/terminal.h"

namespace gpuforge::report {

// How text reports are decorated. Renderers take it by value and never look at the terminal
// themselves: cli/ decides (TTY, --color, NO_COLOR) and passes the answer down.
struct Style {
  bool color = false;

  std::string Red(std::string_view s) const { return Wrap("31;1", s); }
  std::string Yellow(std::string_view s) const { return Wrap("33;1", s); }
  std::string Green(std::string_view s) const { return Wrap("32;1", s); }
  std::string Cyan(std::string_view s) const { return Wrap("36", s); }
  std::string Bold(std::string_view s) const { return Wrap("1", s); }
  std::string Dim(std::string_view s) const { return Wrap("2", s); }
  // `s` made safe for the terminal (text::ForTerminal): with colour on, only this Style's own
  // sequences survive; with colour off, none do.
  std::string Safe(std::string_view s) const {
    static constexpr std::string_view kOwn[] = {"\x1b[31;1m", "\x1b[33;1m", "\x1b[32;1m", "\x1b[36m",
                                                "\x1b[1m",    "\x1b[2m",    "\x1b[0m"};
    return text::ForTerminal(s, color ? std::span<const std::string_view>(kOwn) : std::span<const std::string_view>());
  }

 private:
  std::string Wrap(std::string_view code, std::string_view s) const {
    if (!color) return std::string(s);
    return "\x1b[" + std::string(code) + "m" + std::string(s) + "\x1b[0m";
  }
};

}  // namespace gpuforge::report
