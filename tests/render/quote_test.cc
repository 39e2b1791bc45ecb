// The quoting helpers every family shares (src/render/quote.h): each output is read back by the
// syntax it is meant for (yaml-cpp, /bin/sh, pugixml) and must give the input back.

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <cstdio>
#include <pugixml.hpp>
#include <string>

#include "render/quote.h"

namespace gpuforge::render {
namespace {

const char* const kHostile[] = {
    "plain", "", "~", "null", "yes", "0x1f", "-", "a\nb", "a\"b", "a'b", "it's", "$(reboot)", "a;reboot", "`reboot`",
    "a\\b", "#x", "a: b", "- x", "{x}", "[x]", "&a", "*a", "!x", "%x", "@x", "a\tb", "--", "x\r\n",
};

TEST(RenderQuote, YamlQuoteReadsBackAsTheSameString) {
  for (const char* s : kHostile) {
    std::string doc = "k: " + YamlQuote(s) + "\n";
    YAML::Node n = YAML::Load(doc);
    ASSERT_TRUE(n["k"].IsScalar()) << doc;
    EXPECT_EQ(n["k"].Tag(), "!") << "not double-quoted: " << doc;
    EXPECT_EQ(n["k"].Scalar(), s) << doc;
    EXPECT_EQ(YamlQuote(s).find('\n'), std::string::npos) << "one line: " << doc;
  }
}

TEST(RenderQuote, ShellQuoteIsOneWordThatStandsForItself) {
  for (const char* s : kHostile) {
    std::string cmd = "printf '%s' " + ShellQuote(s);
    FILE* p = ::popen(cmd.c_str(), "r");
    ASSERT_NE(p, nullptr);
    std::string got;
    char buf[256];
    for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) got.append(buf, n);
    EXPECT_EQ(::pclose(p), 0) << cmd;
    EXPECT_EQ(got, s) << cmd;
  }
  EXPECT_EQ(ShellQuote("it's"), "'it'\\''s'");
}

TEST(RenderQuote, CommentTextIsOnePrintableLine) {
  EXPECT_EQ(CommentText("inv.yaml"), "inv.yaml");
  EXPECT_EQ(CommentText("a\nb\r\x1b[0m\t\x7f"), "a?b??[0m??");
  EXPECT_EQ(CommentText("\xc3\xa9t\xc3\xa9.yaml"), "??t??.yaml") << "non-ASCII is masked byte by byte";
}

TEST(RenderQuote, XmlCommentTextNeverHoldsADoubleDash) {
  EXPECT_EQ(XmlCommentText("GPU H200"), "GPU H200");
  EXPECT_EQ(XmlCommentText("a--b"), "a-?b");
  EXPECT_EQ(XmlCommentText("a---b"), "a-?-b");
  EXPECT_EQ(XmlCommentText("x-->y\n"), "x-?>y?");
  for (const char* s : kHostile) {
    std::string doc = "<r><!-- " + XmlCommentText(s) + " --></r>";
    pugi::xml_document d;
    EXPECT_TRUE(d.load_string(doc.c_str(), pugi::parse_default | pugi::parse_comments)) << doc;
    EXPECT_EQ(XmlCommentText(s).find("--"), std::string::npos) << doc;
  }
}

TEST(RenderQuote, XmlAttrReadsBackAsTheSameString) {
  for (const char* s : {"0000:18:00.0", "a\"b", "<x/>", "a&amp;b", "it's"}) {
    std::string doc = std::string("<r a=\"") + XmlAttr(s) + "\"/>";
    pugi::xml_document d;
    ASSERT_TRUE(d.load_string(doc.c_str())) << doc;
    EXPECT_STREQ(d.child("r").attribute("a").value(), s) << doc;
  }
}

}  // namespace
}  // namespace gpuforge::render
