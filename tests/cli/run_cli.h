// Runs the CLI in-process with stdout and stderr captured in memory, for the cli tests.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "cli/app.h"

namespace gpuforge::cli::test_support {

struct RunResult {
  int code = 0;
  std::string out;
  std::string err;
};

// `input` (when given) is what a person at a terminal types.
inline RunResult RunCli(std::vector<std::string> args, std::optional<std::string> input = std::nullopt) {
  args.insert(args.begin(), "gpuforge");
  std::vector<const char*> argv;
  for (const auto& a : args) argv.push_back(a.c_str());
  char* out_buf = nullptr;
  char* err_buf = nullptr;
  std::size_t out_len = 0, err_len = 0;
  std::FILE* out = open_memstream(&out_buf, &out_len);
  std::FILE* err = open_memstream(&err_buf, &err_len);
  RunResult r;
  Io io;
  io.out = out;
  io.err = err;
  std::string in_text = input.value_or("");
  if (input) {
    io.in = in_text.empty() ? std::fopen("/dev/null", "r") : fmemopen(in_text.data(), in_text.size(), "r");
    io.interactive = true;
  }
  r.code = Run(static_cast<int>(argv.size()), argv.data(), io);
  if (input) std::fclose(io.in);
  std::fclose(out);
  std::fclose(err);
  r.out.assign(out_buf, out_len);
  r.err.assign(err_buf, err_len);
  std::free(out_buf);
  std::free(err_buf);
  return r;
}

}  // namespace gpuforge::cli::test_support
