#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The bad-input matrix: every row of a table of hostile inputs, run as a user
runs `llmem`.

Usage: test_bad_inputs.py PATH/TO/llmem PATH/TO/bad_inputs.json

The table (bad_inputs.json, described in its "about" member) has
  files     the inputs to create in a temporary directory: text, bytes,
            safetensors files, FIFOs, symlinks (loops), directories,
            unreadable files, copies of tests/hf/configs;
  cases     llmem invocations ({dir} is that directory) with the exit status
            and a substring of the message they must give;
  flag_groups and bad_values
            the flags of each command (estimate, plan) by the kind of their
            value, and the bad values of each kind: each flag is run with each
            bad value.
Each row is one TAP check, so the next flag or file input is covered by adding
a row. Every flag `llmem help` lists must be in "flag_groups" (or in
"not_generated", covered by cases).

A run that does not end within TIMEOUT seconds fails (a FIFO opened for
reading blocks forever). Rows marked "needs": "unreadable" are skipped where
chmod 000 does not deny reading (run as root, or with CAP_DAC_OVERRIDE): that
is detected by trying, not assumed from the user id. LLMEM_TEST_WRAPPER runs
every llmem under a tool, as in test_cli.py. Standard library only.
"""
import json
import os
import re
import shlex
import shutil
import stat
import struct
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

TIMEOUT = 60
HF_CONFIGS = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "hf", "configs")


class Tap:
    def __init__(self):
        self.count = 0
        self.failed = 0

    def check(self, ok, what, detail=""):
        self.count += 1
        self.failed += not ok
        print("%s %d - %s" % ("ok" if ok else "not ok", self.count, what))
        if not ok and detail:
            for line in str(detail).splitlines():
                print("  # " + line)
        return ok

    def skip(self, what, why):
        self.count += 1
        print("ok %d - %s # SKIP %s" % (self.count, what, why))

    def finish(self):
        print("1..%d" % self.count)
        return 1 if self.failed else 0


def fs(name):
    """A path from the table: lone surrogates (\\udcXX) are the bytes of
    names that are not UTF-8, as os.fsencode has them."""
    return os.fsencode(name)


def write_safetensors(path, spec):
    header = spec["header"].encode("utf-8", "surrogateescape")
    length = spec.get("header_length", len(header))
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", length))
        f.write(header)
        f.write(b"\0" * spec.get("data", 0))


def make_file(root, name, spec):
    """Create one entry of "files" under root (bytes)."""
    path = os.path.join(root, fs(name))
    os.makedirs(os.path.dirname(path), exist_ok=True)
    kind = spec["kind"]
    if kind in ("text", "unreadable"):
        text = spec.get("text", "") * spec.get("repeat", 1)
        with open(path, "wb") as f:
            f.write(text.encode("utf-8", "surrogateescape"))
        if kind == "unreadable":
            os.chmod(path, 0)
    elif kind == "bytes":
        with open(path, "wb") as f:
            f.write(bytes.fromhex(spec["hex"]))
    elif kind == "safetensors":
        write_safetensors(path, spec)
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "symlink":
        os.symlink(fs(spec["target"]), path)
    elif kind == "dir":
        os.makedirs(path, exist_ok=True)
    elif kind == "unreadable-dir":
        os.makedirs(path, exist_ok=True)
        os.chmod(path, 0)
    elif kind == "config":
        shutil.copyfile(os.path.join(HF_CONFIGS, spec["from"]), path)
    else:
        raise ValueError("files: %s: unknown kind %r" % (name, kind))


def chmod_denies_reading(root):
    probe = os.path.join(root, b"probe")
    with open(probe, "w") as f:
        f.write("x")
    os.chmod(probe, 0)
    try:
        with open(probe, "rb"):
            return False
    except PermissionError:
        return True
    finally:
        os.chmod(probe, stat.S_IRUSR | stat.S_IWUSR)
        os.remove(probe)


def run_once(command, args):
    try:
        proc = subprocess.run(command + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        return None, b"", b"(no exit within %d s)" % TIMEOUT
    return proc.returncode, proc.stdout, proc.stderr


class Runner:
    """Runs llmem; prefetch() runs many argument lists on every CPU at once (a
    sanitizer build starts slowly, and the matrix runs it hundreds of times),
    and later calls with the same arguments take the stored result."""

    def __init__(self, command):
        self.command = command
        self.done = {}

    def prefetch(self, arg_lists):
        with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
            results = pool.map(lambda args: run_once(self.command, args), arg_lists)
            for args, result in zip(arg_lists, results):
                self.done[tuple(args)] = result

    def __call__(self, args):
        key = tuple(args)
        return self.done[key] if key in self.done else run_once(self.command, args)


def expand(arg, root):
    return fs(arg).replace(b"{dir}", root)


def case_args(case, root):
    return [expand(a, root) for a in case["args"]]


def check_case(t, run, root, case, can_deny):
    label = case["name"]
    if case.get("needs") == "unreadable" and not can_deny:
        t.skip(label, "chmod 000 does not deny reading here (root or CAP_DAC_OVERRIDE)")
        return
    args = case_args(case, root)
    rc, out, err = run(args)
    text = err.decode("utf-8", "replace")
    detail = "llmem %s\nexit %s, stderr: %s" % (
        " ".join(a.decode("utf-8", "replace") for a in args), rc, text.strip())
    ok = rc == case["exit"]
    if ok and "stderr" in case:
        ok = case["stderr"] in text
    if ok and "stderr_lacks" in case:
        ok = case["stderr_lacks"] not in text
    # Exit 3 prints the whole answer and says on stderr which check failed.
    if ok and case["exit"] != 0:
        ok = (out != b"" if case["exit"] == 3 else out == b"") and text.startswith("llmem: ") and \
            text.count("\n") == 1
    if ok and case.get("stdout") == "json":
        try:
            json.loads(out.decode("utf-8", "strict"))
        except ValueError as e:
            ok, detail = False, "%s\nstdout is not UTF-8 JSON: %s" % (detail, e)
    t.check(ok, label, detail)


def help_flags(run):
    _, out, _ = run(["help"])
    return set(re.findall(r"^  --([a-z0-9-]+)", out.decode(), re.M))


def flag_runs(table):
    """(command and flag, value or None, the bad value's row) of every flag check."""
    for group in table["flag_groups"]:
        base = group["command"]
        for kind, names in sorted(group["flags"].items()):
            for flag in names:
                for bad in table["bad_values"][kind]:
                    yield base, flag, bad
                yield base, flag, None


def flag_args(base, flag, bad):
    return base + ["--" + flag] + ([bad["value"]] if bad is not None else [])


def check_flags(t, run, table):
    groups = table["flag_groups"]
    listed = {f for g in groups for names in g["flags"].values() for f in names}
    missing = sorted(help_flags(run) - listed - set(table["not_generated"]))
    t.check(not missing, "every flag in `llmem help` has a row in \"flag_groups\"",
            "add these to bad_inputs.json: %s" % ", ".join(missing))
    for base, flag, bad in flag_runs(table):
        rc, out, err = run(flag_args(base, flag, bad))
        text = err.decode("utf-8", "replace")
        if bad is None:
            t.check(rc == 2 and "--%s: missing value" % flag in text,
                    "%s --%s without its value: exit 2" % (base[0], flag),
                    "exit %s, stderr: %s" % (rc, text))
            continue
        quoted = "--%s '%s'" % (flag, bad["value"])
        t.check(rc == 2 and out == b"" and quoted in text and bad["stderr"] in text,
                "%s --%s %r: exit 2, quotes the value, says %r"
                % (base[0], flag, bad["value"], bad["stderr"]),
                "exit %s, stderr: %s" % (rc, text.strip()))


def main(argv):
    if len(argv) != 3:
        sys.stderr.write(__doc__)
        return 2
    run = Runner(shlex.split(os.environ.get("LLMEM_TEST_WRAPPER", "")) + [argv[1]])
    with open(argv[2], encoding="utf-8") as f:
        table = json.load(f)
    t = Tap()
    root = tempfile.mkdtemp(prefix="llmem-bad-").encode()
    try:
        can_deny = chmod_denies_reading(root)
        for name, spec in table["files"].items():
            make_file(root, name, spec)
        run.prefetch([case_args(c, root) for c in table["cases"]
                      if can_deny or c.get("needs") != "unreadable"] +
                     [flag_args(*f) for f in flag_runs(table)])
        for case in table["cases"]:
            check_case(t, run, root, case, can_deny)
        check_flags(t, run, table)
    finally:
        for dirpath, dirnames, _ in os.walk(root):
            for d in dirnames:
                p = os.path.join(dirpath, d)
                if not os.path.islink(p):
                    os.chmod(p, stat.S_IRWXU)
        shutil.rmtree(root)
    return t.finish()


if __name__ == "__main__":
    sys.exit(main(sys.argv))
