// Reading launch scripts: the shell constructs Megatron-LM launch scripts are written with.
#include <gtest/gtest.h>

#include "simulator/launch_script.h"

namespace calisim {
namespace {

// The last option named `name`, or nullptr.
const LaunchOption* option(const LaunchScript& s, const std::string& name) {
  const LaunchOption* last = nullptr;
  for (const auto& o : s.options) {
    if (o.name == name) last = &o;
  }
  return last;
}

using Values = std::vector<std::string>;
// The values of the last `name` option; a missing one fails the test (instead of dereferencing null).
Values values(const LaunchScript& s, const std::string& name) {
  const LaunchOption* o = option(s, name);
  if (o == nullptr) {
    ADD_FAILURE() << name << " was not read";
    return {};
  }
  return o->values;
}

TEST(LaunchScript, QuotesCommentsContinuationsAndEqualsForms) {
  const LaunchScript s = read_launch_script(
      "python pretrain_gpt.py \\\n"
      "  --data-path \"a b\" 'c d' # the corpus\n"
      "  --lr=3e-4 --bf16\n");
  // The comment ends the command at its line's end: the next line is a command of bare options.
  const LaunchOption* data = option(s, "--data-path");
  ASSERT_NE(data, nullptr);
  EXPECT_EQ(data->values, (std::vector<std::string>{"a b", "c d"}));
  EXPECT_EQ(data->line, 2);
  EXPECT_EQ(data->program, "pretrain_gpt.py");
  // The comment ended the command: bash runs line 3 as a command named "--lr=3e-4" and fails, so
  // its flags are not the program's, and a note says so.
  EXPECT_EQ(option(s, "--lr"), nullptr);
  EXPECT_EQ(option(s, "--the"), nullptr);
  ASSERT_EQ(s.notes.size(), 1u);
  EXPECT_NE(s.notes[0].find("line 3: a command made of flags alone (--lr ...) is not read"), std::string::npos)
      << s.notes[0];
  const LaunchScript eq = read_launch_script("python train.py --lr=3e-4 --bf16 --x \"\"\n");
  ASSERT_NE(option(eq, "--lr"), nullptr);
  EXPECT_EQ(values(eq, "--lr"), (Values{"3e-4"}));
  ASSERT_NE(option(eq, "--bf16"), nullptr);
  EXPECT_TRUE(option(eq, "--bf16")->values.empty());
  EXPECT_EQ(values(eq, "--x"), (Values{""}));
}

TEST(LaunchScript, ArraysExpandWithTheLinesTheyWereWrittenOn) {
  const LaunchScript s = read_launch_script(
      "MODEL_ARGS=(\n"                    // 1
      "    --num-layers 32   # depth\n"   // 2
      "    --hidden-size 4096\n"          // 3
      ")\n"                               // 4
      "MODEL_ARGS+=(--swiglu)\n"          // 5
      "EXTRA=\"--seq-length 4096 --micro-batch-size 2\"\n"  // 6
      "torchrun --nproc_per_node 8 pretrain_gpt.py \"${MODEL_ARGS[@]}\" $EXTRA\n");  // 7
  ASSERT_NE(option(s, "--num-layers"), nullptr);
  EXPECT_EQ(values(s, "--num-layers"), (Values{"32"}));
  EXPECT_EQ(option(s, "--num-layers")->line, 2);
  EXPECT_EQ(option(s, "--hidden-size")->line, 3);
  EXPECT_EQ(option(s, "--swiglu")->line, 5);
  // An unquoted scalar splits into words; its words take the assignment's line.
  EXPECT_EQ(values(s, "--seq-length"), (Values{"4096"}));
  EXPECT_EQ(values(s, "--micro-batch-size"), (Values{"2"}));
  EXPECT_EQ(option(s, "--micro-batch-size")->line, 6);
  EXPECT_EQ(option(s, "--nproc_per_node")->program, "torchrun");
  EXPECT_EQ(option(s, "--num-layers")->program, "pretrain_gpt.py");
}

TEST(LaunchScript, DefaultsArithmeticAndWhatItCannotExpand) {
  const LaunchScript s = read_launch_script(
      "GPUS=8\n"
      "NODES=${SLURM_NNODES:-4}\n"
      "WORLD=$((GPUS*NODES))\n"
      "HOST=$(hostname)\n"
      "python train.py --world $WORLD --nodes-used ${NODES} --host $HOST --first $1 --missing $UNSET_VAR "
      "--quoted \"${UNSET2:-x y}\"\n");
  EXPECT_EQ(values(s, "--world"), (Values{"32"}));
  EXPECT_EQ(values(s, "--nodes-used"), (Values{"4"}));
  EXPECT_EQ(values(s, "--host"), (Values{"$(hostname)"}));
  EXPECT_EQ(values(s, "--first"), (Values{"$1"}));
  EXPECT_EQ(values(s, "--missing"), (Values{"$UNSET_VAR"}));
  EXPECT_EQ(values(s, "--quoted"), (Values{"x y"}));
  EXPECT_EQ(unresolved_reference("$(hostname)"), "$(hostname)");
  EXPECT_EQ(unresolved_reference("x${A:?no}y"), "${A:?no}");
  EXPECT_EQ(unresolved_reference("$UNSET_VAR/x"), "$UNSET_VAR");
  EXPECT_EQ(unresolved_reference("`nproc`"), "`nproc`");
  EXPECT_EQ(unresolved_reference("8"), "");
}

TEST(LaunchScript, FixedVariablesWinOverTheScriptsAssignments) {
  const LaunchScript s = read_launch_script("NODES=2\ntorchrun --nnodes $NODES --nproc_per_node $GPUS x.py\n",
                                            {{"NODES", "16"}, {"GPUS", "4"}});
  EXPECT_EQ(values(s, "--nnodes"), (Values{"16"}));
  EXPECT_EQ(values(s, "--nproc_per_node"), (Values{"4"}));
}

TEST(LaunchScript, LaunchersSbatchDirectivesAndRedirections) {
  const LaunchScript s = read_launch_script(
      "#!/bin/bash\n"
      "#SBATCH --nodes=4\n"
      "#SBATCH -N 4   # the same\n"
      "# --num-layers 99 in a comment is not an option\n"
      "export CUDA_DEVICE_MAX_CONNECTIONS=1\n"
      "srun --ntasks-per-node 1 python -m torch.distributed.run --nproc-per-node 8 pretrain_gpt.py "
      "--num-layers 4 2>&1 | tee log.txt\n"
      "mpirun -np 32 python pretrain_gpt.py --hidden-size 1024 > out.log\n");
  EXPECT_EQ(option(s, "--nodes")->program, "#SBATCH");
  EXPECT_EQ(values(s, "--nodes"), (Values{"4"}));
  EXPECT_EQ(option(s, "-N")->program, "#SBATCH");
  EXPECT_EQ(option(s, "--ntasks-per-node")->program, "srun");
  EXPECT_EQ(option(s, "--nproc-per-node")->program, "torchrun");
  EXPECT_EQ(values(s, "--nproc-per-node"), (Values{"8"}));
  EXPECT_EQ(values(s, "--num-layers"), (Values{"4"}));  // not "2", ">&1", "tee"
  EXPECT_EQ(option(s, "--num-layers")->line, 6);
  EXPECT_EQ(option(s, "-np")->program, "mpirun");
  EXPECT_EQ(values(s, "-np"), (Values{"32"}));
  EXPECT_EQ(values(s, "--hidden-size"), (Values{"1024"}));
  for (const auto& o : s.options) EXPECT_NE(o.name, "--num-layers 99");
  int num_layers = 0;
  for (const auto& o : s.options) num_layers += o.name == "--num-layers";
  EXPECT_EQ(num_layers, 1);
}

TEST(LaunchScript, AFileOfBareArguments) {
  const LaunchScript s = read_launch_script("--num-layers 2 \\\n--hidden-size 64\n--bf16\n");
  ASSERT_EQ(s.options.size(), 3u);
  EXPECT_EQ(s.options[0].name, "--num-layers");
  EXPECT_EQ(s.options[0].program, "");
  EXPECT_EQ(s.options[1].line, 2);
  EXPECT_EQ(s.options[2].name, "--bf16");
}


TEST(LaunchScript, FollowsTheBranchWhoseConditionHolds) {
  const LaunchScript s = read_launch_script(
      "DTYPE=fp8\n"
      "TOKENIZER=${3:-MOCK}\n"
      "ARGS=()\n"
      "if [[ \"$DTYPE\" == \"fp8\" ]]; then\n"
      "  ARGS+=(--fp8-format hybrid)\n"
      "elif [ \"$DTYPE\" = bf16 ]; then ARGS+=(--bf16-only)\n"
      "fi\n"
      "if [[ \"$TOKENIZER\" == \"MOCK\" ]] || [[ -z \"$TOKENIZER\" ]]; then\n"
      "  ARGS+=(--tokenizer-type NullTokenizer)\n"
      "else ARGS+=(--tokenizer-type HuggingFaceTokenizer)\n"
      "fi\n"
      "if [ ! -f \"$HOME/x\" ]; then ARGS+=(--undecided-a); else ARGS+=(--undecided-b); fi\n"
      "if [ 4 -gt 8 ]; then ARGS+=(--never); fi\n"
      "python pretrain_gpt.py \"${ARGS[@]}\"\n");
  ASSERT_NE(option(s, "--fp8-format"), nullptr);
  EXPECT_EQ(option(s, "--bf16-only"), nullptr);
  ASSERT_NE(option(s, "--tokenizer-type"), nullptr);
  EXPECT_EQ(values(s, "--tokenizer-type"), (Values{"NullTokenizer"}));
  int tokenizers = 0;
  for (const auto& o : s.options) tokenizers += o.name == "--tokenizer-type";
  EXPECT_EQ(tokenizers, 1);
  // A file test cannot be decided here: both branches count.
  EXPECT_NE(option(s, "--undecided-a"), nullptr);
  EXPECT_NE(option(s, "--undecided-b"), nullptr);
  EXPECT_EQ(option(s, "--never"), nullptr);
}


TEST(LaunchScript, ShellEdgesFromTheReview) {
  // Arithmetic the shell would overflow, divide by zero or recurse on stays unevaluated; no crash.
  const LaunchScript a = read_launch_script(
      "A=A\nB=C\nC=B+1\n"
      "python t.py --min $(( (-9223372036854775807-1) / -1 )) --over $((9223372036854775807+1)) --zero $((1/0)) "
      "--self $((A)) --loop $((B)) --pow $((2**10)) --ok $(( (2+3)*4 - 7 % 4 ))\n");
  EXPECT_EQ(option(a, "--min")->values.front().rfind("$((", 0), 0u);
  EXPECT_EQ(option(a, "--over")->values.front().rfind("$((", 0), 0u);
  EXPECT_EQ(option(a, "--zero")->values.front(), "$((1/0))");
  EXPECT_EQ(option(a, "--self")->values.front(), "$((A))");
  EXPECT_EQ(option(a, "--loop")->values.front(), "$((B))");
  EXPECT_EQ(option(a, "--pow")->values.front(), "$((2**10))");
  EXPECT_EQ(option(a, "--ok")->values.front(), "17");
  // Deeply nested defaults end (left as written past the nesting limit) instead of recursing.
  std::string nested = "X", close;
  for (int k = 0; k < 2000; ++k) nested = "${U" + std::to_string(k) + ":-" + nested, close += "}";
  const LaunchScript d = read_launch_script("python t.py --deep " + nested + close + " --after 1\n");
  ASSERT_NE(option(d, "--after"), nullptr);
  EXPECT_FALSE(unresolved_reference(option(d, "--deep")->values.front()).empty());
  // Here-documents are text, not commands; a quote in one does not swallow the script.
  const LaunchScript h = read_launch_script(
      "cat > notes.txt <<EOF\nDon't use --num-layers 80 here\nEOF\n"
      "cat <<-'END'\n\t--tensor-model-parallel-size 8\n\tEND\n"
      "python pretrain_gpt.py --num-layers 4\n");
  EXPECT_EQ(values(h, "--num-layers"), (Values{"4"}));
  EXPECT_EQ(option(h, "--num-layers")->line, 7);
  EXPECT_EQ(option(h, "--tensor-model-parallel-size"), nullptr);
  // && and || inside one [[ ]] (&& binding tighter), a condition continued on the next line,
  // ${V:?} and case conversion of set variables.
  const LaunchScript c = read_launch_script(
      "MODEL=70b\nPRECISION=BF16\nTP=2\n"
      "if [[ \"$MODEL\" == \"8b\" || \"$MODEL\" == \"70b\" && 1 -lt 2 ]]; then A=yes; else A=no; fi\n"
      "if [ 1 = 1 ] &&\n   [ 2 = 3 ]; then B=yes; else B=no; fi\n"
      "if [[ \"${PRECISION,,}\" == \"bf16\" ]]; then P=--bf16; else P=--fp16; fi\n"
      "python t.py --a $A --b $B $P --tp ${TP:?} --up ${MODEL^^}\n");
  EXPECT_EQ(values(c, "--a"), (Values{"yes"}));
  EXPECT_EQ(values(c, "--b"), (Values{"no"}));
  EXPECT_NE(option(c, "--bf16"), nullptr);
  EXPECT_EQ(option(c, "--fp16"), nullptr);
  EXPECT_EQ(values(c, "--tp"), (Values{"2"}));
  EXPECT_EQ(values(c, "--up"), (Values{"70B"}));
  EXPECT_TRUE(c.notes.empty());
  // eval re-reads its words; an undecidable if and a case are read in full, with notes.
  const LaunchScript e = read_launch_script(
      "FREQ=1\nCMD=\"python pretrain_gpt.py --moe-layer-freq '${FREQ}'\"\neval ${CMD}\n"
      "if [ -f /etc/hosts ]; then TP=8; else TP=1; fi\n"
      "case $MODEL in\n  8b) NL=32 ;;\n  70b) NL=80 ;;\nesac\n"
      "python pretrain_gpt.py --tp $TP --nl $NL\n");
  EXPECT_EQ(values(e, "--moe-layer-freq"), (Values{"1"}));
  EXPECT_EQ(option(e, "--moe-layer-freq")->program, "pretrain_gpt.py");
  EXPECT_EQ(values(e, "--tp"), (Values{"1"}));
  ASSERT_EQ(e.notes.size(), 2u);
  EXPECT_NE(e.notes[0].find("line 4: calisim cannot decide this condition"), std::string::npos) << e.notes[0];
  EXPECT_NE(e.notes[1].find("line 5: calisim cannot decide this case"), std::string::npos) << e.notes[1];
  // A case whose word is known runs the first arm whose pattern matches (glob patterns, a|b).
  const LaunchScript k = read_launch_script(
      "MODEL_SIZE=70B\n"
      "case $MODEL_SIZE in\n"
      "  8B|8b) NL=32; HS=4096 ;;\n"
      "  (70*)\n    NL=80\n    HS=8192\n    ;;\n"
      "  *) NL=1 ;;\n"
      "esac\n"
      "case x in y) A=1;; esac; python pretrain_gpt.py --num-layers $NL --hidden-size $HS --a ${A:-none}\n");
  EXPECT_EQ(values(k, "--num-layers"), (Values{"80"}));
  EXPECT_EQ(values(k, "--hidden-size"), (Values{"8192"}));
  EXPECT_EQ(values(k, "--a"), (Values{"none"}));
  EXPECT_TRUE(k.notes.empty());
  // CRLF line endings, continuations included.
  const LaunchScript w = read_launch_script("torchrun --nproc_per_node 8 \\\r\n  pretrain_gpt.py --cp-comm-type p2p\r\n");
  EXPECT_EQ(option(w, "--nproc_per_node")->program, "torchrun");
  EXPECT_EQ(values(w, "--cp-comm-type"), (Values{"p2p"}));
  // "A=1 cmd" sets A for cmd's environment only; "export A=1" and a line of assignments stay.
  const LaunchScript env = read_launch_script(
      "TP=2\nTP=8 python other.py --x $TP\nexport PP=4\nCP=1 EP=2\n"
      "python pretrain_gpt.py --tp $TP --pp $PP --cp $CP --ep $EP\n");
  EXPECT_EQ(values(env, "--x"), (Values{"2"}));
  EXPECT_EQ(values(env, "--tp"), (Values{"2"}));
  EXPECT_EQ(values(env, "--pp"), (Values{"4"}));
  EXPECT_EQ(values(env, "--cp"), (Values{"1"}));
  EXPECT_EQ(values(env, "--ep"), (Values{"2"}));
  // A sourced file is not read, and a note says so.
  const LaunchScript src = read_launch_script("source ./cluster.sh\npython pretrain_gpt.py --num-layers $NL\n");
  ASSERT_EQ(src.notes.size(), 1u);
  EXPECT_EQ(src.notes[0].rfind("line 1: source ./cluster.sh is not followed", 0), 0u) << src.notes[0];
  EXPECT_EQ(values(src, "--num-layers"), (Values{"$NL"}));
  // With a reader, a sourced file sets variables and passes flags, each flag marked with its file.
  const SourceReader files = [](const std::string& path) -> std::optional<std::string> {
    if (path == "./cluster.sh") return "NL=32\r\n# layers and width\r\nMODEL_ARGS=(--hidden-size 4096)\r\n";
    return std::nullopt;
  };
  const LaunchScript followed = read_launch_script(
      "source ./cluster.sh\n. missing.sh\npython pretrain_gpt.py --num-layers $NL \"${MODEL_ARGS[@]}\"\n", {}, files);
  EXPECT_EQ(values(followed, "--num-layers"), (Values{"32"}));
  EXPECT_EQ(option(followed, "--num-layers")->file, "");
  EXPECT_EQ(option(followed, "--num-layers")->line, 3);
  EXPECT_EQ(option(followed, "--hidden-size")->file, "./cluster.sh");
  EXPECT_EQ(option(followed, "--hidden-size")->line, 3);
  ASSERT_EQ(followed.notes.size(), 1u);
  EXPECT_EQ(followed.notes[0].rfind("line 2: . missing.sh is not followed (the file cannot be read)", 0), 0u)
      << followed.notes[0];
  // A substitution left as written stays one word when a variable holding it is split.
  const LaunchScript u = read_launch_script("G=`nproc --all`\nARGS=\"--nproc_per_node $G --nnodes 2\"\ntorchrun $ARGS x.py\n");
  EXPECT_EQ(values(u, "--nproc_per_node"), (Values{"`nproc --all`"}));
  EXPECT_EQ(values(u, "--nnodes"), (Values{"2"}));
}

}  // namespace
}  // namespace calisim
