// Runs a shell command and captures what it printed and its exit code, for the end-to-end tests
// of the `calisim` executable. Header-only; tests only.
#pragma once

#include <sys/wait.h>

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>

namespace calisim::testing_support {

struct CommandResult {
  int code;         // exit status, -1 when the command did not exit normally
  std::string out;  // what it printed on stdout (redirect stderr in `command` to capture it too)
};

inline CommandResult run_shell(const std::string& command) {
  FILE* p = popen(command.c_str(), "r");
  if (!p) return {-1, "popen failed: " + command};
  std::string out;
  char buf[4096];
  while (std::size_t n = fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  const int status = pclose(p);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

// Writes `text` to a file `name` in the test's temporary directory and returns its path.
inline std::string write_temp_file(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + name;
  std::ofstream(path) << text;
  return path;
}

// A refused command: exit status 2 and a message that says `what`.
inline void expect_refused(const CommandResult& r, const std::string& what) {
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find(what), std::string::npos) << r.out;
}

#ifdef CALISIM_EXE
// The calisim executable of this build (the test target defines CALISIM_EXE) with `args`:
// stderr joined to stdout (messages and tables), or dropped (one JSON document on stdout).
inline CommandResult run_calisim(const std::string& args) {
  return run_shell(std::string(CALISIM_EXE) + " " + args + " 2>&1");
}
inline CommandResult run_calisim_stdout(const std::string& args) {
  return run_shell(std::string(CALISIM_EXE) + " " + args + " 2>/dev/null");
}
#endif

}  // namespace calisim::testing_support
