#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Build the example against the *installed* library, as a consumer would.

Installs the current build into a temporary DESTDIR (meson install
--no-rebuild --destdir), points pkg-config at the libllmem.pc found there
with its prefix redefined to the DESTDIR copy, compiles the example with
`cc $(pkg-config --cflags --libs libllmem)`, checks that the program loads
the installed libllmem.so.0 and that its output matches the in-tree build.

usage: check_installed.py MESON PKG_CONFIG BUILD_ROOT EXAMPLE_C IN_TREE_EXE VERSION CC... [-- CFLAGS...]
Exit status: 0 pass, 1 fail, 77 skip.
"""
import os
import re
import shlex
import subprocess
import sys
import tempfile

SKIP = 77


def run(cmd, env=None, what=None):
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True, env=env)
    if proc.returncode != 0:
        print(proc.stdout)
        raise SystemExit("FAIL: %s (exit %d): %s" % (what or "command", proc.returncode,
                                                     " ".join(shlex.quote(c) for c in cmd)))
    return proc.stdout


def find_pc(root):
    for dirpath, _, files in os.walk(root):
        if "libllmem.pc" in files:
            return os.path.join(dirpath, "libllmem.pc")
    raise SystemExit("FAIL: meson install put no libllmem.pc under %s" % root)


def main(argv):
    if len(argv) < 8:
        sys.stderr.write(__doc__)
        return 2
    meson, pkg_config, build_root, example_c, in_tree_exe, version = argv[1:7]
    rest = argv[7:]
    cc, extra = (rest[:rest.index("--")], rest[rest.index("--") + 1:]) if "--" in rest \
        else (rest, [])
    if not pkg_config:
        print("SKIP: pkg-config not found")
        return SKIP

    with tempfile.TemporaryDirectory(prefix="llmem-install-") as destdir:
        run([meson, "install", "-C", build_root, "--no-rebuild", "--quiet", "--destdir",
             destdir], what="meson install")
        pc = find_pc(destdir)
        env = dict(os.environ)
        env["PKG_CONFIG_PATH"] = os.pathsep.join(
            [os.path.dirname(pc)] + [p for p in [os.environ.get("PKG_CONFIG_PATH")] if p])

        # The .pc records the configured prefix; the copy lives under destdir.
        prefix = run([pkg_config, "--variable=prefix", "libllmem"], env=env).strip()
        staged = os.path.normpath(destdir + "/" + prefix)
        pc_args = [pkg_config, "--define-variable=prefix=" + staged]

        problems = []
        modversion = run([pkg_config, "--modversion", "libllmem"], env=env).strip()
        if modversion != version:
            problems.append("libllmem.pc says version %s, the project %s" % (modversion, version))
        flags = run(pc_args + ["--cflags", "--libs", "libllmem"], env=env, what="pkg-config")
        libdir = run(pc_args + ["--variable=libdir", "libllmem"], env=env).strip()
        includedir = run(pc_args + ["--variable=includedir", "libllmem"], env=env).strip()
        print("libllmem.pc: %s\npkg-config --cflags --libs libllmem: %s" % (pc, flags.strip()))
        for path, what in ((libdir, "libdir"), (includedir, "includedir")):
            if not path.startswith(staged):
                problems.append("%s %s is not under the staged prefix %s" % (what, path, staged))
        if not os.path.isfile(os.path.join(includedir, "llmem.h")):
            problems.append("llmem.h is not installed in %s" % includedir)
        for name in ("libllmem.so", "libllmem.so.0"):
            if not os.path.exists(os.path.join(libdir, name)):
                problems.append("%s is not installed in %s" % (name, libdir))
        if "-lllmem" not in flags.split():
            problems.append("pkg-config --libs lacks -lllmem")
        if problems:
            print("\n".join("FAIL: " + p for p in problems))
            return 1

        exe = os.path.join(destdir, "estimate_llama")
        # No -I or -L of the source or build tree: only what pkg-config says.
        compile_cmd = cc + extra + [example_c, "-o", exe] + shlex.split(flags)
        print("compile:", " ".join(shlex.quote(c) for c in compile_cmd))
        run(compile_cmd, what="compiling the example against the installed library")

        env_run = dict(os.environ)
        env_run["LD_LIBRARY_PATH"] = os.pathsep.join(
            [libdir] + [p for p in [os.environ.get("LD_LIBRARY_PATH")] if p])
        # What the dynamic loader resolves (ldd's mechanism, without running).
        trace = run([exe], env=dict(env_run, LD_TRACE_LOADED_OBJECTS="1"), what="loader trace")
        m = re.search(r"libllmem\.so\.0 => (\S+)", trace)
        if not m or not os.path.realpath(m.group(1)).startswith(os.path.realpath(libdir)):
            print(trace)
            print("FAIL: the example did not load libllmem.so.0 from %s" % libdir)
            return 1

        installed_out = run([exe], env=env_run, what="running the installed-build example")
        in_tree_out = run([in_tree_exe], what="running the in-tree example")
    print(installed_out)
    if not re.search(r"^peak allocated: [1-9]\d* bytes", installed_out, re.M) or \
            not re.search(r"^peak phase: +\S", installed_out, re.M):
        print("FAIL: unexpected output from the example")
        return 1
    if installed_out != in_tree_out:
        print("FAIL: the in-tree example printed something else:\n" + in_tree_out)
        return 1
    print("OK: the example builds against the installed libllmem through pkg-config")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
