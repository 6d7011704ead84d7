#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Build tests/vendor/consumer the three ways a project takes libllmem.

  subproject  libllmem's source tree as subprojects/libllmem (a symlink) with
              the consumer's libllmem.wrap, --wrap-mode=forcefallback, and
              -Dlibllmem:hfconfig=disabled: no json-c needed.
  static      the same with -Ddefault_library=static: the program embeds the
              library, and every global symbol of libllmem.a is llmem_*.
  installed   this build installed into a temporary directory, found through
              pkg-config (libllmem.pc), --wrap-mode=nofallback; llmem.hpp
              installed next to llmem.h; and, when installed (option
              python), the Python package imports from there and gives the
              same peak.

Each copies the consumer into a temporary directory, configures it with
`meson setup`, builds it and runs it: it must print this project's version
and the peak the llmem command gives (when built). The vendored builds must
build no executable or custom target of libllmem (its tests, examples, CLI
and docs stay off) and register none of its tests.

usage: check_vendor.py MODE --meson M --nm NM --readelf R --source DIR
                       --build DIR --version V [--cli LLMEM] [--sanitize S]
Exit status: 0 pass, 1 fail, 77 skip.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
CONSUMER = os.path.join(HERE, "consumer")
PRESET = "meta-llama/Llama-3.2-1B"
SKIP = 77


class Failure(Exception):
    pass


def run(cmd, env=None, cwd=None):
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True, env=env, cwd=cwd)
    if proc.returncode != 0:
        print(proc.stdout)
        raise Failure("exit %d: %s" % (proc.returncode, " ".join(cmd)))
    return proc.stdout


def find_file(root, name):
    for dirpath, _, files in os.walk(root):
        if name in files:
            return os.path.join(dirpath, name)
    raise Failure("no %s under %s" % (name, root))


def needed(readelf, path):
    """The DT_NEEDED entries of an ELF file."""
    return re.findall(r"\(NEEDED\).*\[(.+)\]", run([readelf, "-d", path]))


def setup_and_build(args, workdir, options, env=None, vendored=False):
    """Copy the consumer into workdir (with the source tree as
    subprojects/libllmem when vendored), configure and build it."""
    project = os.path.join(workdir, "consumer")
    shutil.copytree(CONSUMER, project)
    if vendored:
        os.symlink(os.path.abspath(args.source),
                   os.path.join(project, "subprojects", "libllmem"))
    build = os.path.join(project, "build")
    print(run([args.meson, "setup", build, project, "--buildtype=plain"] + options,
              env=env)[-1500:])
    run([args.meson, "compile", "-C", build], env=env)
    return build


def check_vendored_build(args, build):
    """libllmem, as a subproject, builds only its library and registers no test."""
    targets = json.loads(run([args.meson, "introspect", "--targets", build]))
    ours = [t for t in targets if t.get("subproject") == "libllmem"]
    extra = [t["name"] + " (" + t["type"] + ")" for t in ours
             if t["type"] not in ("shared library", "static library")]
    if not ours or extra:
        raise Failure("the subproject builds more than its library: %s"
                      % (", ".join(extra) or "no target at all"))
    tests = json.loads(run([args.meson, "introspect", "--tests", build]))
    theirs = [t["name"] for t in tests if any(s.startswith("libllmem") for s in t["suite"])]
    if theirs:
        raise Failure("the subproject registers tests: %s" % ", ".join(theirs))
    print("subproject targets: %s" % ", ".join(t["name"] + " (" + t["type"] + ")"
                                              for t in ours))


def run_env(libdir=None):
    """The environment to run the consumer in: meson test points
    LD_LIBRARY_PATH at this build's library, which would beat the consumer's
    own RUNPATH; only libdir, when given, is searched."""
    env = {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"}
    if libdir is not None:
        env["LD_LIBRARY_PATH"] = libdir
    return env


def check_loads(exe, env, libdir):
    """The dynamic loader resolves libllmem.so.0 to libdir (ldd's mechanism)."""
    trace = run([exe], env=dict(env, LD_TRACE_LOADED_OBJECTS="1"))
    found = re.search(r"libllmem\.so\.0 => (\S+)", trace)
    if not found or not os.path.realpath(found.group(1)).startswith(os.path.realpath(libdir)):
        print(trace)
        raise Failure("the consumer did not load libllmem.so.0 from %s" % libdir)


def check_output(args, exe, env, hf=None):
    out = run([exe, PRESET], env=env)
    print(out)
    fields = dict(line.split(": ", 1) for line in out.splitlines() if ": " in line)
    if fields.get("version") != args.version:
        raise Failure("the consumer ran libllmem %s, not %s" % (fields.get("version"),
                                                                args.version))
    if hf is not None and fields.get("hf readers") != hf:
        raise Failure("hf readers %s, expected %s" % (fields.get("hf readers"), hf))
    peak = fields.get("peak allocated", "").split(" ")[0]
    if args.cli:
        expected = json.loads(run([args.cli, "estimate", "--model", PRESET, "--json"]))
        if peak != str(expected["peak_allocated_bytes"]):
            raise Failure("peak %s, the llmem command says %s"
                          % (peak, expected["peak_allocated_bytes"]))
    elif not peak.isdigit() or int(peak) == 0:
        raise Failure("no peak printed")
    return peak


def global_symbols(nm, archive):
    """Defined global symbols of a static archive."""
    names = []
    for line in run([nm, "-g", "--defined-only", archive]).splitlines():
        parts = line.split()
        if len(parts) == 3:
            names.append(parts[2])
    return names


def mode_subproject(args, workdir, static):
    options = ["--wrap-mode=forcefallback"]
    options += ["-Ddefault_library=static"] if static else ["-Dlibllmem:hfconfig=disabled"]
    build = setup_and_build(args, workdir, options, vendored=True)
    check_vendored_build(args, build)
    exe = os.path.join(build, "consumer")
    libs = needed(args.readelf, exe)
    if static:
        if any(n.startswith("libllmem") for n in libs):
            raise Failure("the static build still needs %s" % libs)
        archive = find_file(build, "libllmem.a")
        symbols = global_symbols(args.nm, archive)
        foreign = sorted(s for s in symbols if not s.startswith("llmem_"))
        if not symbols or foreign:
            raise Failure("libllmem.a defines global symbols outside llmem_: %s"
                          % ", ".join(foreign[:40]))
        print("libllmem.a: %d global symbols, all llmem_*" % len(symbols))
        check_output(args, exe, run_env())
    else:
        if "libllmem.so.0" not in libs:
            raise Failure("the consumer does not need libllmem.so.0: %s" % libs)
        lib = find_file(build, "libllmem.so.0")
        if any("json-c" in n for n in needed(args.readelf, lib)):
            raise Failure("hfconfig=disabled, yet the library needs json-c")
        check_loads(exe, run_env(), os.path.dirname(lib))
        check_output(args, exe, run_env(), hf="absent")


def mode_installed(args, workdir):
    destdir = os.path.join(workdir, "staging")
    run([args.meson, "install", "-C", args.build, "--no-rebuild", "--quiet",
         "--destdir", destdir])
    installed_pc = find_file(destdir, "libllmem.pc")
    with open(installed_pc, encoding="utf-8") as f:
        pc = f.read()
    prefix = re.search(r"^prefix=(.*)$", pc, re.M).group(1)
    staged = os.path.normpath(destdir + "/" + prefix)
    # The .pc names the configured prefix; the copy lives under destdir.
    pc_dir = os.path.join(workdir, "pkgconfig")
    os.makedirs(pc_dir)
    with open(os.path.join(pc_dir, "libllmem.pc"), "w", encoding="utf-8") as f:
        f.write(re.sub(r"^prefix=.*$", "prefix=" + staged, pc, count=1, flags=re.M))
    env = dict(os.environ, PKG_CONFIG_PATH=pc_dir)
    header = find_file(staged, "llmem.h")
    if not os.path.isfile(os.path.join(os.path.dirname(header), "llmem.hpp")):
        raise Failure("llmem.hpp is not installed next to %s" % header)
    options = ["--wrap-mode=nofallback"]
    if args.sanitize != "none":  # a sanitized library needs a sanitized program
        options += ["-Db_sanitize=" + args.sanitize, "-Db_lundef=false"]
    build = setup_and_build(args, workdir, options, env=env)
    exe = os.path.join(build, "consumer")
    libdir = os.path.dirname(find_file(staged, "libllmem.so.0"))
    check_loads(exe, run_env(libdir), libdir)
    peak = check_output(args, exe, run_env(libdir))
    check_installed_python(args, staged, os.path.join(libdir, "libllmem.so.0"), peak)


def check_installed_python(args, staged, library, peak):
    """The installed package (every module listed for installation) imports
    and estimates what the C consumer printed."""
    try:
        init = find_file(staged, "__init__.py")
    except Failure:
        print("no Python package installed (option python)")
        return
    if args.sanitize != "none":
        print("installed Python package not loaded: the library is sanitized")
        return
    site = os.path.dirname(os.path.dirname(init))
    env = dict(run_env(), PYTHONPATH=site, LLMEM_LIBRARY=library, PYTHONDONTWRITEBYTECODE="1")
    out = run([sys.executable, "-c", "import llmem; print(llmem.__file__); "
               "print(llmem.estimate(%r).peak_allocated)" % PRESET], env=env).split()
    if out[0] != init or out[1] != peak:
        raise Failure("the installed Python package (%s) says %s, the C consumer %s"
                      % (out[0], out[1], peak))
    print("installed Python package %s: peak %s" % (out[0], out[1]))


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", choices=["subproject", "static", "installed"])
    for name in ("meson", "nm", "readelf", "source", "build", "version"):
        parser.add_argument("--" + name, required=True)
    parser.add_argument("--cli", default="")
    parser.add_argument("--sanitize", default="none")
    args = parser.parse_args(argv[1:])
    if shutil.which("ninja") is None and shutil.which("samu") is None:
        print("SKIP: no ninja")
        return SKIP
    with tempfile.TemporaryDirectory(prefix="llmem-vendor-") as workdir:
        try:
            if args.mode == "installed":
                mode_installed(args, workdir)
            else:
                mode_subproject(args, workdir, static=args.mode == "static")
        except Failure as exc:
            print("FAIL: %s" % exc)
            return 1
    print("OK: %s" % args.mode)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
