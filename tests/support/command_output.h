// Runs a shell command and captures what it printed and its exit code, for the end-to-end tests
// of the `calisim` executable. Header-only; tests only.
#pragma once

#include <sys/wait.h>

#include <cstdio>
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

}  // namespace calisim::testing_support
