// The GPU model table (inventories/validation/gpu-models.yaml) on bad input. It is read through
// the inventory's YAML reader, so its errors are diagnostics like the inventory's: every problem
// in one run, each at file:line:col with the line and a caret, then a count. The whole message
// is pinned, as tests/inventory/loader_errors_test.cc pins the loader's.

#include "gpuforge/validate/thresholds.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace gpuforge::validate {
namespace {

// The message of a table that must fail.
std::string Errors(std::string_view yaml) {
  Result<ModelTable> t = ParseModelTable("m.yaml", yaml);
  EXPECT_FALSE(t.ok());
  return t.ok() ? "" : t.error().message;
}

TEST(ValidateModelTable, ReadsFiguresUnderTheCatalogueName) {
  Result<ModelTable> t =
      ParseModelTable("m.yaml", "version: 1\nmodels:\n  H100: {h2d_gbs: {value: 48, source: x}}\n");
  ASSERT_TRUE(t.ok()) << t.error().message;
  ASSERT_EQ(t->models.count("H100"), 1u);
  EXPECT_EQ(t->models.at("H100").at("h2d_gbs").value, 48);
  EXPECT_EQ(t->models.at("H100").at("h2d_gbs").source, "x");
}

TEST(ValidateModelTable, TheShippedTableLoads) {
  Result<ModelTable> t = LoadModelTable(DefaultModelTablePath());
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_FALSE(t->models.empty());
}

TEST(ValidateModelTable, UnknownModel) {
  EXPECT_EQ(Errors("version: 1\nmodels:\n  H999: {h2d_gbs: {value: 48, source: x}}\n"),
            R"d(m.yaml:3:3: error: 'H999' is not a GPU model of the catalogue
 3 |   H999: {h2d_gbs: {value: 48, source: x}}
   |   ^~~~
1 error in m.yaml)d");
}

TEST(ValidateModelTable, UnknownFigureNameListsTheNames) {
  EXPECT_EQ(
      Errors("version: 1\nmodels:\n  H100: {h2d: {value: 48, source: x}}\n"),
      R"d(m.yaml:3:10: error: unknown key 'h2d' in model H100 (allowed: h2d_gbs, d2h_gbs, hbm_copy_gbs, bf16_tflops, fp32_tflops, allreduce_busbw_gbs, ib_write_gbits)
 3 |   H100: {h2d: {value: 48, source: x}}
   |          ^~~
1 error in m.yaml)d");
}

TEST(ValidateModelTable, ValueMustBePositive) {
  EXPECT_EQ(Errors("version: 1\nmodels:\n  H100: {h2d_gbs: {value: -1, source: x}}\n"),
            R"d(m.yaml:3:27: error: H100.h2d_gbs must be positive
 3 |   H100: {h2d_gbs: {value: -1, source: x}}
   |                           ^~
1 error in m.yaml)d");
}

TEST(ValidateModelTable, ValueMustBeANumber) {
  EXPECT_EQ(Errors("version: 1\nmodels:\n  H100: {h2d_gbs: {value: fast, source: x}}\n"),
            R"d(m.yaml:3:27: error: 'value' in H100.h2d_gbs must be a number, not 'fast'
 3 |   H100: {h2d_gbs: {value: fast, source: x}}
   |                           ^~~~
1 error in m.yaml)d");
}

TEST(ValidateModelTable, EveryFigureNeedsASource) {
  EXPECT_EQ(Errors("version: 1\nmodels:\n  H100: {h2d_gbs: {value: 48}}\n"),
            R"d(m.yaml:3:19: error: H100.h2d_gbs is missing required key 'source'
 3 |   H100: {h2d_gbs: {value: 48}}
   |                   ^
1 error in m.yaml)d");
  EXPECT_EQ(Errors("version: 1\nmodels:\n  H100: {h2d_gbs: {value: 48, source: \"\"}}\n"),
            R"d(m.yaml:3:39: error: H100.h2d_gbs has no source
 3 |   H100: {h2d_gbs: {value: 48, source: ""}}
   |                                       ^~
1 error in m.yaml)d");
}

TEST(ValidateModelTable, VersionAndShape) {
  EXPECT_EQ(
      Errors("version: 2\nmodels: {}\n"),
      R"d(m.yaml:1:10: error: 'version' in the GPU model table is '2'; this gpuforge reads version 1
 1 | version: 2
   |          ^
1 error in m.yaml)d");
  EXPECT_EQ(Errors("version: 1\n"),
            R"d(m.yaml:1:1: error: the GPU model table is missing required key 'models'
 1 | version: 1
   | ^
1 error in m.yaml)d");
  EXPECT_EQ(Errors("version: 1\nmodels: [H100]\nextra: 1\n"),
            R"d(m.yaml:2:9: error: 'models' must be a mapping of key: value, not a list
 2 | models: [H100]
   |         ^
m.yaml:3:1: error: unknown key 'extra' in the GPU model table (allowed: version, models)
 3 | extra: 1
   | ^~~~~
2 errors in m.yaml)d");
  EXPECT_EQ(Errors("- version: 1\n"),
            R"d(m.yaml:1:1: error: the GPU model table must be a mapping of key: value, not a list
 1 | - version: 1
   | ^
1 error in m.yaml)d");
}

TEST(ValidateModelTable, SyntaxErrorPointsAtTheOpener) {
  EXPECT_EQ(Errors("version: 1\nmodels:\n  H100: {h2d_gbs: {value: 48, source: x}\n"),
            R"d(m.yaml:3:9: error: this '{' is never closed: a flow mapping needs a matching '}'
 3 |   H100: {h2d_gbs: {value: 48, source: x}
   |         ^
1 error in m.yaml)d");
}

TEST(ValidateModelTable, EveryProblemInOneRun) {
  EXPECT_EQ(Errors(R"y(version: 1
models:
  H999:
    h2d_gbs: {value: 48, source: x}
  H100:
    h2d: {value: 48, source: x}
    d2h_gbs: {value: 0, source: x}
    hbm_copy_gbs: {value: 3000}
  H200:
    bf16_tflops: {value: 700, source: x, note: y}
    bf16_tflops: {value: 710, source: x}
)y"),
            R"d(m.yaml:3:3: error: 'H999' is not a GPU model of the catalogue
 3 |   H999:
   |   ^~~~
m.yaml:6:5: error: unknown key 'h2d' in model H100 (allowed: h2d_gbs, d2h_gbs, hbm_copy_gbs, bf16_tflops, fp32_tflops, allreduce_busbw_gbs, ib_write_gbits)
 6 |     h2d: {value: 48, source: x}
   |     ^~~
m.yaml:7:22: error: H100.d2h_gbs must be positive
 7 |     d2h_gbs: {value: 0, source: x}
   |                      ^
m.yaml:8:19: error: H100.hbm_copy_gbs is missing required key 'source'
 8 |     hbm_copy_gbs: {value: 3000}
   |                   ^
m.yaml:10:42: error: unknown key 'note' in H200.bf16_tflops (allowed: value, source)
 10 |     bf16_tflops: {value: 700, source: x, note: y}
    |                                          ^~~~
m.yaml:11:5: error: duplicate key 'bf16_tflops' in model H200; YAML keeps only one of them
 11 |     bf16_tflops: {value: 710, source: x}
    |     ^~~~~~~~~~~
6 errors in m.yaml)d");
}

TEST(ValidateModelTable, AFileNamesItsPath) {
  const std::filesystem::path p = std::filesystem::temp_directory_path() /
                                  ("gpuforge-models-" + std::to_string(::getpid()) + ".yaml");
  std::ofstream(p) << "version: 1\nmodels:\n  H100: {h2d_gbs: {value: 0, source: x}}\n";
  Result<ModelTable> t = LoadModelTable(p.string());
  std::filesystem::remove(p);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.error().message, p.string() + R"d(:3:27: error: H100.h2d_gbs must be positive
 3 |   H100: {h2d_gbs: {value: 0, source: x}}
   |                           ^
1 error in )d" + p.string());
  EXPECT_EQ(LoadModelTable(p.string()).error().message,
            p.string() + ": cannot read the GPU model pass marks: No such file or directory");
}

}  // namespace
}  // namespace gpuforge::validate
