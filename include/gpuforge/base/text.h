#pragma once

// Hostile text made safe to show in a message: node output, library strings, values from an
// input file. One definition each, with parameters where callers need the text differently
// (what stands for an unprintable byte, how long it may be), so a fix reaches every message.
// Shell quoting is another concept and lives with the code that builds commands
// (remote::ShellQuote, render::ShellQuote).

#include <cstddef>
#include <string>
#include <string_view>

namespace gpuforge::text {

// How Printable shows text: printable ASCII (0x20..0x7e) as it is, every other byte replaced.
struct Shown {
  std::size_t max = 200;        // characters shown at most
  char other = '?';             // stands for a byte outside printable ASCII
  char newline = '\0';          // when not '\0', stands for '\n' instead of `other`
  bool drop_line_ends = false;  // '\r' and '\n' left out (they do not count towards `max`)
  std::string_view cut = "";    // appended when the text did not fit in `max`
};

// Text from a node or a library shown to people: one line of printable ASCII, bounded.
std::string Printable(std::string_view s, const Shown& how);
inline std::string Printable(std::string_view s, std::size_t max) { return Printable(s, Shown{.max = max}); }

// Node output in a message: a newline as '|', another unprintable byte as '?', at most `cap`
// characters and "..." when there was more.
std::string Visible(std::string_view text, std::size_t cap = 300);

// A library's message in a one-line reason: unprintable bytes as spaces, trailing spaces
// dropped, at most `max` characters.
std::string OneLine(std::string_view s, std::size_t max = 400);

// Whether every byte is printable ASCII.
bool IsPrintable(std::string_view s);

// How Escape writes bytes that are not printable ASCII: as C escapes (\t, \xNN), so the text
// shows exactly which bytes were there.
struct Escaping {
  std::size_t max = std::string_view::npos;  // input characters shown, then "..."
  bool keep_non_ascii = false;               // bytes >= 0x80 as they are (UTF-8 in our own messages)
  bool escape_backslash = true;              // '\' as "\\", so an escape in the input is not taken for one
  bool named_line_ends = false;              // '\n' and '\r' as \n and \r rather than \x0a and \x0d
};

std::string Escape(std::string_view s, const Escaping& how);

// A short rendering of hostile text for error messages, in single quotes: control and
// non-ASCII bytes as \xNN, '\' as "\\", cut at `max` characters with "...".
std::string Quote(std::string_view s, std::size_t max = 40);

// "1 node", "4 nodes"; `plural` for a noun that does not just take an "s".
std::string Plural(long long n, std::string_view noun, std::string_view plural = {});

// ASCII letters in lower case, every other byte as it is: names compared regardless of case.
std::string Lower(std::string_view s);

// `s` without the leading and trailing bytes in `chars` (blanks: space and tab, by default).
std::string_view Trim(std::string_view s, std::string_view chars = " \t");

}  // namespace gpuforge::text
