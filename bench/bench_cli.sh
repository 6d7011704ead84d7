#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Wall time per call of the llmem CLI: runs `LLMEM estimate --json [ARGS...]`
# N times and reports milliseconds per call, next to the cost of spawning a
# trivial process (/bin/true) the same number of times, so the library's
# share can be told from fork/exec and dynamic loading.
#
# usage: bench/bench_cli.sh LLMEM [N] [-- ARGS...]
#   LLMEM  path to the built CLI (build/cli/llmem)
#   N      number of calls (default 200)
#   ARGS   extra arguments after `estimate --json` (default: none, the
#          built-in default model)
set -euo pipefail

if [[ $# -lt 1 || ! -x "$1" ]]; then
    echo "usage: $0 LLMEM [N] [-- ARGS...]  (LLMEM: the built llmem executable)" >&2
    exit 2
fi
llmem=$1
shift
n=200
if [[ $# -gt 0 && $1 != -- ]]; then
    n=$1
    shift
fi
[[ $# -gt 0 && $1 == -- ]] && shift
args=("$@")

# One call first: it must succeed and print JSON.
if ! out=$("$llmem" estimate --json "${args[@]}" 2>&1); then
    echo "bench_cli: '$llmem estimate --json ${args[*]}' failed:" >&2
    echo "$out" >&2
    exit 1
fi
case $out in
    \{*) ;;
    *) echo "bench_cli: output is not a JSON object: ${out:0:200}" >&2; exit 1 ;;
esac

ns() { date +%s%N; }

time_loop() { # time_loop N CMD...: nanoseconds for N runs of CMD
    local count=$1 t0 t1 i
    shift
    t0=$(ns)
    for ((i = 0; i < count; i++)); do
        "$@" >/dev/null
    done
    t1=$(ns)
    echo $((t1 - t0))
}

true_ns=$(time_loop "$n" /bin/true)
cli_ns=$(time_loop "$n" "$llmem" estimate --json "${args[@]}")

awk -v n="$n" -v t="$true_ns" -v c="$cli_ns" -v cmd="$llmem estimate --json ${args[*]}" 'BEGIN {
    printf "%d calls of: %s\n", n, cmd
    printf "  llmem estimate --json: %8.3f ms/call  (%6.0f calls/s)\n", c / n / 1e6, n * 1e9 / c
    printf "  /bin/true (spawn cost): %7.3f ms/call\n", t / n / 1e6
    printf "  difference:             %7.3f ms/call\n", (c - t) / n / 1e6
}'
