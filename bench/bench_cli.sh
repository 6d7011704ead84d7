#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Wall time per call of the llmem CLI: runs `LLMEM estimate --json [ARGS...]`
# and a baseline process (/bin/true) alternately, N times each, timing every
# run on its own (bash's EPOCHREALTIME, no process to read the clock). Each
# pair shares the machine's load of that moment, so the difference of a pair
# is the command's own share (loading libllmem, parsing, one estimate,
# printing JSON); the report gives both medians and the median and mean of
# the per-pair differences.
#
# usage: bench/bench_cli.sh LLMEM [N] [-- ARGS...]
#   LLMEM  path to the built CLI (build/cli/llmem)
#   N      pairs of runs (default 200)
#   ARGS   extra arguments after `estimate --json` (default: none, the
#          built-in default model)
set -euo pipefail

if [[ $# -lt 1 || ! -x "$1" ]]; then
    echo "usage: $0 LLMEM [N] [-- ARGS...]  (LLMEM: the built llmem executable)" >&2
    exit 2
fi
if [[ -z ${EPOCHREALTIME:-} ]]; then
    echo "bench_cli: needs bash 5 (EPOCHREALTIME)" >&2
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

# One call first: it must succeed and print JSON (and it warms the caches).
if ! out=$("$llmem" estimate --json "${args[@]}" 2>&1); then
    echo "bench_cli: '$llmem estimate --json ${args[*]}' failed:" >&2
    echo "$out" >&2
    exit 1
fi
case $out in
    \{*) ;;
    *) echo "bench_cli: output is not a JSON object: ${out:0:200}" >&2; exit 1 ;;
esac

cli=() base=()
for ((i = 0; i < n; i++)); do
    t0=$EPOCHREALTIME
    "$llmem" estimate --json "${args[@]}" >/dev/null
    t1=$EPOCHREALTIME
    /bin/true
    t2=$EPOCHREALTIME
    # EPOCHREALTIME is seconds and microseconds (a locale's decimal mark between)
    t0=${t0//[.,]/} t1=${t1//[.,]/} t2=${t2//[.,]/}
    cli+=($((10#$t1 - 10#$t0)))
    base+=($((10#$t2 - 10#$t1)))
done

printf '%s\n' "${cli[@]}" >"${TMPDIR:-/tmp}/bench_cli.$$.cli"
printf '%s\n' "${base[@]}" >"${TMPDIR:-/tmp}/bench_cli.$$.base"
paste "${TMPDIR:-/tmp}/bench_cli.$$.cli" "${TMPDIR:-/tmp}/bench_cli.$$.base" |
    awk -v n="$n" -v cmd="$llmem estimate --json ${args[*]}" '
    function median(a, m,   i, j, t) {
        for (i = 2; i <= m; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
        return m % 2 ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2
    }
    { c[NR] = $1; b[NR] = $2; d[NR] = $1 - $2; sc += $1; sb += $2; sd += $1 - $2 }
    END {
        printf "%d pairs of runs, interleaved: %s and /bin/true\n", n, cmd
        printf "  llmem estimate --json: median %7.3f ms  mean %7.3f ms\n", median(c, NR) / 1e3, sc / NR / 1e3
        printf "  /bin/true (baseline):  median %7.3f ms  mean %7.3f ms\n", median(b, NR) / 1e3, sb / NR / 1e3
        printf "  difference per pair:   median %7.3f ms  mean %7.3f ms\n", median(d, NR) / 1e3, sd / NR / 1e3
    }'
rm -f "${TMPDIR:-/tmp}/bench_cli.$$.cli" "${TMPDIR:-/tmp}/bench_cli.$$.base"
