#!/usr/bin/env bash
# GPU-free consistency check of a bundle made by scripts/profiler_bundle.sh against the device
# run script it carries (profiler_device_run.sh), so a device session does not find out the hard
# way that the bundle and the script drifted apart:
#   1. every binary, library and plan the run script calls ($bin/NAME, $here/lib/NAME,
#      $here/plans/NAME) is in the bundle;
#   2. every --gtest_filter pattern of the selftest matches at least one test of its binary
#      (`--gtest_list_tests` runs without a GPU): a renamed test would otherwise run 0 tests and
#      read as PASS;
#   3. every CUDA library the bundled binaries need but the bundle leaves to the GPU machine
#      (cuBLASLt, cuDNN, NCCL, cudart) is one the run script searches that machine for; every
#      other library resolves inside the bundle (besides glibc, libgcc_s and the driver).
#
#   scripts/profiler_bundle_check.sh [BUNDLE_DIR]      (default .prof-bundle)
# Prints one line per problem and exits 1 if there is any; "bundle check: ok (...)" otherwise.
set -euo pipefail
bundle=$(cd "${1:-.prof-bundle}" && pwd)
run="$bundle/profiler_device_run.sh"
[[ -f "$run" ]] || { echo "bundle check: $run is missing (make the bundle with scripts/profiler_bundle.sh)" >&2; exit 1; }
problems=0
fail() { echo "bundle check: $*" >&2; problems=$((problems + 1)); }
lib_path="$bundle/lib"
for d in /usr/local/cuda/lib64 /usr/local/cuda/lib; do [[ -d "$d" ]] && lib_path="$lib_path:$d"; done

# 1. What the run script calls.
files=0
while read -r ref; do
  files=$((files + 1))
  [[ -e "$bundle/$ref" ]] || fail "profiler_device_run.sh calls $ref, which the bundle lacks"
done < <(grep -oE '\$(bin|here/lib|here/plans)/[A-Za-z0-9_.+-]+' "$run" |
         sed -e 's#^\$bin/#bin/#' -e 's#^\$here/lib/#lib/#' -e 's#^\$here/plans/#plans/#' | sort -u)

# 2. Selftest gtest filters against the tests each binary has.
patterns=0
while IFS=$'\t' read -r binary filter; do
  exe="$bundle/bin/$binary"
  [[ -x "$exe" ]] || continue  # reported by check 1
  tests=$(LD_LIBRARY_PATH="$lib_path" "$exe" --gtest_list_tests 2>/dev/null |
          awk '/^[^ ]/ {suite = $1} /^  / {print suite $1}') ||
    { fail "$binary --gtest_list_tests failed"; continue; }
  IFS=':' read -ra pats <<<"$filter"
  for p in "${pats[@]}"; do
    patterns=$((patterns + 1))
    hit=0
    while read -r t; do
      # shellcheck disable=SC2053  # the pattern is a glob on purpose, as gtest's filter is
      if [[ "$t" == $p ]]; then hit=1; break; fi
    done <<<"$tests"
    [[ $hit == 1 ]] || fail "selftest filter '$p' matches no test of $binary"
  done
done < <(sed -nE "s/.*\"\\\$bin\/([A-Za-z0-9_]+)\" --gtest_filter='([^']+)'.*/\1\t\2/p" "$run")

# 3. Libraries: left to the GPU machine only when the run script looks for them there.
searched=$(sed -nE 's/^for lib in (.*); do$/\1/p' "$run")
machine='^(linux-vdso|ld-linux|libc\.|libm\.|libdl\.|libpthread\.|librt\.|libutil\.|libgcc_s\.|libcuda\.|libnvidia)'
libs=0
for f in "$bundle"/bin/* "$bundle"/lib/libcalisim_trace.so; do
  while read -r name path; do
    libs=$((libs + 1))
    [[ "$name" =~ $machine ]] && continue
    [[ "$path" == "$bundle/lib/$name" ]] && continue
    if [[ "$name" =~ ^(libcublas|libcudnn|libnccl|libcudart) ]]; then
      [[ " $searched " == *" $name "* ]] ||
        fail "$(basename "$f") needs $name, which the bundle leaves to the GPU machine but profiler_device_run.sh does not search for (it searches: $searched)"
    else
      fail "$(basename "$f") needs $name from ${path:-nowhere}, not from the bundle"
    fi
  done < <(LD_LIBRARY_PATH="$lib_path" ldd "$f" | awk '$2 == "=>" {print $1, $3}')
done

[[ $problems == 0 ]] || { echo "bundle check: $problems problem(s)" >&2; exit 1; }
echo "bundle check: ok ($files files the run script calls, $patterns selftest filter patterns, $libs library references)"
