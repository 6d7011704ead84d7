#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Time and peak memory of `llmem weights` on large safetensors inputs.

usage: bench/bench_hf_inputs.py LLMEM CASE [N]

CASE is one of
  index-missing N   an index of N tensors in N distinct shards, none present
                    (the reader fails at the first shard: what is measured is
                    reading the index)
  index-present N   the same with the N one-tensor shards written
  header N          one safetensors file of N tensors (1,200,000 gives a
                    header of about 82 MB, below the format's 100,000,000-byte
                    limit)

Prints the exit status, wall seconds and peak resident memory of the one
`llmem weights PATH` call (os.wait4), and the last line of its stderr. The
inputs are written to a temporary directory and removed afterwards. Standard
library only.
"""
import json
import os
import struct
import sys
import tempfile
import time

# One U8 element a tensor: the smallest data region a tensor can have but 0.
TENSOR = '"layers.%d.w%d":{"dtype":"U8","shape":[1],"data_offsets":[%d,%d]}'


def write_st(path, header, data_len):
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(header)))
        f.write(header)
        f.truncate(8 + len(header) + data_len)


def write_index(tmp, n, present):
    weight_map = {}
    for i in range(n):
        shard = "model-%06d-of-%06d.safetensors" % (i + 1, n)
        weight_map["t%d.weight" % i] = shard
        if present:
            header = ('{"t%d.weight":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}' % i).encode()
            write_st(os.path.join(tmp, shard), header, 1)
    path = os.path.join(tmp, "model.safetensors.index.json")
    with open(path, "w") as f:
        json.dump({"metadata": {"total_size": n}, "weight_map": weight_map}, f)
    return path


def write_header(tmp, n):
    parts = [TENSOR % (i // 1000, i % 1000, i, i + 1) for i in range(n)]
    header = ("{" + ",".join(parts) + "}").encode()
    path = os.path.join(tmp, "model.safetensors")
    write_st(path, header, n)
    return path, len(header)


def run(llmem, path):
    err_r, err_w = os.pipe()
    t0 = time.monotonic()
    pid = os.fork()
    if pid == 0:
        os.dup2(err_w, 2)
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.execv(llmem, [llmem, "weights", path])
    os.close(err_w)
    err = b""
    while True:
        chunk = os.read(err_r, 65536)
        if not chunk:
            break
        err += chunk
    _, status, usage = os.wait4(pid, 0)
    wall = time.monotonic() - t0
    os.close(err_r)
    return os.waitstatus_to_exitcode(status), wall, usage.ru_maxrss, err.decode(errors="replace")


def main(argv):
    if len(argv) not in (3, 4) or argv[2] not in ("index-missing", "index-present", "header"):
        sys.stderr.write(__doc__)
        return 2
    llmem, case = argv[1], argv[2]
    n = int(argv[3]) if len(argv) == 4 else {"header": 1200000}.get(case, 60000)
    with tempfile.TemporaryDirectory(prefix="llmem-bench-") as tmp:
        extra = ""
        if case == "header":
            path, header_len = write_header(tmp, n)
            extra = ", header %d bytes" % header_len
        else:
            path = write_index(tmp, n, case == "index-present")
        status, wall, rss_kb, err = run(llmem, path)
    last = err.strip().splitlines()[-1] if err.strip() else ""
    print("%s %d%s: exit %d, %.2f s, peak RSS %.1f MB  %s"
          % (case, n, extra, status, wall, rss_kb / 1024.0, last[:160]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
