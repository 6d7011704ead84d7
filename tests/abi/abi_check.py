#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""ABI checks of the built shared library (Python standard library only).

Subcommands, each registered as a Meson test in tests/abi/meson.build:

  symbols HEADER MAP LIB NM        the LLMEM_API functions of the header, the
                                   global names of the version script and the
                                   defined dynamic symbols of LIB agree exactly
  data LIB READELF                 LIB has no writable data of its own
                                   (no global or static mutable state)
  soname LIB READELF EXPECTED      LIB's DT_SONAME is EXPECTED
  prefix ARCHIVE NM                every global symbol the library's objects
                                   define (what a static archive exports to
                                   the program that vendors it) starts with
                                   llmem_
  abidiff LIB BASELINE HEADERS ABIDW ABIDIFF
                                   no ABI change against the committed
                                   baseline, additions excepted (exit 77 when
                                   the tools are missing)
  dump LIB OUT HEADERS ABIDW SRCROOT BUILDROOT
                                   write a new baseline (the abi-baseline
                                   run target; see tests/abi/README.md)

Exit status: 0 pass, 1 fail, 77 skip (Meson's convention).
"""
import os
import re
import subprocess
import sys
import tempfile

SKIP = 77

# Toolchain-provided symbols that live in writable, non-RELRO sections of
# every shared object GCC or Clang links on Debian (crtbeginS.o, crtendS.o
# and the linker itself). Nothing of ours may be added here.
TOOLCHAIN_WRITABLE = {
    "__dso_handle",           # crtbeginS.o: identifies the DSO for __cxa_atexit
    "__TMC_END__",            # crtendS.o: end of the transactional-memory clone table
    "completed.0",            # crtbeginS.o: __do_global_dtors_aux has run
    "_GLOBAL_OFFSET_TABLE_",  # ld: start of .got.plt (lazy binding slots)
}
# Instrumentation data of sanitized builds (-Db_sanitize=...), allowed only
# when the library imports a sanitizer runtime: GCC's AddressSanitizer
# one-byte ODR indicators (__odr_asan.<global>), and Clang's unnamed global
# descriptors and UndefinedBehaviorSanitizer source locations (__unnamed_N).
SANITIZER_WRITABLE = re.compile(r"__odr_asan\.|__unnamed_\d+$")
SANITIZER_RUNTIME = re.compile(r"^__(asan|ubsan|tsan|msan)_")


def run(cmd):
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True)
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr)
        raise SystemExit("command failed (%d): %s" % (proc.returncode, " ".join(cmd)))
    return proc.stdout


def strip_c_comments(text):
    return re.sub(r"/\*.*?\*/|//[^\n]*", " ", text, flags=re.S)


def header_functions(path):
    """Names declared with LLMEM_API in the public header."""
    with open(path, encoding="utf-8") as f:
        text = strip_c_comments(f.read())
    # Drop preprocessor lines (the LLMEM_API definitions themselves).
    text = "\n".join(l for l in text.splitlines() if not l.lstrip().startswith("#"))
    names = re.findall(r"\bLLMEM_API\b[^;(]*?\b([A-Za-z_]\w*)\s*\(", text)
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise SystemExit("header declares twice: %s" % ", ".join(dupes))
    return set(names)


def map_symbols(path):
    """{name: version node} of the global names of the version script."""
    with open(path, encoding="utf-8") as f:
        text = strip_c_comments(f.read())
    text = re.sub(r"#[^\n]*", " ", text)
    found = {}
    problems = []
    for node, body in re.findall(r"([A-Za-z_][\w.]*)\s*\{(.*?)\}\s*[\w.]*\s*;", text, flags=re.S):
        scope = None
        for item in re.split(r"[;\s]+", body):
            if not item:
                continue
            if item.endswith(":"):
                scope = item[:-1]
                continue
            if scope == "global":
                if item in found:
                    problems.append("%s listed twice in the version script" % item)
                found[item] = node
        if scope is None:
            problems.append("node %s has no global:/local: sections" % node)
    if not re.search(r"\blocal\s*:\s*\*\s*;", text):
        problems.append("the version script has no 'local: *;' (everything else must stay hidden)")
    if not found:
        problems.append("no global names found in %s" % path)
    return found, problems


def dynamic_symbols(lib, nm):
    """{name: (type letter, version)} of the defined dynamic symbols."""
    out = {}
    for line in run([nm, "-D", "--defined-only", lib]).splitlines():
        parts = line.split()
        if len(parts) < 3:
            continue
        kind, sym = parts[1], parts[2]
        if kind == "A":  # a version node, e.g. LLMEM_0.1
            continue
        name, _, version = sym.partition("@")
        out[name] = (kind, version.lstrip("@"))
    return out


def cmd_symbols(header, mapfile, lib, nm):
    declared = header_functions(header)
    mapped, problems = map_symbols(mapfile)
    exported = dynamic_symbols(lib, nm)

    def report(label, names):
        if names:
            problems.append("%s: %s" % (label, ", ".join(sorted(names))))

    report("declared LLMEM_API in the header but missing from the version script",
           declared - set(mapped))
    report("in the version script but not declared LLMEM_API in the header",
           set(mapped) - declared)
    report("declared LLMEM_API but not exported by the library", declared - set(exported))
    report("exported by the library but not declared LLMEM_API (a leak)",
           set(exported) - declared)
    for name, (kind, version) in sorted(exported.items()):
        if name in declared and kind not in ("T", "i"):
            problems.append("%s is exported as '%s', not as a function" % (name, kind))
        if name in mapped and version != mapped[name]:
            problems.append("%s has version '%s', the script puts it in '%s'"
                            % (name, version or "(none)", mapped[name]))
    if problems:
        print("\n".join("FAIL: " + p for p in problems))
        return 1
    print("OK: %d functions agree between %s, %s and %s"
          % (len(declared), os.path.basename(header), os.path.basename(mapfile),
             os.path.basename(lib)))
    return 0


def parse_sections(lib, readelf):
    """[(index, name, address, size, flags)] from readelf -SW."""
    sections = []
    for line in run([readelf, "-SW", lib]).splitlines():
        m = re.match(r"\s*\[\s*(\d+)\]\s+(\S+)\s+(\S+)\s+([0-9a-f]+)\s+[0-9a-f]+\s+([0-9a-f]+)"
                     r"\s+[0-9a-f]+\s+([A-Za-z]*)\s+\d+", line)
        if m:
            sections.append((int(m.group(1)), m.group(2), int(m.group(4), 16),
                             int(m.group(5), 16), m.group(6)))
    return sections


def relro_ranges(lib, readelf):
    ranges = []
    for line in run([readelf, "-lW", lib]).splitlines():
        parts = line.split()
        if parts and parts[0] == "GNU_RELRO":
            vaddr, memsz = int(parts[2], 16), int(parts[5], 16)
            ranges.append((vaddr, vaddr + memsz))
    return ranges


def cmd_data(lib, readelf):
    sections = parse_sections(lib, readelf)
    names = {s[1] for s in sections}
    if ".symtab" not in names:
        print("SKIP: %s is stripped (no .symtab to inspect)" % lib)
        return SKIP
    relro = relro_ranges(lib, readelf)

    def in_relro(addr, size):
        return any(lo <= addr and addr + size <= hi for lo, hi in relro)

    # Writable at run time: allocated, writable, and not made read-only after
    # relocation (.data.rel.ro, .got, .dynamic and the init arrays are RELRO).
    writable = {idx: name for idx, name, addr, size, flags in sections
                if "W" in flags and "A" in flags and not in_relro(addr, size)}
    tls = {idx: name for idx, name, addr, size, flags in sections if "T" in flags}

    problems, allowed, sanitizer = [], [], 0
    sanitized = any(SANITIZER_RUNTIME.match(line.split()[-1])
                    for line in run([readelf, "--dyn-syms", "-W", lib]).splitlines()
                    if " UND " in line)
    for line in run([readelf, "-sW", "--syms", lib]).split("Symbol table")[1:]:
        if "'.symtab'" not in line.splitlines()[0]:
            continue
        for row in line.splitlines()[1:]:
            parts = row.split()
            if len(parts) < 8 or not parts[0].rstrip(":").isdigit():
                continue
            size, kind, ndx, name = parts[2], parts[3], parts[6], parts[7]
            if kind in ("SECTION", "FILE") or not ndx.isdigit():
                continue
            ndx = int(ndx)
            if kind == "TLS" or ndx in tls:
                problems.append("%s: thread-local storage in %s" % (name, tls.get(ndx, "?")))
            elif ndx in writable:
                if name in TOOLCHAIN_WRITABLE:
                    allowed.append("%s (%s)" % (name, writable[ndx]))
                elif sanitized and SANITIZER_WRITABLE.match(name):
                    sanitizer += 1
                else:
                    problems.append("%s: %s bytes of writable data in %s"
                                    % (name, int(size, 0), writable[ndx]))
    for p in problems:
        print("FAIL: " + p)
    if problems:
        print("The library must hold no global or static mutable state: make the "
              "object const, or move it into a context-owned object.")
        return 1
    if sanitizer:
        allowed.append("%d sanitizer instrumentation objects" % sanitizer)
    print("OK: no writable data of ours in %s (toolchain only: %s)"
          % (os.path.basename(lib), ", ".join(sorted(allowed)) or "none"))
    return 0


def cmd_soname(lib, readelf, expected):
    m = re.search(r"\(SONAME\)\s+Library soname: \[([^\]]+)\]", run([readelf, "-dW", lib]))
    soname = m.group(1) if m else None
    if soname != expected:
        print("FAIL: SONAME of %s is %s, expected %s" % (lib, soname, expected))
        return 1
    print("OK: SONAME %s" % soname)
    return 0


def abidw(abidw_prog, lib, headers):
    """The ABI of LIB restricted to the types of the public headers."""
    return run([abidw_prog, "--no-corpus-path", "--no-comp-dir-path", "--no-show-locs",
                "--no-elf-needed", "--headers-dir", headers, "--drop-private-types", lib])


def has_debug_info(lib):
    # The section name is enough; avoid depending on readelf here.
    with open(lib, "rb") as f:
        return b".debug_info" in f.read()


def cmd_abidiff(lib, baseline, headers, abidw_prog, abidiff_prog):
    if not abidw_prog or not abidiff_prog:
        print("SKIP: abidw/abidiff not found (Debian package abigail-tools)")
        return SKIP
    if not has_debug_info(lib):
        print("SKIP: %s has no DWARF debug info (build with -g, e.g. debugoptimized)" % lib)
        return SKIP
    with tempfile.TemporaryDirectory() as tmp:
        current = os.path.join(tmp, "current.abi")
        with open(current, "w", encoding="utf-8") as f:
            f.write(abidw(abidw_prog, lib, headers))
        # Added functions are compatible (they go in a new version node);
        # anything else (removed or changed functions, changed public types,
        # SONAME) fails the gate.
        gate = subprocess.run([abidiff_prog, "--no-added-syms", baseline, current],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              universal_newlines=True)
        full = subprocess.run([abidiff_prog, baseline, current], stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, universal_newlines=True)
    print(full.stdout)
    if gate.returncode != 0:
        print("FAIL: abidiff exit status %d against %s (bits: 1 error, 2 usage, 4 ABI "
              "change, 8 incompatible change)" % (gate.returncode, baseline))
        print("If the change is intended, refresh the baseline: see tests/abi/README.md.")
        return 1
    if full.returncode != 0:
        print("OK (additions only): refresh the baseline when releasing; see tests/abi/README.md")
    else:
        print("OK: no ABI change against %s" % os.path.basename(baseline))
    return 0


def cmd_dump(lib, out, headers, abidw_prog, srcroot, build_dir):
    text = abidw(abidw_prog, lib, headers)
    # abidw records translation-unit paths relative to the build directory;
    # make them relative to the source root so the baseline does not depend
    # on where the build directory was.

    def relative(m):
        path = os.path.normpath(os.path.join(build_dir, m.group(2)))
        return "%s'%s'" % (m.group(1), os.path.relpath(path, srcroot))

    text = re.sub(r"(<abi-instr [^>]*?path=)'([^']*)'", relative, text)
    with open(out, "w", encoding="utf-8") as f:
        f.write(text)
    print("wrote %s" % out)
    return 0


def cmd_prefix(archive, nm):
    out = run([nm, "-g", "--defined-only", archive])
    names = sorted({line.split()[2] for line in out.splitlines()
                    if len(line.split()) == 3})
    if not names:
        print("FAIL: %s defines no global symbol" % archive)
        return 1
    # AddressSanitizer's one-definition-rule indicators (__odr_asan.NAME)
    # are emitted by the compiler for each of our globals under
    # -fsanitize=address; they name our symbol and are not ours to prefix.
    bad = [n for n in names
           if not n.startswith("llmem_")
           and not n.startswith("__odr_asan.llmem_")]
    if bad:
        print("FAIL: %d global symbols without the llmem_ prefix: %s"
              % (len(bad), " ".join(bad)))
        return 1
    print("ok: %d global symbols, all llmem_*" % len(names))
    return 0


COMMANDS = {
    "prefix": (cmd_prefix, 2),
    "symbols": (cmd_symbols, 4),
    "data": (cmd_data, 2),
    "soname": (cmd_soname, 3),
    "abidiff": (cmd_abidiff, 5),
    "dump": (cmd_dump, 6),
}


def main(argv):
    if len(argv) < 2 or argv[1] not in COMMANDS:
        sys.stderr.write(__doc__)
        return 2
    func, nargs = COMMANDS[argv[1]]
    args = argv[2:]
    if len(args) != nargs:
        sys.stderr.write("%s takes %d arguments, got %d\n" % (argv[1], nargs, len(args)))
        return 2
    return func(*args)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
