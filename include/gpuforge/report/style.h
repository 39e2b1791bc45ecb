#pragma once

#include <string>
#include <string_view>

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

 private:
  std::string Wrap(std::string_view code, std::string_view s) const {
    if (!color) return std::string(s);
    return "\x1b[" + std::string(code) + "m" + std::string(s) + "\x1b[0m";
  }
};

}  // namespace gpuforge::report
