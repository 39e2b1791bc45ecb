#include "gpuforge/base/terminal.h"
#include "gpuforge/base/text.h"

#include <gtest/gtest.h>

#include <string>

namespace gpuforge::text {
namespace {

using namespace std::string_literals;

TEST(Printable, ReplacesUnprintableBytesAndCutsWithoutAMark) {
  EXPECT_EQ(Printable("ok\x1b[31m\xff\n", 64), "ok?[31m??");
  EXPECT_EQ(Printable("abcdef", 3), "abc");
  EXPECT_EQ(Printable("", 3), "");
  EXPECT_EQ(Printable("abc", 0), "");
}

TEST(Printable, ParametersChooseTheStandInTheNewlineAndTheCutMark) {
  EXPECT_EQ(Printable("a\nb\tc", Shown{.max = 10, .other = ' '}), "a b c");
  EXPECT_EQ(Printable("a\r\nb\x01", Shown{.max = 10, .drop_line_ends = true}), "ab?");
  // Dropped line ends do not count towards the cap.
  EXPECT_EQ(Printable("\r\n\r\nabcd", Shown{.max = 3, .drop_line_ends = true}), "abc");
  EXPECT_EQ(Printable("abcd", Shown{.max = 2, .cut = "..."}), "ab...");
  EXPECT_EQ(Printable("ab", Shown{.max = 2, .cut = "..."}), "ab");
}

TEST(Visible, NewlinesAsBarsOtherBytesAsQuestionMarksCapWithDots) {
  EXPECT_EQ(Visible("line one\nline\ttwo\n"), "line one|line?two|");
  EXPECT_EQ(Visible("abcdef", 4), "abcd...");
  EXPECT_EQ(Visible("abcd", 4), "abcd");
  EXPECT_EQ(Visible(std::string(400, 'x')), std::string(300, 'x') + "...");
}

TEST(OneLine, SpacesForUnprintableBytesTrailingOnesDropped) {
  EXPECT_EQ(OneLine("invalid usage\n(run with NCCL_DEBUG=WARN)\n"), "invalid usage (run with NCCL_DEBUG=WARN)");
  EXPECT_EQ(OneLine(std::string(500, 'e')), std::string(400, 'e'));
  EXPECT_EQ(OneLine("abc  \r\n", 2), "ab");
  EXPECT_EQ(OneLine("\n\n"), "");
}

TEST(IsPrintable, OnlyPrintableAscii) {
  EXPECT_TRUE(IsPrintable("a b~"));
  EXPECT_TRUE(IsPrintable(""));
  EXPECT_FALSE(IsPrintable("a\tb"));
  EXPECT_FALSE(IsPrintable("caf\xc3\xa9"));
  EXPECT_FALSE(IsPrintable("\x7f"));
}

TEST(Quote, EscapesEveryByteOutsidePrintableAscii) {
  EXPECT_EQ(Quote("plain"), "'plain'");
  EXPECT_EQ(Quote("a\tb\\c\n\x7f\xc3\xa9"), "'a\\tb\\\\c\\x0a\\x7f\\xc3\\xa9'");
  EXPECT_EQ(Quote(std::string(41, 'x')), "'" + std::string(40, 'x') + "...'");
  EXPECT_EQ(Quote(std::string(40, 'x')), "'" + std::string(40, 'x') + "'");
  EXPECT_EQ(Quote("abcdef", 3), "'abc...'");
  EXPECT_EQ(Quote(""), "''");
  EXPECT_EQ(Quote("a\0b"s), "'a\\x00b'");
}

TEST(Escape, KeepsUtf8AndNamesLineEndsForOurOwnMessages) {
  const Escaping message{.keep_non_ascii = true, .escape_backslash = false, .named_line_ends = true};
  EXPECT_EQ(Escape("key 'a\nb'\r\t\x01\x7f caf\xc3\xa9 C:\\x", message), "key 'a\\nb'\\r\\t\\x01\\x7f caf\xc3\xa9 C:\\x");
  EXPECT_EQ(Escape("no cap here", message), "no cap here");
}

TEST(Plural, RegularAndIrregularNouns) {
  EXPECT_EQ(Plural(1, "node"), "1 node");
  EXPECT_EQ(Plural(0, "node"), "0 nodes");
  EXPECT_EQ(Plural(4, "GPU"), "4 GPUs");
  EXPECT_EQ(Plural(2, "switch", "switches"), "2 switches");
  EXPECT_EQ(Plural(1, "switch", "switches"), "1 switch");
}

}  // namespace
// The terminal gate (#12 item 6): what a reachable address printed during the security review
// (an OSC window title and a clear-screen) and the other ways to rewrite a terminal.
TEST(ForTerminal, EscapesAndControlsBecomeQuestionMarksOwnColoursSurviveOnlyWhenAllowed) {
  EXPECT_EQ(ForTerminal("gpu01: \x1b]0;owned\x07\x1b[2Jbanner\r\n"), "gpu01: ?]0;owned??[2Jbanner?\n");
  EXPECT_EQ(ForTerminal("tab\tok\n"), "tab\tok\n");
  EXPECT_EQ(ForTerminal("NVIDIA H200 \xe2\x80\x94 ok \xc3\xa9"), "NVIDIA H200 \xe2\x80\x94 ok \xc3\xa9");  // UTF-8 kept
  EXPECT_EQ(ForTerminal("c1 \xc2\x9b" "2J"), "c1 ??2J");                // U+009B is an 8-bit CSI
  EXPECT_EQ(ForTerminal("raw \x9b" "2J"), "raw ?2J");                   // a bare C1 byte
  EXPECT_EQ(ForTerminal("overlong \xc0\xaf, cut \xe2\x80"), "overlong ??, cut ??");
  EXPECT_EQ(ForTerminal("surrogate \xed\xa0\x80"), "surrogate ???");
  EXPECT_EQ(ForTerminal(std::string("nul \0 del \x7f", 11)), "nul ? del ?");
  constexpr std::string_view kOwn[] = {"\x1b[31;1m", "\x1b[0m"};
  EXPECT_EQ(ForTerminal("\x1b[31;1merror:\x1b[0m \x1b[2J", kOwn), "\x1b[31;1merror:\x1b[0m ?[2J");
}

}  // namespace gpuforge::text
