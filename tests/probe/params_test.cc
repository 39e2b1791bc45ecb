#include "gpuforge/probe/params.h"

#include <gtest/gtest.h>

#include <string>

#include "gpuforge/probe/probe.h"

namespace gpuforge::probe {
namespace {

Context With(const std::string& name, const std::string& value) { return Context{{{name, value}}, nullptr, {}}; }

template <class T>
std::string ErrorOf(const gpuforge::Result<T>& r) {
  return r.ok() ? "(ok)" : r.error().message;
}

const ParamSpec kIters{"iters", ParamKind::kWhole, "20", 1, 10000, "operations"};

TEST(ProbeParams, WholeTakesTheRangeItsEndsIncluded) {
  EXPECT_EQ(*Whole(With("iters", "1"), kIters), 1);
  EXPECT_EQ(*Whole(With("iters", "10000"), kIters), 10000);
  EXPECT_EQ(*Whole(With("iters", "-1"), kIters.Within(-1, 5)), -1);
}

TEST(ProbeParams, WholeNamesTheRangeAndTheValueItRefuses) {
  EXPECT_EQ(ErrorOf(Whole(With("iters", "0"), kIters)), "parameter iters must be a whole number from 1 to 10000, not '0'");
  EXPECT_EQ(ErrorOf(Whole(With("iters", "10001"), kIters)),
            "parameter iters must be a whole number from 1 to 10000, not '10001'");
  EXPECT_EQ(ErrorOf(Whole(With("iters", "2.5"), kIters)), "parameter iters must be a whole number from 1 to 10000, not '2.5'");
  EXPECT_EQ(ErrorOf(Whole(With("iters", "1e3x"), kIters)), "parameter iters: '1e3x' is not a number");
  EXPECT_EQ(ErrorOf(Whole(With("other", "1"), kIters)), "parameter iters is not set");
}

TEST(ProbeParams, WithinNarrowsTheRangeOfOneRead) {
  EXPECT_EQ(ErrorOf(Whole(With("iters", "3"), kIters.Within(0, 2))), "parameter iters must be a whole number from 0 to 2, not '3'");
  EXPECT_EQ(kIters.Within(0, 2).doc, "operations");
  EXPECT_EQ(kIters.Documented("rounds").doc, "rounds");
  EXPECT_EQ(kIters.Documented("rounds").max, 10000);
}

TEST(ProbeParams, BytesWantAUnitAndAWholeCount) {
  const ParamSpec size{"size", ParamKind::kBytes, "8MiB", 1, std::int64_t{1} << 31, ""};
  EXPECT_EQ(*Bytes(With("size", "8MiB"), size), 8u << 20);
  EXPECT_EQ(*Bytes(With("size", "3B"), size), 3u);
  EXPECT_EQ(ErrorOf(Bytes(With("size", "4GiB"), size)),
            "parameter size must be a whole number of bytes from 1 to 2147483648, not '4GiB'");
  EXPECT_EQ(ErrorOf(Bytes(With("size", "0B"), size)), "parameter size must be a whole number of bytes from 1 to 2147483648, not '0B'");
  EXPECT_TRUE(ErrorOf(Bytes(With("size", "8"), size)).starts_with("parameter size: ")) << ErrorOf(Bytes(With("size", "8"), size));
}

TEST(ProbeParams, ByteCountsAlsoTakePlainNumbers) {
  const ParamSpec min{"min_bytes", ParamKind::kByteCount, "8", 4, std::int64_t{64} << 30, ""};
  EXPECT_EQ(*Bytes(With("min_bytes", "8"), min), 8u);
  EXPECT_EQ(*Bytes(With("min_bytes", "1MiB"), min), 1u << 20);
  EXPECT_EQ(ErrorOf(Bytes(With("min_bytes", "2"), min)),
            "parameter min_bytes must be a whole number of bytes from 4 to 68719476736, not '2'");
}

TEST(ProbeParams, WordsAreMultiplesOfFour) {
  const ParamSpec size{"size", ParamKind::kWords, "1GiB", 4096, std::int64_t{64} << 30, ""};
  EXPECT_EQ(*Bytes(With("size", "256MiB"), size), 256u << 20);
  EXPECT_EQ(ErrorOf(Bytes(With("size", "4098B"), size)),
            "parameter size must be a multiple of 4 bytes from 4096 to 68719476736 bytes, not '4098B'");
  EXPECT_EQ(ErrorOf(Bytes(With("size", "1KiB"), size)),
            "parameter size must be a multiple of 4 bytes from 4096 to 68719476736 bytes, not '1KiB'");
}

TEST(ProbeParams, SecondsAreAboveZeroAndAtMostTheMaximum) {
  const ParamSpec timeout{"timeout", ParamKind::kSeconds, "30", 0, 86400, ""};
  EXPECT_DOUBLE_EQ(*Seconds(With("timeout", "0.5"), timeout), 0.5);
  EXPECT_DOUBLE_EQ(*Seconds(With("timeout", "86400"), timeout), 86400);
  EXPECT_EQ(ErrorOf(Seconds(With("timeout", "0"), timeout)),
            "parameter timeout must be a number of seconds above 0 and at most 86400, not '0'");
  EXPECT_EQ(ErrorOf(Seconds(With("timeout", "86401"), timeout)),
            "parameter timeout must be a number of seconds above 0 and at most 86400, not '86401'");
}

TEST(ProbeParams, EveryProbeReadsItsOwnDefaults) {
  // A default outside its own row's range would make the probe refuse to run unconfigured.
  for (const std::unique_ptr<Probe>& p : AllProbes()) {
    for (const Param& row : p->params()) {
      SCOPED_TRACE(p->key() + " " + row.name);
      const Context ctx = With(row.name, row.default_value);
      switch (row.kind) {
        case ParamKind::kWhole:
          if (row.default_value != "all") {
            ParamSpec r = row;
            if (r.name == "node_index") r = r.Within(0, 0);
            EXPECT_EQ(ErrorOf(Whole(ctx, r)), "(ok)");
          }
          break;
        case ParamKind::kBytes:
        case ParamKind::kByteCount:
        case ParamKind::kWords:
          if (row.default_value != "auto") {
            EXPECT_EQ(ErrorOf(Bytes(ctx, row)), "(ok)");
          }
          break;
        case ParamKind::kSeconds: EXPECT_EQ(ErrorOf(Seconds(ctx, row)), "(ok)"); break;
        case ParamKind::kText: break;
      }
    }
  }
}

}  // namespace
}  // namespace gpuforge::probe
