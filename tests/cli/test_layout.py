# SPDX-License-Identifier: MIT
"""Checks of `llmem` across GPUs and through the step: layouts, --max, plan,
and the timeline (--timeline, --svg). Same conventions as test_cli.py.

Usage: test_layout.py PATH/TO/llmem GROUP
"""
import json
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
    rc, out, err = llmem.run("estimate", "--model", LLAMA_32_1B, "--formula", "article", "--svg",
                             os.path.join(work, "none.svg"))
    t.check(rc == 1 and "timeline" in err, "the article's formula has no picture", err)


def check_layout(t, llmem):
    one = llmem.json("--model", LLAMA_32_1B)
    d = llmem.json("--model", LLAMA_32_1B, "--dp", "1")
    t.check(d["peak_allocated_bytes"] == one["peak_allocated_bytes"] and d["layout"]["gpus"] == 1,
            "a one-GPU layout is the single estimate")
    d = llmem.json("--model", LLAMA_32_1B, "--dp", "4", "--tp", "2", "--pp", "2", "--zero", "2",
                   "--micro-batches", "4")
    t.check(d["layout"]["gpus"] == 16 and d["layout"]["sharding"] == "zero2", "layout echoed",
            d["layout"])
    ranks = d["ranks"]
    t.check(len(ranks) == 2 and [r["stage"] for r in ranks] == [0, 1], "two stages", ranks)
    loaded = [r for r in ranks if r["most_loaded"]]
    t.check(len(loaded) == 1 and loaded[0]["peak_device_bytes"] == d["peak_device_bytes"],
            "the top-level keys are the most loaded rank's")
    t.check(sum(r["layers"] for r in ranks) == 16, "the stages split the 16 layers")
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
    t.check(best > 1 and d["batch"] == best and d["peak_device_bytes"] <= d["max"]["usable_bytes"],
            "--max batch fits", d["max"])
    more = llmem.json("--model", LLAMA_32_1B, "--method", "lora", "--seq", "1024", "--batch",
                      str(best + 1))
    t.check(more["peak_device_bytes"] > d["max"]["usable_bytes"], "one more does not")
    rc, out, err = llmem.run("estimate", "--model", LLAMA_32_1B, "--max", "batch")
    t.check(rc == 2 and "--capacity" in err, "--max needs --capacity", err)
    rc, out, err = llmem.run("estimate", "--model", LLAMA_32_1B, "--max", "batch", "--capacity",
                             "1GiB")
    t.check(rc == 1 and "even batch 1" in err, "nothing fits: said so", err)


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
    rc, out, err = llmem.run("plan", "--model", LLAMA_32_1B, "--gpus", "4")
    t.check(rc == 2 and "--capacity" in err, "plan needs a capacity", err)
    rc, out, err = llmem.run("plan", "--model", LLAMA_32_1B, "--gpus", "2", "--capacity", "1GiB")
    t.check(rc == 0 and "0 layouts fit" in out and "does not fit" in out, "nothing fits: why", out)
    rc, out, err = llmem.run("estimate", "--gpus", "2")
    t.check(rc == 2 and "not a flag of `llmem estimate`" in err, "plan's flags are plan's", err)


GROUPS = {
    "timeline": check_timeline,
    "svg": check_svg,
    "layout": check_layout,
    "max": check_max,
    "plan": check_plan,
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
