#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Large safetensors inputs must cost time and memory linear in their size.

Usage: test_limits.py PATH/TO/llmem PATH/TO/bench_hf_inputs.py

The inputs are those of bench/bench_hf_inputs.py, smaller. Before the readers
were made linear, the index of 200,000 shards took about 75 s to fail at its
first missing shard, 30,000 present shards about 40 s, and the header of
400,000 tensors 650 MB (a JSON tree); now they take well under a second and
the header about twice its size. The bounds below leave room for a slow,
shared machine and for AddressSanitizer. Under LLMEM_TEST_WRAPPER (valgrind)
times and memory are the tool's, so the checks are skipped. Prints TAP.
"""
import importlib.util
import os
import sys
import tempfile

SECONDS = 15
MB = 1 << 20


def load_bench(path):
    spec = importlib.util.spec_from_file_location("bench_hf_inputs", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    return bench


def main(argv):
    if len(argv) != 3:
        sys.stderr.write(__doc__)
        return 2
    llmem, bench = argv[1], load_bench(argv[2])
    checks = []
    if os.environ.get("LLMEM_TEST_WRAPPER"):
        print("1..0 # SKIP times and memory under LLMEM_TEST_WRAPPER are the tool's")
        return 0
    with tempfile.TemporaryDirectory(prefix="llmem-limits-") as tmp:
        path = bench.write_index(tmp, 200000, False)
        status, wall, _, err = bench.run(llmem, path)
        checks.append((status == 1 and "cannot open" in err and wall < SECONDS,
                       "index of 200,000 shards, none present: fails at the first in %.2f s "
                       "(limit %d s)" % (wall, SECONDS), err))
    with tempfile.TemporaryDirectory(prefix="llmem-limits-") as tmp:
        path = bench.write_index(tmp, 30000, True)
        status, wall, _, err = bench.run(llmem, path)
        checks.append((status == 0 and wall < SECONDS,
                       "index of 30,000 shards, all present: read in %.2f s (limit %d s)"
                       % (wall, SECONDS), err))
    with tempfile.TemporaryDirectory(prefix="llmem-limits-") as tmp:
        path, header_len = bench.write_header(tmp, 400000)
        status, wall, rss_kb, err = bench.run(llmem, path)
        limit = 4 * header_len + 64 * MB
        checks.append((status == 0 and rss_kb * 1024 < limit and wall < SECONDS,
                       "header of 400,000 tensors (%d MB): %.2f s, peak RSS %d MB (limit %d MB)"
                       % (header_len // MB, wall, rss_kb // 1024, limit // MB), err))
    failed = 0
    for i, (ok, what, detail) in enumerate(checks, 1):
        print("%s %d - %s" % ("ok" if ok else "not ok", i, what))
        if not ok:
            failed += 1
            for line in detail.strip().splitlines():
                print("  # " + line)
    print("1..%d" % len(checks))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
