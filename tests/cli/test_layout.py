# SPDX-License-Identifier: MIT
"""Checks of `llmem` across GPUs and through the step: layouts, --max, plan,
and the timeline (--timeline, --svg). Same conventions as test_cli.py.

Usage: test_layout.py PATH/TO/llmem GROUP
"""
import json
import re
import os
import sys
import tempfile
import xml.etree.ElementTree as ET

from test_cli import LLAMA_32_1B, TERMS, Llmem, Tap

SVG = "{http://www.w3.org/2000/svg}"
GIB = 1 << 30


def check_timeline(t, llmem):
    for extra in ([], ["--grad-ckpt", "full", "--attention", "flash"], ["--method", "lora"],
                  ["--dp", "2", "--pp", "2", "--zero", "1"]):
        d = llmem.json("--model", LLAMA_32_1B, "--batch", "2", "--seq", "512", "--timeline",
                       *extra)
        points = d["timeline"]
        label = " ".join(extra) or "defaults"
        t.check(20 < len(points) < 2000, "%s: a few hundred points" % label, len(points))
        totals = [sum(p[k] for k in TERMS) for p in points]
        t.check(max(totals) == d["peak_allocated_bytes"],
                "%s: the largest point is the peak" % label, (max(totals), d["peak_allocated_bytes"]))
        at = points[d["timeline_peak"]]
        t.check(sum(at[k] for k in TERMS) == d["peak_allocated_bytes"] and
                at["phase"] == d["peak_phase"], "%s: timeline_peak names it" % label, at)
        phases = [p["phase"] for p in points]
        t.check(phases[0] == "forward" and phases[-1] == "optimizer",
                "%s: forward first, the optimizer last" % label, (phases[0], phases[-1]))
        t.check(all(p["layer"] >= -1 and p["part"] for p in points), "%s: every point named" % label)
    d = llmem.json("--model", LLAMA_32_1B)
    t.check("timeline" not in d, "no timeline without --timeline")
    rc, out, err = llmem.run("estimate", "--model", LLAMA_32_1B)
    t.check(rc == 0 and "the step" in out and "\u2588" in out, "the table's sparkline", out[-400:])


def read_svg(path):
    root = ET.parse(path).getroot()
    return root, list(root.iter())


def stack_top(root):
    """The highest pixel of the stacked areas (the top term's path)."""
    top = None
    for el in root.iter(SVG + "path"):
        if el.get("id", "").startswith("term-"):
            for word in el.get("d").replace("M", " ").replace("L", " ").replace("Z", " ").split():
                y = float(word.split(",")[1])
                top = y if top is None else min(top, y)
    return top


def pixel_of(root, gib):
    """The y pixel of a value, read off the axis's tick labels as a reader would."""
    ticks = [(float(el.text.split()[0]), float(el.get("y")) - 4)
             for el in root.iter(SVG + "text") if el.get("class") == "tick-label"]
    (v0, y0), (v1, y1) = ticks[0], ticks[-1]
    return y0 + (gib - v0) * (y1 - y0) / (v1 - v0)


def check_svg(t, llmem):
    work = tempfile.mkdtemp(prefix="llmem-svg-")
    for extra in ([], ["--grad-ckpt", "full"], ["--dp", "4", "--fsdp", "full"]):
        path = os.path.join(work, "step.svg")
        label = " ".join(extra) or "defaults"
        rc, out, err = llmem.run("estimate", "--model", LLAMA_32_1B, "--batch", "4", "--seq", "1024",
                                 "--capacity", "40GiB", "--svg", path, *extra)
        t.check(rc == 0 and os.path.getsize(path) > 1000, "%s: the SVG is written" % label, err)
        d = llmem.json("--model", LLAMA_32_1B, "--batch", "4", "--seq", "1024", *extra)
        root, elements = read_svg(path)
        t.check(root.tag == SVG + "svg" and root.get("version") == "1.1", "%s: SVG 1.1" % label)
        tags = {el.tag.replace(SVG, "") for el in elements}
        t.check(tags <= {"svg", "title", "rect", "text", "line", "path", "circle"},
                "%s: plain SVG elements only (no script, image, link)" % label, tags)
        texts = " ".join(el.text or "" for el in root.iter(SVG + "text"))
        for needle in ("forward", "backward", "optimizer", "peak", "GiB", "parameters",
                       "temporary", "GPU"):
            t.check(needle in texts, "%s: the picture says %s" % (label, needle))
        peak_px = pixel_of(root, d["peak_allocated_bytes"] / GIB)
        top = stack_top(root)
        t.check(abs(top - peak_px) <= 1.0,
                "%s: the stack's top is the peak to a pixel" % label, (top, peak_px))
    none = os.path.join(work, "none.svg")
    rc, out, err = llmem.run("estimate", "--model", LLAMA_32_1B, "--formula", "article", "--svg",
                             none)
    t.check(rc == 2 and out == "" and "--svg %s needs formula phased" % none in err and
            "no timeline" in err and not os.path.exists(none),
            "the article's formula has no picture: a usage error", err)


def check_layout(t, llmem):
    one = llmem.json("--model", LLAMA_32_1B)
    d = llmem.json("--model", LLAMA_32_1B, "--dp", "1")
    t.check(d["peak_allocated_bytes"] == one["peak_allocated_bytes"] and d["layout"]["gpus"] == 1,
            "a one-GPU layout is the single estimate")
    d = llmem.json("--model", LLAMA_32_1B, "--dp", "4", "--tp", "2", "--pp", "2", "--zero", "1",
                   "--micro-batches", "4")
    t.check(d["layout"]["gpus"] == 16 and d["layout"]["sharding"] == "zero1", "layout echoed",
            d["layout"])
    ranks = d["ranks"]
    t.check(len(ranks) == 2 and [r["stage"] for r in ranks] == [0, 1], "two stages", ranks)
    loaded = [r for r in ranks if r["most_loaded"]]
    t.check(len(loaded) == 1 and loaded[0]["peak_device_bytes"] == d["peak_device_bytes"],
            "the top-level keys are the most loaded rank's")
    t.check(sum(r["layers"] for r in ranks) == 16, "the stages split the 16 layers")
    # A class of middle stages says all their layers, and that its first
    # stage's micro-batches in flight are the most of them.
    rc, out, err = llmem.run("estimate", "--model", LLAMA_32_1B, "--pp", "8", "--micro-batches",
                             "16")
    t.check(rc == 0 and "stages 1-6: layers 2-13 (2 a stage), up to 7 micro-batches in flight"
            in out, "a class of stages: its layers and 'up to'", out)
    rc, out, err = llmem.run("estimate", "--model", LLAMA_32_1B, "--pp", "4", "--micro-batches",
                             "8", "--schedule", "interleaved", "--virtual-stages", "2")
    t.check(rc == 0 and "stages 1-2: layers 2-3, 10-11 (2 chunks) on stage 1, 2 later on each "
            "next, up to" in out, "an interleaved class: its first stage's chunks", out)
    for flags, needle in ((["--tp", "3"], "--tp"), (["--pp", "99"], "--pp"),
                          (["--zero", "4"], "--zero"), (["--fsdp", "half"], "--fsdp"),
                          (["--offload", "optimizer"], "--offload"), (["--sp", "1"], "--sp")):
        rc, out, err = llmem.run("estimate", "--model", LLAMA_32_1B, *flags)
        t.check(rc != 0 and out == "" and needle in err, "%s is refused, naming it" % " ".join(flags),
                err)


def check_max(t, llmem):
    d = llmem.json("--model", LLAMA_32_1B, "--method", "lora", "--seq", "1024", "--max", "batch",
                   "--capacity", "40GiB")
    best = d["max"]["value"]
    t.check(best > 1 and d["batch"] == best and d["peak_device_bytes"] <= d["max"]["budget_bytes"],
            "--max batch fits", d["max"])
    more = llmem.json("--model", LLAMA_32_1B, "--method", "lora", "--seq", "1024", "--batch",
                      str(best + 1))
    t.check(more["peak_device_bytes"] > d["max"]["budget_bytes"], "one more does not")
    rc, out, err = llmem.run("estimate", "--model", LLAMA_32_1B, "--max", "batch")
    t.check(rc == 2 and "--capacity" in err, "--max needs --capacity", err)
    t.check(d["max"]["fits"] is True and d["max"]["smallest_value"] is None and
            d["max"]["headroom_bytes"] == d["max"]["budget_bytes"] - d["peak_device_bytes"] >= 0,
            "--max that fits: fits, no smallest", d["max"])
    # Nothing fits: a capacity question answered no. The answer is printed (the
    # report describes the smallest value the layout takes, and what it needs),
    # exit 3 with one line; it was exit 1 and nothing on stdout.
    rc, d, err = llmem.answer("estimate", "--model", LLAMA_32_1B, "--max", "batch", "--capacity",
                              "1GiB", "--json")
    m = d["max"]
    t.check(rc == 3 and m["value"] == 0 and m["fits"] is False and m["smallest_value"] == 1 and
            d["batch"] == 1 and m["smallest_peak_device_bytes"] == d["peak_device_bytes"] > GIB and
            m["headroom_bytes"] == m["budget_bytes"] - d["peak_device_bytes"] < 0 and
            err.startswith("llmem: --max batch: no batch fits: even the smallest the layout "
                           "takes, 1, needs ") and err.count("\n") == 1,
            "nothing fits: the smallest batch's answer, exit 3", (rc, m, err))
    one = llmem.json("--model", LLAMA_32_1B, "--batch", "1")
    t.check(one["peak_device_bytes"] == d["peak_device_bytes"], "the bytes of batch 1's estimate")
    rc, out, err = llmem.answer("estimate", "--model", LLAMA_32_1B, "--max", "batch",
                                "--capacity", "1GiB")
    t.check(rc == 3 and re.search(r"^Max +no batch fits 972\.80 MiB .*: the smallest the "
                                  r"layout takes, 1, needs .*, short by ", out, re.M) and
            "batch 1 x seq" in out, "nothing fits, text: the Max line says no", (rc, out[-900:]))
    rc, out, err = llmem.answer("estimate", "--model", "Llama-3.1-70B", "--max", "batch",
                                "--gpu", "T4")
    t.check(rc == 3 and "Fits          no: " in out and err.count("\n") == 1 and
            "(T4's 14.76 GiB usable less 5%)" in err, "--max with --gpu: one line, exit 3",
            (rc, err))
    # Under context parallelism the smallest seq is 2 x cp, and with sequence
    # parallelism a multiple of cp x tp: their bytes, not a run at seq 1 that
    # the layout refuses (it printed "needs 0 bytes").
    for flags, smallest in ((["--cp", "2"], 4), (["--cp", "2", "--tp", "4", "--sp", "1"], 8)):
        rc, d, err = llmem.answer("estimate", "--model", LLAMA_32_1B, "--attention", "flash",
                                  *flags, "--max", "seq", "--capacity", "1GiB", "--json")
        own = llmem.json("--model", LLAMA_32_1B, "--attention", "flash", *flags, "--seq",
                         str(smallest))
        t.check(rc == 3 and d["max"]["smallest_value"] == smallest == d["seq"] and
                d["max"]["smallest_peak_device_bytes"] == own["peak_device_bytes"] > GIB,
                "nothing fits under %s: the smallest seq's bytes" % " ".join(flags),
                (rc, d["max"], err))


def check_grid(t, llmem):
    """--batch and --seq lists: a grid whose every point is that point's own
    estimate, marked against the capacity, in the table and the JSON."""
    for flags in ([], ["--method", "lora", "--grad-ckpt", "full"],
                  ["--dp", "2", "--tp", "2", "--zero", "3", "--attention", "flash"]):
        base = ["--model", LLAMA_32_1B] + flags
        d = llmem.json(*base, "--batch", "1,2,8", "--seq", "3,512,2048", "--capacity", "24GiB")
        label = " ".join(flags) or "defaults"
        t.check(d["batch"] == [1, 2, 8] and d["seq"] == [3, 512, 2048] and len(d["grid"]) == 9,
                "%s: nine points, batch by batch" % label, (d["batch"], d["seq"]))
        t.check([(p["batch"], p["seq"]) for p in d["grid"]] ==
                [(b, s) for b in (1, 2, 8) for s in (3, 512, 2048)], "%s: in order" % label)
        same = True
        for p in d["grid"]:
            own = llmem.json(*base, "--batch", str(p["batch"]), "--seq", str(p["seq"]))
            same = same and p["peak_device_bytes"] == own["peak_device_bytes"]
            same = same and p["fits"] == (p["peak_device_bytes"] <= d["gpu"]["budget_bytes"])
        t.check(same, "%s: each point is its own estimate, marked against the budget" % label)
    one = llmem.json("--model", LLAMA_32_1B, "--batch", "2,4")
    t.check(one["seq"] == 512 and [p["seq"] for p in one["grid"]] == [512, 512] and
            "fits" not in one["grid"][0], "one list: the other value the train's, no capacity")
    rc, out, err = llmem.run("estimate", "--model", LLAMA_32_1B, "--batch", "1,2",
                             "--seq", "256,1024", "--gpu", "A100-40GB")
    rows = [line for line in out.splitlines() if line.startswith("batch ")]
    t.check(rc == 0 and "batch 1, 2 x seq 256, 1024" in out and len(rows) == 2 and
            all(line.count("GiB") == 2 for line in rows) and "* fits" in out,
            "the table: a row a batch, a cell a seq", out[-600:])
    for args, needle in ((["--batch", "1,0,2"], "--batch '0'"), (["--seq", "64,,128"], "--seq"),
                         (["--batch", "1,2,"], "--batch"),
                         (["--batch", ",".join(str(b) for b in range(1, 34))], "at most 32"),
                         (["--batch", "1,2", "--max", "seq", "--capacity", "1GiB"], "--max"),
                         (["--seq", "1,2", "--timeline"], "--timeline")):
        rc, out, err = llmem.run("estimate", "--model", LLAMA_32_1B, *args)
        t.check(rc == 2 and out == "" and needle in err, "%s is refused" % " ".join(args), err)
    # A value given twice would print its row (column) twice: refused, naming
    # the flag, the list and the value, as it reads (02 is 2).
    row, column = "(each value is a row of the grid)", "(each value is a column of the grid)"
    for args, err_wanted in ((["--batch", "1,2,2", "--seq", "512"],
                              "--batch '1,2,2': 2 is given twice " + row),
                             (["--seq", "512,512"], "--seq '512,512': 512 is given twice " + column),
                             (["--batch", "2,1,02"], "--batch '2,1,02': 2 is given twice " + row)):
        rc, out, err = llmem.run("estimate", "--model", LLAMA_32_1B, *args)
        t.check(rc == 2 and out == "" and err == "llmem: %s\n" % err_wanted,
                "%s: a repeated value is refused" % " ".join(args), (rc, out[-300:], err))
    rc, out, err = llmem.run("estimate", "--model", "openai-community/gpt2", "--seq", "512,2048")
    t.check(rc == 1 and out == "" and "--seq" in err and "sweep point 1" in err,
            "a point the model refuses: named", err)
    d = llmem.json("--model", LLAMA_32_1B, "--batch", "1,2", "--batch", "4")
    t.check("grid" not in d and d["batch"] == 4, "the last --batch counts")
    # With a capacity, no point fitting is a no: the grid, exit 3 and one line;
    # one point fitting is an answer (exit 0), as is a grid with no capacity.
    big = ["estimate", "--model", LLAMA_32_1B, "--batch", "16,32", "--seq", "4096,8192"]
    rc, d, err = llmem.answer(*big, "--gpu", "A100-40GB", "--json")
    t.check(rc == 3 and len(d["grid"]) == 4 and not any(p["fits"] for p in d["grid"]) and
            err.startswith("llmem: no point of the grid fits: the smallest device peak, ") and
            err.endswith(" is above 37.42 GiB (A100-40GB's 39.39 GiB usable less 5%)\n"),
            "a grid of which no point fits --gpu: exit 3", (rc, err))
    rc, out, err = llmem.answer(*big, "--capacity", "10GiB")
    t.check(rc == 3 and out.count("GiB ") >= 4 and "*" not in out.split("* fits")[1] and
            "(--capacity 10.00 GiB less 5%)" in err, "the same with --capacity, as text: exit 3",
            (rc, out, err))
    rc, d, err = llmem.answer("estimate", "--model", LLAMA_32_1B, "--batch", "1,32",
                              "--seq", "512,8192", "--gpu", "A100-40GB", "--json")
    t.check(rc == 0 and [p["fits"] for p in d["grid"]] == [True, False, False, False] and
            err == "", "some point fits: exit 0", (rc, err))
    t.check(llmem.answer(*big)[0] == 0, "no capacity asked: exit 0")


def check_plan(t, llmem):
    rc, out, err = llmem.run("plan", "--model", LLAMA_32_1B, "--gpus", "4", "--capacity", "24GiB",
                             "--seq", "1024", "--attention", "flash", "--json", "--top", "5")
    t.check(rc == 0, "plan runs", err)
    d = json.loads(out)
    t.check(0 < len(d["layouts"]) <= 5 and d["layouts_fitting"] >= len(d["layouts"]),
            "the best layouts", d["layouts_fitting"])
    for p in d["layouts"]:
        gpus = p["dp"] * p["tp"] * p["pp"] * p["cp"]
        t.check(gpus == 4 and p["peak_device_bytes"] <= 24 * GIB, "a layout of 4 GPUs that fits", p)
        flags = ["--model", LLAMA_32_1B, "--seq", "1024", "--attention", "flash", "--batch",
                 str(p["micro_batch"]), "--grad-ckpt", p["grad_ckpt"], "--micro-batches",
                 str(p["micro_batches"])]
        for key in ("dp", "tp", "pp", "cp", "ep", "sp"):
            flags += ["--" + key, str(p[key])]
        flags += ["--sharding", p["sharding"], "--offload", p["offload"]]
        e = llmem.json(*flags)
        t.check(e["peak_device_bytes"] == p["peak_device_bytes"],
                "the plan's peak is the estimate's", (e["peak_device_bytes"], p))
    tokens = [p["tokens_per_second"] for p in d["layouts"]]
    t.check(tokens == sorted(tokens, reverse=True), "best first", tokens)
    # The engines shard over dp x cp ranks: with dp 1 and cp 4 they are tried,
    # and offload only where an engine offloads (no rejection of the planner's own making).
    rc, out, err = llmem.run("plan", "--model", LLAMA_32_1B, "--gpus", "4", "--capacity", "80GiB",
                             "--seq", "8192", "--attention", "flash", "--allow-offload", "1",
                             "--top", "100000", "--json")
    dcp = json.loads(out)
    t.check(rc == 0 and any(p["dp"] == 1 and p["cp"] == 4 and p["sharding"] == "fsdp-full"
                            for p in dcp["layouts"]), "cp 4 with fsdp-full over its ranks", err)
    t.check(not any("offload" in r["reason"] for r in dcp["rejected"]),
            "no engine/offload pairs the planner made up", dcp["rejected"])
    # A row at the largest micro-batch tried is marked: a larger one may fit.
    t.check(all(p["micro_batch_capped"] == (p["micro_batch"] == 64) for p in d["layouts"]),
            "micro_batch_capped: at --max-micro-batch's 64", d["layouts"])
    small = ["plan", "--model", LLAMA_32_1B, "--gpus", "2", "--capacity", "80GiB", "--seq", "64",
             "--max-micro-batch", "2"]
    rc, out, err = llmem.run(*small, "--json")
    d = json.loads(out)
    t.check(rc == 0 and d["layouts"] and all(p["micro_batch"] == 2 and p["micro_batch_capped"]
                                             for p in d["layouts"]),
            "every row at a cap of 2", d["layouts"])
    rc, out, err = llmem.run(*small)
    t.check(rc == 0 and " 2*x" in out and "* the largest micro-batch tried (--max-micro-batch 2)"
            in out, "the text marks the capped rows", out)
    rc, out, err = llmem.run(*small, "--global-batch", "4", "--json")
    d = json.loads(out)
    t.check(rc == 0 and d["layouts"] and not any(p["micro_batch_capped"] for p in d["layouts"]),
            "a global batch fixes the candidates: nothing capped", d["layouts"])
    rc, out, err = llmem.run("plan", "--model", LLAMA_32_1B, "--gpus", "4")
    t.check(rc == 2 and "--capacity" in err, "plan needs a capacity", err)
    # Nothing fits: the answer (why each was rejected), and exit 3 with one line.
    rc, out, err = llmem.run("plan", "--model", LLAMA_32_1B, "--gpus", "2", "--capacity", "1GiB")
    t.check(rc == 3 and "0 layouts fit" in out and "does not fit" in out and
            err == "llmem: no layout of 2 GPUs fits 973 MiB (--capacity 1.00 GiB less 5%): the "
            "output lists why (Rejected)\n", "nothing fits: why, and exit 3", (rc, out, err))
    rc, d, err = llmem.answer("plan", "--model", LLAMA_32_1B, "--gpus", "2", "--capacity", "1GiB",
                              "--json")
    t.check(rc == 3 and d["layouts"] == [] and d["layouts_fitting"] == 0 and d["rejected"] and
            err.count("\n") == 1, "nothing fits, --json: the answer, and exit 3", (rc, err))
    rc, out, err = llmem.run("estimate", "--gpus", "2")
    t.check(rc == 2 and "not a flag of `llmem estimate`" in err, "plan's flags are plan's", err)
    check_plan_table(t, llmem)
    check_plan_rejections(t, llmem)
    check_plan_nodes(t, llmem)


PLAN_HEADINGS = ("dp", "tp", "pp", "cp", "ep", "sp", "sharding", "offload", "ckpt", "mb x m",
                 "device peak", "headroom", "bubble", "tokens/s")


def table_aligned(out):
    """Whether every row of plan's table starts each cell where its heading
    starts, after a space (a cell wider than its column shifts the rest)."""
    lines = out.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("  dp "))
    starts, pos = [], 0
    for heading in PLAN_HEADINGS:
        pos = lines[header].index(heading, pos)
        starts.append(pos)
    rows = []
    for line in lines[header + 1:]:
        if not line:
            break
        rows.append(line)
    return bool(rows) and all(len(row) > starts[-1] and
                              all(row[s - 1] == " " and row[s] != " " for s in starts)
                              for row in rows)


def check_plan_table(t, llmem):
    """The text table's columns hold every value: dp of six digits (131,072
    GPUs), an offload of 'optimizer' and peaks over 1,000 GiB."""
    for args in (["--model", "openai-community/gpt2", "--gpus", "131072", "--capacity", "80GiB",
                  "--seq", "512", "--top", "5"],
                 ["--model", LLAMA_32_1B, "--gpus", "8", "--capacity", "80GiB", "--seq", "4096",
                  "--allow-offload", "1", "--top", "100000"],
                 ["--model", LLAMA_32_1B, "--gpus", "2", "--capacity", "2000GiB",
                  "--max-micro-batch", "1024", "--global-batch", "2048"]):
        rc, out, err = llmem.run("plan", *args)
        t.check(rc == 0 and table_aligned(out), "plan %s: the columns line up" % " ".join(args),
                out[:1500])


def check_plan_rejections(t, llmem):
    """Every rejection carries an example; 'does not fit at micro-batch 1' its
    layout and the bytes micro-batch 1 needs (it had an empty one)."""
    rc, d, err = llmem.answer("plan", "--model", LLAMA_32_1B, "--gpus", "4", "--capacity", "1GiB",
                              "--json")
    fit = [r for r in d["rejected"] if r["reason"] == "does not fit at micro-batch 1"]
    t.check(rc == 3 and fit and all(r["example"] for r in d["rejected"]),
            "every rejection has an example", d["rejected"])
    m = re.match(r"dp (\d+) tp (\d+) pp (\d+) cp (\d+) ep (\d+) sp (\d+), sharding (\S+), "
                 r"offload (\S+), grad-ckpt (\S+): micro-batch 1 needs (?:[\d.]+ [GM]iB \()?(\d+) "
                 r"bytes\)? at the device level, above the (?:[\d.]+ [GM]iB \()?(\d+) bytes\)? "
                 r"budget \(the usable memory less the margin\)$", fit[0]["example"] if fit else "")
    t.check(m is not None, "the example names the layout and its bytes", fit)
    if m:
        dp, tp, pp, cp, ep, sp, sharding, offload, ckpt, need, budget = m.groups()
        e = llmem.json("--model", LLAMA_32_1B, "--batch", "1", "--dp", dp, "--tp", tp, "--pp", pp,
                       "--cp", cp, "--ep", ep, "--sp", sp, "--sharding", sharding, "--offload",
                       offload, "--grad-ckpt", ckpt, "--micro-batches",
                       str(2 * int(pp) if int(pp) > 1 else 1))
        t.check(e["peak_device_bytes"] == int(need) > int(budget) == GIB * 950 // 1000,
                "the example's bytes are that layout's at micro-batch 1", (e["peak_device_bytes"],
                                                                          fit[0]))
        # It is the closest layout: no other of the search needs less.
        others = [["--dp", "4"], ["--dp", "4", "--sharding", "zero3", "--grad-ckpt", "full"],
                  ["--tp", "4", "--grad-ckpt", "full"], ["--dp", "2", "--tp", "2"]]
        needs = [llmem.json("--model", LLAMA_32_1B, "--batch", "1", *o)["peak_device_bytes"]
                 for o in others]
        t.check(all(n >= int(need) for n in needs),
                "the example is the layout that comes closest", (need, needs, fit[0]))
    rc, out, err = llmem.answer("plan", "--model", LLAMA_32_1B, "--gpus", "4", "--capacity",
                                "80GiB", "--global-batch", "6")
    t.check(rc == 0 and "the global batch does not split over dp: global-batch 6 is not a "
            "multiple of dp 4" in out, "the global batch's rejection: its example", out[-800:])
    rc, out, err = llmem.answer("plan", "--model", "openai-community/gpt2", "--gpus", "2",
                                "--capacity", "3.5GiB", "--seq", "512")
    t.check(rc == 0 and "\n  1 layout: does not fit at micro-batch 1: dp " in out,
            "one layout rejected: in the singular", out[-800:])
    # The value is the budget (budget_bytes: the usable memory less the margin), as the
    # README names it; usable has no margin.
    t.check(" budget (the usable memory less the margin)\n" in out and " usable (" not in out,
            "the table's rejection names the budget", out[-800:])


def check_plan_nodes(t, llmem):
    """gpus-per-node: a job larger than a node takes whole nodes (exit 2
    naming both); a tensor-parallel group stays within a node."""
    base = ["plan", "--model", "openai-community/gpt2", "--capacity", "80GiB", "--seq", "512"]
    rc, out, err = llmem.run(*base, "--gpus", "8", "--gpus-per-node", "3")
    t.check(rc == 2 and out == "" and err == "llmem: --gpus-per-node '3': 3 does not divide gpus "
            "8 (a job on more GPUs than a node holds takes whole nodes)\n",
            "8 GPUs over nodes of 3: refused", (rc, err))
    rc, d, err = llmem.answer(*base, "--gpus", "3", "--gpus-per-node", "8", "--json")
    t.check(rc == 0 and d["layouts_fitting"] > 0, "3 GPUs within a node of 8", err)
    rc, d, err = llmem.answer(*base, "--gpus", "12", "--gpus-per-node", "6", "--top", "100000",
                              "--json")
    tps = {p["tp"] for p in d["layouts"]}
    t.check(rc == 0 and tps == {1, 2}, "nodes of 6: tp 1 and 2 (4 would straddle two nodes)", tps)
    rc, d, err = llmem.answer(*base, "--gpus", "6", "--gpus-per-node", "6", "--top", "100000",
                              "--json")
    t.check(rc == 0 and {p["tp"] for p in d["layouts"]} == {1, 2},
            "one node of 6: tp up to what divides 6", {p["tp"] for p in d["layouts"]})
    # 0: no node boundary (as pack's 0), every GPU in one node: the answer of
    # a node at least --gpus, tp up to the GPUs (12 GPUs: 16 would not divide).
    rc, zero, err = llmem.answer(*base, "--gpus", "12", "--gpus-per-node", "0", "--top",
                                 "100000", "--json")
    one_node = llmem.answer(*base, "--gpus", "12", "--gpus-per-node", "12", "--top", "100000",
                            "--json")[1]
    t.check(rc == 0 and zero == one_node and {p["tp"] for p in zero["layouts"]} == {1, 2, 4},
            "--gpus-per-node 0: one node of every GPU", (rc, err))


def catalog(llmem):
    rc, out, err = llmem.run("gpus", "--json")
    if rc != 0:
        raise AssertionError("llmem gpus --json: %s" % err)
    return {g["name"]: g for g in json.loads(out)}


def check_gpu(t, llmem):
    """--gpu on estimate: the GPU's constants, its memory as the capacity, the verdict."""
    cat = catalog(llmem)
    base = ["--model", LLAMA_32_1B, "--method", "lora", "--seq", "1024"]
    none = llmem.json(*base)
    t.check("gpu" not in none, "without --gpu no gpu object", sorted(none))
    h100 = llmem.json(*base, "--gpu", "H100")
    g = h100.get("gpu", {})
    want = cat["H100-SXM"]
    t.check((g.get("name"), g.get("device_name"), g.get("arch")) ==
            ("H100-SXM", want["device_name"], "sm_90"), "the gpu object names the GPU", g)
    t.check((g["gpu_usable_bytes"], g["context_bytes"], g["workspace_bytes"]) ==
            (want["usable_bytes"], want["context_bytes"], want["workspace_bytes"]),
            "the gpu object holds the catalog's numbers", g)
    t.check((g["capacity_bytes"], g["capacity_source"], g["margin_permille"]) ==
            (want["usable_bytes"], "gpu", 50), "the capacity is the GPU's usable memory", g)
    t.check(g["usable_bytes"] == want["usable_bytes"] and
            g["margin_bytes"] == -(-g["usable_bytes"] * 50 // 1000) and
            g["budget_bytes"] == g["usable_bytes"] - g["margin_bytes"] and
            g["fits"] is True and g["headroom_bytes"] == g["budget_bytes"] - h100["peak_device_bytes"],
            "fits, headroom = usable - margin - device peak", g)
    t.check(all(h100[k] == none[k] for k in ("peak_allocated_bytes", "peak_reserved_bytes",
                                            "peak_device_bytes")) and
            none["peak_device_bytes"] - none["peak_reserved_bytes"] == 777 * (1 << 20),
            "no --gpu: the Hopper constants, byte for byte the H100's",
            (none["peak_device_bytes"], h100["peak_device_bytes"]))
    for every_key in set(none):
        if every_key not in h100:
            t.check(False, "--gpu keeps the key %s" % every_key)
    for name in ("A100-80GB", "RTX-4090", "MI300X"):
        d = llmem.json(*base, "--gpu", name)
        want = cat[name]
        t.check(d["peak_allocated_bytes"] == none["peak_allocated_bytes"] and
                d["peak_reserved_bytes"] - none["peak_reserved_bytes"] ==
                2 * (want["workspace_bytes"] - 32 * (1 << 20)) and
                d["peak_device_bytes"] - d["peak_reserved_bytes"] == want["context_bytes"],
                "--gpu %s: its workspace and context" % name,
                (d["peak_reserved_bytes"], none["peak_reserved_bytes"]))
    d = llmem.json(*base, "--gpu", "NVIDIA A100-SXM4-80GB")
    t.check(d["gpu"]["name"] == "A100-80GB", "the driver's name finds the GPU", d["gpu"]["name"])

    # --capacity wins, and the text says so. It does not fit: the whole answer,
    # exit 3 and one line on stderr.
    rc, d, err = llmem.answer("estimate", *base, "--gpu", "H100", "--capacity", "8GiB", "--json")
    t.check((d["gpu"]["capacity_bytes"], d["gpu"]["capacity_source"], d["gpu"]["fits"]) ==
            (8 * GIB, "capacity", False) and
            d["gpu"]["usable_bytes"] == 8 * GIB and d["gpu"]["gpu_usable_bytes"] > 8 * GIB and
            d["gpu"]["headroom_bytes"] == d["gpu"]["budget_bytes"] - d["peak_device_bytes"] < 0,
            "--capacity wins over the GPU's memory; does not fit: negative headroom", d["gpu"])
    t.check(rc == 3 and set(d) == set(h100) and d["peak_device_bytes"] == h100["peak_device_bytes"]
            and err.startswith("llmem: does not fit: device peak ") and
            err.endswith(", above 7.60 GiB (--capacity 8.00 GiB less 5%)\n"),
            "does not fit, --json: every key, exit 3, one line saying why", (rc, err))
    rc, out, err = llmem.run("estimate", *base, "--gpu", "H100", "--capacity", "8GiB")
    t.check(rc == 3 and "--capacity, not the GPU's 79.18 GiB" in out and "Fits          no: " in out
            and "short by" in out and "\nPeak\n" in out and "  phase  " in out and
            err.count("\n") == 1,
            "the text: --capacity used, does not fit, short by; the whole table, exit 3",
            (rc, out, err))
    # The scheduler's case: the question asked of --gpu itself.
    big = ["--model", LLAMA_32_1B, "--batch", "64", "--seq", "4096"]
    rc, d, err = llmem.answer("estimate", *big, "--gpu", "A100-40GB", "--json")
    t.check(rc == 3 and d["gpu"]["fits"] is False and
            "above 37.42 GiB (A100-40GB's 39.39 GiB usable less 5%)" in err,
            "--gpu A100-40GB, batch 64 x seq 4096: does not fit, exit 3", (rc, err))
    rc, out, err = llmem.run("estimate", *big)
    t.check(rc == 0 and err == "", "the same without --gpu: no capacity asked, exit 0", (rc, err))
    t.check(llmem.answer("estimate", *base, "--gpu", "H100")[0] == 0, "fits: exit 0")
    rc, out, err = llmem.run("estimate", *base, "--gpu", "H100")
    t.check(rc == 0 and "GPU           H100-SXM (NVIDIA H100 80GB HBM3, sm_90): 79.18 GiB usable, "
            "CUDA context 777.00 MiB, cuBLAS workspaces 2 x 32.00 MiB" in out and
            "Fits          yes: device peak" in out and "79.18 GiB usable less 5% kept free "
            "(75.22 GiB)" in out and "to spare" in out,
            "the text: the GPU line and the verdict", out)
    rc, out, err = llmem.run("estimate", "--gpu", "A100-40GB")
    t.check(rc == 0 and "the defaults: transformers" in out,
            "--gpu is no training flag: the defaults note stays", out)

    # The margin: a capacity just above the peak fits with --margin 0 only.
    capacity = none["peak_device_bytes"] * 101 // 100
    rc, d, err = llmem.answer("estimate", *base, "--gpu", "H100", "--capacity", str(capacity),
                              "--json")
    g = d["gpu"]
    t.check(rc == 3 and g["fits"] is False and
            g["headroom_bytes"] == g["budget_bytes"] - d["peak_device_bytes"] < 0 <
            g["usable_bytes"] - d["peak_device_bytes"],
            "inside the 5% margin: does not fit (exit 3), headroom below the budget negative", g)
    rc, out, err = llmem.run("estimate", *base, "--gpu", "H100", "--capacity", str(capacity))
    t.check(rc == 3 and "less 5% kept free" in out and "short by" in out,
            "the text says it is short of the budget", out)
    d = llmem.json(*base, "--gpu", "H100", "--capacity", str(capacity), "--margin", "0")
    t.check(d["gpu"]["fits"] is True and d["gpu"]["margin_permille"] == 0,
            "--margin 0: it fits", d["gpu"])

    # The example: a 70B model sharded over 8 H100s; the exit status
    # follows the verdict.
    rc, d, err = llmem.answer("estimate", "--model", "Llama-3.1-70B", "--gpu", "H100-80GB", "--dp",
                              "8", "--fsdp", "full", "--grad-ckpt", "full", "--batch", "2",
                              "--seq", "4096", "--json")
    t.check(d["gpu"]["fits"] == (d["peak_device_bytes"] <= d["gpu"]["usable_bytes"] * 950 // 1000)
            and d["gpu"]["headroom_bytes"] == d["gpu"]["budget_bytes"] - d["peak_device_bytes"]
            and rc == (0 if d["gpu"]["fits"] else 3),
            "a layout: the verdict is on the most loaded rank", (rc, d["gpu"]))

    # --max takes the GPU's memory; the same as --capacity with those bytes.
    d = llmem.json(*base, "--gpu", "A100-40GB", "--max", "batch")
    usable = cat["A100-40GB"]["usable_bytes"]
    e = llmem.json(*base, "--gpu", "A100-40GB", "--max", "batch", "--capacity", str(usable))
    t.check(d["max"]["capacity_bytes"] == usable and d["max"]["value"] == e["max"]["value"] > 1,
            "--max with --gpu: the GPU's usable memory", (d["max"], e["max"]))
    rc, more, err = llmem.answer("estimate", *base, "--gpu", "A100-40GB", "--batch",
                                 str(d["max"]["value"] + 1), "--json")
    t.check(d["peak_device_bytes"] <= d["max"]["budget_bytes"] < more["peak_device_bytes"] and
            rc == 3 and more["gpu"]["fits"] is False,
            "--max with --gpu: one more does not fit (exit 3)", (rc, err))
    rc, out, err = llmem.run("estimate", "--model", LLAMA_32_1B, "--max", "batch")
    t.check(rc == 2 and "--capacity" in err and "--gpu" in err, "--max needs one of them", err)

    # --svg draws the GPU's memory as --capacity would.
    work = tempfile.mkdtemp(prefix="llmem-gpu-svg-")
    a, b = os.path.join(work, "gpu.svg"), os.path.join(work, "capacity.svg")
    llmem.run("estimate", *base, "--gpu", "A100-40GB", "--svg", a)
    llmem.run("estimate", *base, "--gpu", "A100-40GB", "--capacity", str(usable), "--svg", b)
    with open(a) as fa, open(b) as fb:
        t.check(fa.read() == fb.read(), "--svg: the GPU's capacity line")

    rc, out, err = llmem.run("help")
    t.check("--gpu NAME" in out and "(default: none)" in out, "the usage lists --gpu", out)
    for bad, needle in (("bogus", "see `llmem gpus`"), ("A100", "A100-40GB, A100-80GB")):
        rc, out, err = llmem.run("estimate", "--gpu", bad)
        t.check(rc == 2 and out == "" and ("--gpu '%s'" % bad) in err and needle in err,
                "--gpu %s: a usage error naming the flag and value" % bad, err)


def check_plan_gpu(t, llmem):
    """--gpu on plan: the GPU's memory as the capacity, its constants in every layout."""
    cat = catalog(llmem)
    args = ["plan", "--model", LLAMA_32_1B, "--gpus", "4", "--seq", "1024", "--top", "1000",
            "--json"]
    rc, out, err = llmem.run(*args, "--gpu", "A100-40GB")
    t.check(rc == 0, "plan --gpu runs", err)
    d = json.loads(out)
    usable = cat["A100-40GB"]["usable_bytes"]
    g = d.get("gpu", {})
    t.check(g.get("name") == "A100-40GB" and g.get("capacity_bytes") == usable and
            g.get("capacity_source") == "gpu" and g.get("fits") is True,
            "the gpu object: the GPU's memory, fits", g)
    best = d["layouts"][0]
    t.check(g["headroom_bytes"] == g["budget_bytes"] - best["peak_device_bytes"] ==
            best["headroom_bytes"] and g["budget_bytes"] == usable - g["margin_bytes"],
            "headroom: the best layout's, below the margin as the layouts'", (g, best))
    t.check(all(p["peak_device_bytes"] <= usable * 950 // 1000 for p in d["layouts"]),
            "every layout within the GPU less the margin")
    flags = ["--model", LLAMA_32_1B, "--seq", "1024", "--batch", str(best["micro_batch"]),
             "--grad-ckpt", best["grad_ckpt"], "--micro-batches", str(best["micro_batches"]),
             "--sharding", best["sharding"], "--offload", best["offload"]]
    for key in ("dp", "tp", "pp", "cp", "ep", "sp"):
        flags += ["--" + key, str(best[key])]
    e = llmem.json(*flags, "--gpu", "A100-40GB")
    t.check(e["peak_device_bytes"] == best["peak_device_bytes"],
            "the plan's peak is the estimate's on that GPU", (e["peak_device_bytes"], best))
    # The same bytes as --capacity without --gpu: the Hopper constants, larger peaks.
    rc, out, err = llmem.run(*args, "--capacity", str(usable))
    c = json.loads(out)
    t.check(c["gpu"]["name"] is None and c["gpu"]["capacity_source"] == "capacity" and
            c["gpu"]["usable_bytes"] == usable and set(c) == set(d) and
            set(c["gpu"]) == set(d["gpu"]), "without --gpu: the same keys, no GPU named", c["gpu"])
    same = [p for p in c["layouts"] if {k: p[k] for k in ("dp", "tp", "pp", "sharding", "grad_ckpt",
                                                          "micro_batch")} ==
            {k: best[k] for k in ("dp", "tp", "pp", "sharding", "grad_ckpt", "micro_batch")}]
    t.check(same and same[0]["peak_device_bytes"] - best["peak_device_bytes"] ==
            2 * (32 * (1 << 20) - 8519680) + (777 - 287) * (1 << 20),
            "the A100's workspaces and context in the plan's peaks", same[:1])
    # --capacity wins; the text says it.
    rc, out, err = llmem.run(*args, "--gpu", "A100-40GB", "--capacity", "20GiB")
    g = json.loads(out)["gpu"]
    t.check((g["capacity_bytes"], g["capacity_source"]) == (20 * GIB, "capacity") and
            all(p["peak_device_bytes"] <= 20 * GIB for p in json.loads(out)["layouts"]),
            "plan: --capacity wins", g)
    rc, out, err = llmem.run("plan", "--model", LLAMA_32_1B, "--gpus", "4", "--gpu", "A100-40GB")
    t.check(rc == 0 and "GPU           A100-40GB" in out and "Fits          yes: the best layout's"
            in out and "less 5% kept free" in out and "layouts fit" in out,
            "plan text: the GPU and the verdict", out)
    # Nothing fits: said, the headroom is null, and exit 3.
    rc, d, err = llmem.answer("plan", "--model", "Llama-3.1-70B", "--gpus", "2", "--gpu", "T4",
                              "--json")
    g = d["gpu"]
    t.check(rc == 3 and g["fits"] is False and g["headroom_bytes"] is None and
            d["layouts_fitting"] == 0 and
            err == "llmem: no layout of 2 GPUs fits 14.02 GiB (T4's 14.76 GiB usable less 5%): "
            "the output lists why (Rejected)\n",
            "plan: nothing fits: fits false, no headroom, exit 3", (rc, g, err))
    rc, out, err = llmem.run("plan", "--model", "Llama-3.1-70B", "--gpus", "1", "--gpu", "T4")
    t.check(rc == 3 and "Fits          no: no layout fits" in out and "Rejected:" in out and
            "no layout of 1 GPU fits" in err, "plan text: nothing fits, exit 3", (rc, out, err))
    rc, out, err = llmem.run("plan", "--model", LLAMA_32_1B, "--gpus", "4")
    t.check(rc == 2 and "--gpu" in err and "--capacity" in err, "plan needs --gpu or --capacity",
            err)
    # Sizes below a MiB in a smaller unit: a nonzero count never reads 0 ("0 MiB").
    rc, out, err = llmem.answer("plan", "--model", "openai-community/gpt2", "--gpus", "2",
                                "--gpu", "A100-40GB", "--capacity", "1000")
    t.check(rc == 3 and "Fits          no: no layout fits 1000 B (--capacity, not the GPU's "
            "39.39 GiB)" in out and "fits 950 B (--capacity 1000 B less 5%)" in err and
            not re.search(r"(?<![\d.])0(\.0+)? [KMG]i?B", out + err),
            "plan --capacity 1000: bytes, not 0 MiB", (out[:400], err))
    rc, out, err = llmem.answer("estimate", "--model", "openai-community/gpt2", "--gpu",
                                "A100-40GB", "--capacity", str(3 * (1 << 20) // 2))
    t.check(rc == 3 and "of 1.50 MiB (--capacity, not the GPU's 39.39 GiB)" in out and
            "above 1.42 MiB (--capacity 1.50 MiB less 5%)" in err,
            "estimate --capacity 1.5 MiB: three digits, not 2 MiB", err)
    # The example.
    rc, out, err = llmem.run("plan", "--model", "Llama-3.1-405B", "--gpu", "H100-80GB", "--gpus",
                             "1024", "--seq", "8192", "--json")
    d = json.loads(out) if rc == 0 else {}
    t.check(rc == 0 and d["layouts_fitting"] > 0 and d["gpu"]["name"] == "H100-SXM",
            "405B on 1,024 H100s: layouts fit", err)


def budget_consistent(v, peak):
    """One meaning per key: usable (no margin), margin (ceil of usable x
    permille / 1000), budget = usable - margin, headroom = budget - peak,
    fits == (headroom >= 0). v is a gpu or max object; peak the device peak."""
    usable, permille = v["usable_bytes"], v.get("margin_permille", 50)
    return (v["margin_bytes"] == -(-usable * permille // 1000) and
            v["budget_bytes"] == usable - v["margin_bytes"] == usable * (1000 - permille) // 1000 and
            v["headroom_bytes"] == v["budget_bytes"] - peak and
            v["fits"] == (v["headroom_bytes"] >= 0))


def check_budget(t, llmem):
    """--capacity alone is a fit check (D3); usable, margin, budget and headroom
    mean the same in every output (D4); --max says what bounded it (D7)."""
    # --capacity alone: the verdict and exit status --gpu gives, no GPU named.
    base = ["--model", LLAMA_32_1B, "--method", "lora", "--seq", "1024"]
    rc, d, err = llmem.answer("estimate", *base, "--capacity", "40GiB", "--json")
    g = d.get("gpu", {})
    t.check(rc == 0 and err == "" and g.get("fits") is True and g.get("name") is None and
            g.get("capacity_source") == "capacity" and g.get("usable_bytes") == 40 * GIB,
            "--capacity alone: fits, the gpu verdict, exit 0", (rc, g, err))
    rc, d, err = llmem.answer("estimate", *base, "--capacity", "2GiB", "--json")
    g = d.get("gpu", {})
    t.check(rc == 3 and g.get("fits") is False and g.get("headroom_bytes", 0) < 0 and
            err == "llmem: does not fit: device peak %s, above 1.90 GiB (--capacity 2.00 GiB "
            "less 5%%)\n" % re.search(r"peak ([\d.]+ GiB)", err).group(1),
            "--capacity alone: does not fit, exit 3, one line", (rc, g, err))
    rc, out, err = llmem.answer("estimate", *base, "--capacity", "2GiB")
    t.check(rc == 3 and "GPU    " not in out and
            re.search(r"^Fits +no: device peak .* of 2\.00 GiB \(--capacity\) less 5% kept free "
                      r"\(1\.90 GiB\), short by ", out, re.M),
            "--capacity alone, text: the Fits line, no GPU line", out[:1200])
    rc, out, err = llmem.answer("estimate", *base, "--capacity", "40GiB")
    t.check(rc == 0 and re.search(r"^Fits +yes: device peak .* to spare", out, re.M),
            "--capacity alone, text: fits", out[:1200])

    # The same keys, the same meaning, in a single estimate, --max, a grid and
    # plan, fitting or not.
    big = ["--model", "meta-llama/Llama-3.1-8B"]
    for args in ([*base, "--gpu", "H100"], [*base, "--capacity", "40GiB", "--margin", "7.3"],
                 [*base, "--gpu", "T4", "--capacity", "1000000001"], [*big, "--gpu", "T4"],
                 [*big, "--capacity", "79GiB"]):
        rc, d, err = llmem.answer("estimate", *args, "--json")
        t.check(budget_consistent(d["gpu"], d["peak_device_bytes"]) and
                rc == (0 if d["gpu"]["fits"] else 3),
                "estimate %s: budget = usable - margin, headroom = budget - peak" % " ".join(args),
                d["gpu"])
    for args in ([*big, "--method", "qlora", "--batch", "4", "--gpu", "A100-40GB", "--max", "seq"],
                 [*base, "--capacity", "24GiB", "--max", "batch", "--margin", "12.5"],
                 [*big, "--gpu", "T4", "--max", "batch"]):
        rc, d, err = llmem.answer("estimate", *args, "--json")
        m = dict(d["max"], margin_permille=d["gpu"]["margin_permille"])
        t.check(budget_consistent(m, d["peak_device_bytes"]) and
                budget_consistent(d["gpu"], d["peak_device_bytes"]) and
                all(m[k] == d["gpu"][k] for k in ("usable_bytes", "margin_bytes", "budget_bytes",
                                                  "headroom_bytes", "fits")) and
                rc == (0 if m["fits"] else 3),
                "--max %s: the max object and the gpu object agree" % " ".join(args), (m, d["gpu"]))
    for args in ([*base, "--batch", "1,2,64", "--seq", "1024,8192", "--gpu", "H100"],
                 [*base, "--batch", "1,4", "--capacity", "3GiB", "--margin", "2"],
                 [*big, "--batch", "1,2", "--seq", "1024,2048", "--gpu", "H100"]):
        rc, d, err = llmem.answer("estimate", *args, "--json")
        g = d.get("gpu")
        least = min(p["peak_device_bytes"] for p in d["grid"])
        t.check(g is not None and "usable_bytes" not in d and budget_consistent(g, least) and
                all(p["headroom_bytes"] == g["budget_bytes"] - p["peak_device_bytes"] and
                    p["fits"] == (p["headroom_bytes"] >= 0) for p in d["grid"]) and
                g["fits"] == any(p["fits"] for p in d["grid"]) and
                rc == (0 if g["fits"] else 3),
                "grid %s: the gpu object, each point's headroom below the budget" % " ".join(args),
                (g, d["grid"]))
    for args in (["--gpu", "H100", "--gpus", "8", "--seq", "4096"],
                 ["--capacity", "60GiB", "--gpus", "4", "--margin", "10"]):
        rc, d, err = llmem.answer("plan", *big, *args, "--json")
        g = d["gpu"]
        t.check(budget_consistent(g, d["layouts"][0]["peak_device_bytes"]) and
                all(p["headroom_bytes"] == g["budget_bytes"] - p["peak_device_bytes"]
                    for p in d["layouts"]),
                "plan %s: the gpu object and every layout, headroom below the budget"
                % " ".join(args), (g, d["layouts"][:1]))
        rc, out, err = llmem.answer("plan", *big, *args)
        spare = re.search(r"^Fits .*, ([\d.]+ [KMG]iB) \([\d.]+%\) to spare", out, re.M)
        row = out.split("bubble")[1].splitlines()[1] if "bubble" in out else ""
        t.check(spare is not None and (spare.group(1) + " (") in row,
                "plan %s text: to spare is the best layout's headroom" % " ".join(args),
                out[:1500])

    rc, d, err = llmem.answer("plan", *big, "--capacity", "30GiB", "--gpus", "4", "--json")
    g = d["gpu"]
    t.check(rc == 3 and g["fits"] is False and g["headroom_bytes"] is None and
            g["budget_bytes"] == g["usable_bytes"] - g["margin_bytes"] == 30 * GIB * 95 // 100,
            "plan: nothing fits, the budget still said, no headroom", g)

    # What bounded --max: GPT-2's 1024 learned positions, not memory.
    rc, d, err = llmem.answer("estimate", "--model", "gpt2", "--max", "seq", "--gpu", "H100",
                              "--json")
    t.check(rc == 0 and d["max"]["value"] == 1024 and d["max"]["limited_by"] == "max_positions",
            "--max seq on gpt2: limited by its max positions", d["max"])
    rc, out, err = llmem.answer("estimate", "--model", "gpt2", "--max", "seq", "--gpu", "H100")
    t.check(re.search(r"^Max .*: 1024 \(the model's max positions; memory allows more\), ", out,
                      re.M), "the text says so", out[:1500])
    rc, d, err = llmem.answer("estimate", *base[:4], "--max", "seq", "--capacity", "9GiB",
                              "--json")
    t.check(d["max"]["limited_by"] == "memory" and d["max"]["value"] > 0 and
            llmem.answer("estimate", *base[:4], "--seq", str(d["max"]["value"] + 1),
                         "--capacity", "9GiB", "--json")[0] == 3,
            "--max seq on a rotary model: limited by memory, one more does not fit", d["max"])
    rc, d, err = llmem.answer("estimate", "--model", "gpt2", "--seq", "64", "--max", "batch",
                              "--capacity", "40GiB", "--json")
    t.check(d["max"]["limited_by"] == "memory" and 1 < d["max"]["value"] < 1 << 24,
            "--max batch: limited by memory", d["max"])
    rc, d, err = llmem.answer("estimate", "--model", "gpt2", "--seq", "1", "--max", "batch",
                              "--capacity", "1024TiB", "--json")
    t.check(d["max"]["value"] == 1 << 24 and d["max"]["limited_by"] == "field_max",
            "--max batch on 1 PiB: the largest batch the library takes", d["max"])
    rc, out, err = llmem.answer("estimate", "--model", "gpt2", "--seq", "1", "--max", "batch",
                                "--capacity", "1024TiB")
    t.check("16777216 (the largest batch the library takes; memory allows more)" in out,
            "the text says so", out[:1500])
    rc, d, err = llmem.answer("estimate", *big, "--gpu", "T4", "--max", "batch", "--json")
    t.check(rc == 3 and d["max"]["limited_by"] == "memory" and d["max"]["fits"] is False,
            "nothing fits: limited by memory", d["max"])


GROUPS = {
    "timeline": check_timeline,
    "svg": check_svg,
    "layout": check_layout,
    "max": check_max,
    "grid": check_grid,
    "plan": check_plan,
    "gpu": check_gpu,
    "plan-gpu": check_plan_gpu,
    "budget": check_budget,
}


def main(argv):
    if len(argv) != 3 or argv[2] not in GROUPS:
        sys.stderr.write("usage: %s LLMEM {%s}\n" % (argv[0], "|".join(sorted(GROUPS))))
        return 2
    t = Tap()
    try:
        GROUPS[argv[2]](t, Llmem(argv[1]))
    except Exception as e:  # a failed run or bad JSON is a failed check, not a crash
        t.check(False, "%s: %s: %s" % (argv[2], type(e).__name__, e))
    return t.finish()


if __name__ == "__main__":
    sys.exit(main(sys.argv))
