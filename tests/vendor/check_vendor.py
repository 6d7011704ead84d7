#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Build tests/vendor/consumer the four ways a project takes libllmem.

  subproject  libllmem's source tree as subprojects/libllmem (a symlink) with
              the consumer's libllmem.wrap, --wrap-mode=forcefallback, and
              -Dlibllmem:hfconfig=disabled: no json-c needed. Built with
              clang when installed.
  static      the same with -Ddefault_library=static: the program embeds the
              library, and every global symbol of libllmem.a is llmem_*.
              Built with gcc when installed, the Hugging Face readers in
              (json-c when found).
              Both vendored builds are what a strict parent project does:
              --buildtype=release (-O3, NDEBUG) and -Dwerror=true, which the
              subproject inherits; every source of libllmem must compile
              without a warning (gcc's -Wmaybe-uninitialized needs -O3).
  installed   this build installed into a temporary directory, found through
              pkg-config (libllmem.pc), --wrap-mode=nofallback; llmem.hpp
              installed next to llmem.h; and, when installed (option
              python), the Python package imports from there and gives the
              same peak.
  flat        plain sources, no Meson: the shell blocks of docs/consumers.md
              ("Plain sources") run as written, in a project holding copies
              of lib/ and include/ and the consumer as scheduler.c: the
              settings with json-c (without it when pkg-config finds none),
              then the build, every source compiled by one `cc -c` into one
              directory with -Werror, linked with the consumer. Each
              setting's SRCS must name lib/meson.build's sources of that
              build, every source's file name unique.

Each copies the consumer into a temporary directory, builds it (`meson
setup` and `meson compile`, or the documented commands) and runs it: it must
print this project's version and the peak the llmem command gives (when
built). The vendored builds must build no executable or custom target of
libllmem (its tests, examples, CLI and docs stay off) and register none of
its tests.

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
# The compiler each vendored build prefers (CC), when installed: between
# them both compilers see every source built with -Werror.
COMPILER = {"subproject": "clang", "static": "gcc"}
# The shell blocks of docs/consumers.md that the flat mode runs: the two
# settings (SRCS and json-c's flags) and the build.
FLAT_BLOCK = re.compile(r"<!-- flat build: ([\w -]+) -->\n```sh\n(.*?)\n```", re.S)
FLAT_BLOCKS = {"json-c", "no json-c", "build"}


class Failure(Exception):
    pass


class Skip(Exception):
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


def setup_and_build(args, workdir, options, env=None, vendored=False,
                    buildtype="plain"):
    """Copy the consumer into workdir (with the source tree as
    subprojects/libllmem when vendored), configure and build it."""
    project = os.path.join(workdir, "consumer")
    shutil.copytree(CONSUMER, project)
    if vendored:
        os.symlink(os.path.abspath(args.source),
                   os.path.join(project, "subprojects", "libllmem"))
    build = os.path.join(project, "build")
    print(run([args.meson, "setup", build, project, "--buildtype=" + buildtype] + options,
              env=env)[-1500:])
    run([args.meson, "compile", "-C", build], env=env)
    return build


def compiler_of(command):
    """The compiler's name in a compile command, past a ccache Meson put first."""
    words = [os.path.basename(w) for w in command.split()]
    return words[1] if words[0] in ("ccache", "sccache") and len(words) > 1 else words[0]


def check_strict_flags(build, compiler):
    """Every source of the subproject was compiled by compiler (when one was
    chosen) with the parent's -Werror and release -O3: the build proved the
    library warning-free there."""
    with open(os.path.join(build, "compile_commands.json"), encoding="utf-8") as f:
        commands = json.load(f)
    ours = [c for c in commands if "/subprojects/libllmem/lib/" in "/" + c["file"]]
    lax = [os.path.basename(c["file"]) for c in ours
           if not {"-Werror", "-O3"} <= set(c["command"].split())
           or (compiler and compiler_of(c["command"]) != compiler)]
    if not ours or lax:
        raise Failure("libllmem's sources were not all compiled with %s -Werror -O3: %s"
                      % (compiler or "the compiler", ", ".join(lax[:20]) or "no source"))
    print("%d sources of libllmem compiled with %s -Werror -O3"
          % (len(ours), compiler or "the default compiler"))


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
    options = ["--wrap-mode=forcefallback", "-Dwerror=true"]
    options += ["-Ddefault_library=static"] if static else ["-Dlibllmem:hfconfig=disabled"]
    compiler = COMPILER[args.mode]
    if shutil.which(compiler) is None:
        print("%s is not installed: the default C compiler builds" % compiler)
        compiler = None
    env = dict(os.environ, CC=compiler) if compiler else None
    build = setup_and_build(args, workdir, options, env=env, vendored=True,
                            buildtype="release")
    check_vendored_build(args, build)
    check_strict_flags(build, compiler)
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


def meson_sources(source):
    """The sources lib/meson.build names, relative to lib/: the hf/ readers
    or hf/unavailable.c, as json-c is found or not, and all the others."""
    with open(os.path.join(source, "lib", "meson.build"), encoding="utf-8") as f:
        listed = set(re.findall(r"'([\w/]+\.c)'", f.read()))
    lib = os.path.join(source, "lib")
    present = set(os.path.relpath(os.path.join(d, n), lib)
                  for d, _, names in os.walk(lib) for n in names if n.endswith(".c"))
    if listed != present:
        raise Failure("lib/meson.build and lib/ disagree (docs/consumers.md tells a plain "
                      "build to compile every .c): only in meson.build: %s; only in lib/: %s"
                      % (sorted(listed - present), sorted(present - listed)))
    by_name = {}
    for path in sorted(present):
        by_name.setdefault(os.path.basename(path), []).append(path)
    clashes = [", ".join(paths) for paths in by_name.values() if len(paths) > 1]
    if clashes:
        raise Failure("sources share a file name, so their objects would share one in a "
                      "flat build: %s" % "; ".join(clashes))
    stub = "hf/unavailable.c"
    return {"json-c": present - {stub},
            "no json-c": set(p for p in present if not p.startswith("hf/")) | {stub}}


def doc_blocks(source):
    """docs/consumers.md's flat-build shell blocks, by name."""
    with open(os.path.join(source, "docs", "consumers.md"), encoding="utf-8") as f:
        blocks = dict(FLAT_BLOCK.findall(f.read()))
    if set(blocks) != FLAT_BLOCKS:
        raise Failure("docs/consumers.md has flat-build blocks %s, not %s"
                      % (sorted(blocks), sorted(FLAT_BLOCKS)))
    return blocks


def flat_project(args, workdir, name):
    """A project holding libllmem's lib/ and include/ as documented, and the
    consumer as scheduler.c."""
    project = os.path.join(workdir, name.replace(" ", "-"))
    vendored = os.path.join(project, "third_party", "libllmem")
    for part in ("lib", "include"):
        shutil.copytree(os.path.join(args.source, part), os.path.join(vendored, part))
    shutil.copy(os.path.join(CONSUMER, "consumer.c"), os.path.join(project, "scheduler.c"))
    return project, os.path.join(vendored, "lib")


def check_selection(name, listed, lib, expected):
    """The sources a setting's SRCS names are the build's."""
    got = set(os.path.relpath(p, lib) for p in listed.split())
    if got != expected:
        raise Failure("%s: SRCS names %d sources, lib/meson.build builds %d; missing %s, "
                      "extra %s" % (name, len(got), len(expected), sorted(expected - got),
                                    sorted(got - expected)))


def mode_flat(args, workdir):
    """The documented plain-source build, run as written."""
    if shutil.which("cc") is None:
        raise Skip("no cc")
    selections = meson_sources(args.source)
    blocks = doc_blocks(args.source)
    built = "json-c"
    if shutil.which("pkg-config") is None or subprocess.run(
            ["pkg-config", "--exists", "json-c"]).returncode != 0:
        print("pkg-config finds no json-c: the build without it")
        built = "no json-c"
    for name in sorted(selections, key=lambda n: n != built):
        project, lib = flat_project(args, workdir, name)
        if name != built:  # the other setting: its sources only (pkg-config may fail)
            listed = run(["sh", "-c", "{\n%s\n} 2>/dev/null\nprintf '%%s\\n' $SRCS"
                          % blocks[name]], cwd=project, env=run_env())
            check_selection(name, listed, lib, selections[name])
            print("%s: SRCS names the %d sources of that build" % (name, len(selections[name])))
            continue
        script = blocks[name] + "\n" + blocks["build"]
        print("    " + script.replace("\n", "\n    "))
        print(run(["sh", "-e", "-c", script], cwd=project, env=run_env()))
        objects = set(n for n in os.listdir(os.path.join(project, "obj", "llmem"))
                      if n.endswith(".o"))
        expected = set(os.path.basename(p)[:-2] + ".o" for p in selections[name])
        if objects != expected:
            raise Failure("%s: obj/llmem holds %d objects for the %d sources of "
                          "lib/meson.build; missing %s, extra %s"
                          % (name, len(objects), len(expected), sorted(expected - objects),
                             sorted(objects - expected)))
        print("%s: %d objects in obj/llmem, one per source" % (name, len(objects)))
        check_output(args, os.path.join(project, "scheduler"), run_env(),
                     hf="present" if name == "json-c" else "absent")


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", choices=["subproject", "static", "installed", "flat"])
    for name in ("meson", "nm", "readelf", "source", "build", "version"):
        parser.add_argument("--" + name, required=True)
    parser.add_argument("--cli", default="")
    parser.add_argument("--sanitize", default="none")
    args = parser.parse_args(argv[1:])
    if args.mode != "flat" and shutil.which("ninja") is None and shutil.which("samu") is None:
        print("SKIP: no ninja")
        return SKIP
    with tempfile.TemporaryDirectory(prefix="llmem-vendor-") as workdir:
        try:
            if args.mode == "installed":
                mode_installed(args, workdir)
            elif args.mode == "flat":
                mode_flat(args, workdir)
            else:
                mode_subproject(args, workdir, static=args.mode == "static")
        except Failure as exc:
            print("FAIL: %s" % exc)
            return 1
        except Skip as exc:
            print("SKIP: %s" % exc)
            return SKIP
    print("OK: %s" % args.mode)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
