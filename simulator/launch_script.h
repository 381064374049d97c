// Reading a training launch script (bash) for the flags its commands pass.
//
// Contract: read_launch_script(text, vars, source) returns, in order, every option word of the
// script's commands ("--num-layers", "-N") with the words that follow it up to the next option (its
// values), its line, the program that receives it and the file it was written in; and `notes`,
// what the reader could not decide. It runs nothing. What it reads of the shell:
// - comments, quotes, backslash-newline continuations, CRLF line endings (read as LF);
// - NAME=value, NAME=( ... ), NAME+= (also after export / declare / local; "A=1 cmd" sets A for
//   cmd's environment only, as bash does); $NAME, ${NAME},
//   ${NAME:-d}, ${NAME:=d}, ${NAME:+w}, ${NAME:?}, ${NAME,,}, ${NAME^^}, ${NAME[@]}, ${NAME[i]},
//   $((arithmetic)) (+ - * / % and parentheses; overflow, division by zero and self-reference stay
//   unevaluated);
// - #SBATCH lines (sbatch's options); `bash -c "..."` and `eval ...` (read as scripts);
//   `source FILE` / `. FILE` through `source` (a note when it cannot be read); echo / printf lines
//   (not commands); here-documents (skipped);
// - if / elif / else / fi whose conditions are string or integer tests ([[ ]] with && / || inside,
//   [ ], test, joined by && and ||), an unset variable reading as empty with a note; case / esac,
//   the first arm whose glob patterns match. What it cannot decide (a file test, a command's exit
//   status, a case word it cannot expand) makes it follow every branch, with a note; the last of a
//   repeated flag then counts;
// - a command of options alone: read when no command runs a .py program (a file of arguments),
//   else what bash would fail to run (a comment inside a continued command ends it), with a note.
// A $(command) or `command` substitution, a positional parameter ($1) or a variable that the script
// never sets (and `vars` does not give) stays in the word as written, and whoever reads that
// option reports it (unresolved_reference). `vars` fixes variables from outside: the script's own
// assignments to those names are ignored. Loops run once, with their variable unexpanded. Pure
// function apart from `source`, which the caller supplies.
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
