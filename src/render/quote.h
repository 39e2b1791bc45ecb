#pragma once

// Quoting for the syntaxes render writes into: one helper per target, shared by every family
// so a fix reaches all of them. Values were checked against safe alphabets at inventory load;
// these keep them data in the target syntax anyway (a YAML reader would take "~", "yes" or
// "0x1f" for null, a bool or a number; a shell would expand "~").

#include <string>
#include <string_view>

namespace gpuforge::render {

// A YAML double-quoted scalar (written as a JSON string literal, which YAML reads the same);
// invalid UTF-8 is replaced, control characters are escaped.
std::string YamlQuote(std::string_view s);

// A POSIX shell word that stands for exactly `s`: single quotes, a quote inside becomes '\''.
std::string ShellQuote(std::string_view s);

// Text safe inside a one-line comment of any syntax: every byte outside printable ASCII
// (newlines, escapes, other control characters, non-ASCII) becomes '?'.
std::string CommentText(std::string_view s);

// CommentText, and safe between "<!-- " and " -->": XML forbids "--" inside a comment, so
// every '-' that follows a '-' becomes '?'. (A final '-' is harmless before " -->".)
std::string XmlCommentText(std::string_view s);

// An XML attribute value for use between double quotes: &, <, > and " as entities.
std::string XmlAttr(std::string_view s);

}  // namespace gpuforge::render
