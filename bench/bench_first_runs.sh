#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Instructions of each call of bench_estimate's part 2 (no call slow: every
# preset x random setups, each case on a new handle: its first run, a second
# run at another batch and seq, a cache miss, a cache hit), counted by
# Valgrind's callgrind, one dump per call: what a call costs whatever the
# machine's load, where part 2's times move with it. Prints, per kind of
# call, the median, 90th and 99th percentiles and the worst over the cases,
# the worst case, and with LIMIT the share of cases above LIMIT instructions.
#
# usage: bench/bench_first_runs.sh BENCH_ESTIMATE [CASES, default 300] [LIMIT]
set -euo pipefail
bench=${1:?usage: $0 BENCH_ESTIMATE [CASES] [LIMIT]}
cases=${2:-300}
limit=${3:-0}
if ! command -v valgrind >/dev/null; then
    echo "bench_first_runs: valgrind not found" >&2
    exit 0
fi
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
valgrind --tool=callgrind --callgrind-out-file="$dir/cg.%p" "$bench" --instructions "$cases" \
    >"$dir/out" 2>"$dir/log" || { cat "$dir/log" "$dir/out" >&2; exit 1; }
cat "$dir/out"
# Each dump: "desc: Trigger: Client Request: #CASE KIND: WHAT" and "summary: N".
for f in "$dir"/cg.*.*; do
    awk '/^desc: Trigger: Client Request: / { sub(/^desc: Trigger: Client Request: /, ""); name = $0 }
         /^summary: / { print $2 "\t" name }' "$f"
done | awk -F '\t' -v limit="$limit" '
    { n++; ic[n] = $1; name[n] = $2
      if (name[n] ~ /^refused /) { split(name[n], w, " "); bad[w[2]] = 1 } }
    END {
        if (n == 0) { print "bench_first_runs: no call counted" > "/dev/stderr"; exit 1 }
        kinds[1] = "first run"; kinds[2] = "second run"; kinds[3] = "cache miss"; kinds[4] = "cache hit"
        printf "%-12s %6s %9s %9s %9s %9s %8s  %s\n", "call", "cases", "median", "p90", "p99", "worst",
               (limit > 0 ? "over" : ""), "worst case (instructions of one call)"
        for (k = 1; k <= 4; k++) {
            m = 0; worst = -1
            for (i = 1; i <= n; i++) {
                split(name[i], w, " ")
                if (name[i] ~ /^refused / || (w[1] in bad)) continue
                rest = substr(name[i], length(w[1]) + 2)
                if (index(rest, kinds[k] ": ") != 1) continue
                v[++m] = ic[i] + 0
                if (v[m] > worst) { worst = v[m]; what = substr(rest, length(kinds[k]) + 3) }
            }
            if (m == 0) continue
            # insertion sort: a few hundred values
            for (i = 2; i <= m; i++) { x = v[i]; for (j = i - 1; j >= 1 && v[j] > x; j--) v[j + 1] = v[j]; v[j + 1] = x }
            over = 0
            for (i = 1; i <= m; i++) if (limit > 0 && v[i] > limit) over++
            printf "%-12s %6d %9d %9d %9d %9d %8s  %s\n", kinds[k], m, v[int(m / 2) + 1],
                   v[int(m * 9 / 10) + 1], v[int(m * 99 / 100) + 1], worst,
                   (limit > 0 ? sprintf("%.1f%%", 100 * over / m) : ""), what
        }
    }'
