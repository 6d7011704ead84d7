#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Build the example against the *installed* library, as a consumer would.

Installs the current build into a temporary DESTDIR (meson install
--no-rebuild --destdir), points pkg-config at the libllmem.pc found there
with its prefix redefined to the DESTDIR copy, compiles the example with
`cc $(pkg-config --cflags --libs libllmem)`, checks that the program loads
the installed libllmem.so.0 and that its output matches the in-tree build.

It checks the .pc too: json-c, when the library reads Hugging Face files
with it (HF_DEP json-c; none otherwise), is private to libllmem.so (llmem.h
includes nothing of it), so a shared-only install's .pc requires no other
package: `pkg-config --cflags --libs libllmem` works with no other .pc on
the search path (a machine without json-c's development files), and
`--static --libs` still gives -ljson-c.

usage: check_installed.py MESON PKG_CONFIG BUILD_ROOT EXAMPLE_C IN_TREE_EXE VERSION HF_DEP
                          CC... [-- CFLAGS...]
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


def check_private_deps(pkg_config, pc_args, pc, libdir, flags, hf_dep):
    """What the .pc asks of the machine beyond libllmem: nothing for a shared
    link; the private libraries for a static one. Returns the problems."""
    problems = []
    if os.path.exists(os.path.join(libdir, "libllmem.a")):
        # A static archive's links need json-c's own flags: Meson's Requires.
        print("libllmem.a installed: the .pc may require json-c")
        return problems
    with open(pc, encoding="utf-8") as f:
        requires = re.findall(r"^Requires(?:\.private)?:.*$", f.read(), re.M)
    if requires:
        problems.append("a shared-only libllmem.pc requires other packages: %s"
                        % "; ".join(requires))
    # Only the staged .pc on the search path: json-c's is as good as absent.
    alone = {k: v for k, v in os.environ.items() if k != "PKG_CONFIG_PATH"}
    alone["PKG_CONFIG_LIBDIR"] = os.path.dirname(pc)
    shared = run(pc_args + ["--cflags", "--libs", "libllmem"], env=alone,
                 what="pkg-config --cflags --libs with no other .pc")
    static = run(pc_args + ["--static", "--libs", "libllmem"], env=alone,
                 what="pkg-config --static --libs with no other .pc")
    print("with no other .pc: --cflags --libs: %s; --static --libs: %s"
          % (shared.strip(), static.strip()))
    if shared.split() != flags.split():
        problems.append("pkg-config --cflags --libs says %r with no other .pc, %r with them"
                        % (shared.strip(), flags.strip()))
    if hf_dep == "json-c" and "-ljson-c" not in static.split():
        problems.append("pkg-config --static --libs lacks -ljson-c: %s" % static.strip())
    if "-ljson-c" in flags.split():
        problems.append("a shared link gets -ljson-c (libllmem.so needs it itself): %s"
                        % flags.strip())
    return problems


def main(argv):
    if len(argv) < 9:
        sys.stderr.write(__doc__)
        return 2
    meson, pkg_config, build_root, example_c, in_tree_exe, version, hf_dep = argv[1:8]
    rest = argv[8:]
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
        problems += check_private_deps(pkg_config, pc_args, pc, libdir, flags, hf_dep)
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
