// Reading a training launch script (bash) for the flags its commands pass.
//
// Contract: read_launch_script(text, vars) returns, in order, every option word of the script's
// commands ("--num-layers", "-N") with the words that follow it up to the next option (its values)
// and its 1-based line. It reads what launch scripts are made of — comments, quotes,
// backslash-newline continuations, NAME=value and NAME=( ... ) assignments (also NAME+=, and after
// export / declare / local), $NAME, ${NAME}, ${NAME:-default}, ${NAME:=default}, ${NAME:+word},
// ${NAME[@]}, ${NAME[i]}, $((arithmetic)) — and #SBATCH directive lines, whose options count as
// sbatch's; `bash -c "..."` and `eval ...` are read as scripts; `source FILE` / `. FILE` is read
// through `source` (its options carry the file's name and lines; without a reader, or when the
// path is not known, a note says it was not followed); echo / printf lines are not commands;
// here-document bodies are skipped;
// CRLF line endings are read as LF. Of if / elif / else / fi it follows the branch whose condition
// is string or integer tests ([[ ]], [ ], test, joined by && and ||) that hold, and of case / esac
// the first arm whose glob patterns match; a condition or case word it cannot decide (a file
// test, a command's exit status, a word it cannot expand) makes it follow every branch and say so
// in `notes` (the last of a repeated flag counts). A command of options alone is read only when no command runs a .py program (a file of
// arguments); otherwise bash would fail to run it, and a note says so. It runs nothing: a $(command) or `command` substitution, a positional parameter ($1)
// or a variable that the script never sets (and `vars` does not give) stays in the word as written,
// and whoever reads that option reports it (unresolved_reference). `vars` fixes variables from
// outside: the script's own assignments to those names are ignored. Loops run once, with their
// variable unexpanded. Pure function.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace calisim {

struct LaunchOption {
  std::string name;                 // as written before any '=': "--num-layers", "--nproc_per_node", "-N"
  std::vector<std::string> values;  // "--x=v": {"v"}; "--x a b": {"a", "b"}; a flag alone: {}
  int line = 0;                     // 1-based line of the option word (in `file`)
  std::string program;              // the command's program ("torchrun", "srun", "python", "#SBATCH", ...)
  std::string file;                 // "" for the script read, else the path of the sourced file it is in
};

struct LaunchScript {
  std::vector<LaunchOption> options;
  // What the reader could not decide (an if's condition, a case, a line bash would fail to run),
  // with the line: shown to the user as warnings.
  std::vector<std::string> notes;
};

// The text of a file that the script sources (`source PATH`, `. PATH`, PATH as written), or
// nullopt when it cannot be read. The caller decides where relative paths are found.
using SourceReader = std::function<std::optional<std::string>(const std::string& path)>;

LaunchScript read_launch_script(const std::string& text, const std::map<std::string, std::string>& vars = {},
                                const SourceReader& source = {});

// The first shell reference left unexpanded in a value ("$NUM_NODES", "${GPUS:?}", "$(nproc)",
// "$1"), or "" when the value holds none.
std::string unresolved_reference(const std::string& value);

}  // namespace calisim
