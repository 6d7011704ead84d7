#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Instructions per estimate, counted by Valgrind's callgrind: repeatable to a
# few instructions on a shared, noisy machine, where times are not. For each
# configuration of bench_estimate (its labels), runs `bench_estimate --calls
# LABEL N` at two N and prints the difference per call, so setup and exit
# cancel out.
#
# With --presets, also a new handle's first and second run for every preset
# (default setup: bf16-mixed, AdamW, batch 4, seq 2048 or the model's limit).
#
# usage: bench/bench_instructions.sh BENCH_ESTIMATE [N, default 400] [--presets]
set -euo pipefail
bench=${1:?usage: $0 BENCH_ESTIMATE [N] [--presets]}
n=${2:-400}
if ! command -v valgrind >/dev/null; then
    echo "bench_instructions: valgrind not found" >&2
    exit 0
fi
# callgrind's profile goes to a file of our own: given /dev/null, callgrind
# run as root replaces the device with a regular file
out=$(mktemp)
trap 'rm -f "$out"' EXIT
count() { # count LABEL CALLS [PRESET]: instructions of the whole run
    valgrind --tool=callgrind --callgrind-out-file="$out" "$bench" --calls "$@" 2>&1 |
        awk '/Collected :/ { print $4 }'
}
labels=(
    "same setup: sdpa (default)" "same setup: eager" "same setup: flash+ckpt"
    "same setup: lora q,v" "sweep batch x seq" "sweep batch x seq, sdpa" "sweep batch 1 x seq" "sweep seq 1..3 x batch" "sweep, chunked loss"
    "sweep, flash+ckpt" "planner: new setup+layout" "uncached: never-seen setup"
    "new handle: first run" "new handle: first two runs" "fresh ctx+handle+estimate"
    "fresh ctx+handle, no run"
)
printf '%-28s %14s\n' "configuration" "instructions"
for label in "${labels[@]}"; do
    a=$(count "$label" "$n")
    b=$(count "$label" $((3 * n)))
    printf '%-28s %14d\n' "$label" $(((b - a) / (2 * n)))
done
[[ ${3:-} == --presets ]] || exit 0
printf '\n%-36s %12s %12s\n' "preset (new handle)" "first run" "second run"
while read -r preset; do
    one=$(( ($(count "new handle: first run" $((3 * n / 4)) "$preset") -
             $(count "new handle: first run" $((n / 4)) "$preset")) / (n / 2) ))
    two=$(( ($(count "new handle: first two runs" $((3 * n / 4)) "$preset") -
             $(count "new handle: first two runs" $((n / 4)) "$preset")) / (n / 2) ))
    printf '%-36s %12d %12d\n' "$preset" "$one" $((two - one))
done < <("$bench" --presets)
