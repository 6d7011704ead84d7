#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Run a libFuzzer binary for a bounded time on a copy of its seed corpus.

usage: run_fuzz.py FUZZER CORPUS_DIR SECONDS

The seed corpus in the source tree stays untouched: libFuzzer grows a copy in a
temporary directory. CORPUS_DIR.dict, when present, is the fuzzing dictionary. On a crash, the reproducer is kept and its path printed;
rerun it with FUZZER PATH.
"""
import os
import shutil
import subprocess
import sys
import tempfile


def main():
    fuzzer, seeds, seconds = sys.argv[1], sys.argv[2], sys.argv[3]
    work = tempfile.mkdtemp(prefix="llmem-fuzz-")
    corpus = os.path.join(work, "corpus")
    shutil.copytree(seeds, corpus)
    # An input slower than 60 s is a hang; planner-heavy estimate inputs took
    # 15 s under ASan on a loaded 2-core machine, so 10 s would flake.
    cmd = [fuzzer, corpus, f"-max_total_time={seconds}", "-timeout=60", "-rss_limit_mb=2048",
           "-print_final_stats=1", f"-artifact_prefix={work}/"]
    if os.path.exists(seeds.rstrip("/") + ".dict"):
        cmd.append("-dict=" + seeds.rstrip("/") + ".dict")
    print(" ".join(cmd), flush=True)
    rc = subprocess.call(cmd)
    crashes = [f for f in os.listdir(work) if f != "corpus"]
    if rc != 0 or crashes:
        print(f"fuzzer failed (exit {rc}); reproducers kept in {work}: {crashes}", flush=True)
        return 1
    shutil.rmtree(work)
    return 0


if __name__ == "__main__":
    sys.exit(main())
