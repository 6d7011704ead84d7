# SPDX-License-Identifier: MIT
"""Checks of the `llmem` command, run as a user runs it.

Usage: test_cli.py PATH/TO/llmem GROUP

Each GROUP is one meson test and prints TAP. Standard library only, so it runs
with any python3. LLMEM_TEST_WRAPPER runs every llmem under a tool, e.g.
LLMEM_TEST_WRAPPER="valgrind -q --leak-check=full --error-exitcode=99".
The Hugging Face groups (config, config-errors, weights) read the configs in
tests/hf/configs and write small safetensors files with tests/hf/gen_safetensors.py.
"""
import csv
import json
import os
import re
import shlex
import shutil
import struct
import subprocess
import sys
import tempfile

LLAMA_32_1B = "meta-llama/Llama-3.2-1B"
LLAMA_32_1B_PARAMS = 1235814400  # published count (tests/data/published_params.csv)
TERMS = ("parameters", "optimizer", "data", "temporary")
PHASES = ("forward", "loss-backward", "backward", "optimizer")
# A Llama-2-7B-shaped custom model: 6,738,415,616 parameters.
SEVEN_B = ["--family", "llama", "--hidden", "4096", "--layers", "32", "--heads", "32",
           "--intermediate", "11008", "--vocab", "32000"]
HF_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "hf")
HF_CONFIGS = os.path.join(HF_DIR, "configs")
HF_CROSSCHECK = os.path.join(HF_DIR, "crosscheck")
GENERATOR = os.path.join(HF_DIR, "gen_safetensors.py")


class Tap:
    """TAP output: one line a check, the plan at the end."""

    def __init__(self):
        self.count = 0
        self.failed = 0

    def check(self, ok, what, detail=""):
        self.count += 1
        if not ok:
            self.failed += 1
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


class Llmem:
    def __init__(self, path):
        self.command = shlex.split(os.environ.get("LLMEM_TEST_WRAPPER", "")) + [path]

    def run(self, *args):
        proc = subprocess.run(self.command + list(args), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, universal_newlines=True, timeout=600)
        return proc.returncode, proc.stdout, proc.stderr

    def json(self, *args):
        """The JSON of `llmem estimate ARGS --json`; raises on failure."""
        rc, out, err = self.run("estimate", *(list(args) + ["--json"]))
        if rc != 0:
            raise AssertionError("llmem estimate %s --json: exit %d: %s"
                                 % (" ".join(args), rc, err.strip()))
        return json.loads(out)

    def answer(self, *args):
        """`llmem ARGS` whose answer is printed whether or not its check
        passes (exit 0 or 3): (exit status, stdout as JSON with --json or as
        text, stderr); raises on any other status."""
        rc, out, err = self.run(*args)
        if rc not in (0, 3):
            raise AssertionError("llmem %s: exit %d: %s" % (" ".join(args), rc, err.strip()))
        return rc, json.loads(out) if "--json" in args else out, err


def is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def check_json(t, llmem):
    """Keys, types and the relations between the numbers."""
    setups = [
        [],
        ["--model", "gpt2", "--batch", "4", "--seq", "1024"],
        ["--model", "Llama-3.2-1B", "--method", "lora", "--lora-targets", "q_proj,k_proj,v_proj,o_proj"],
        ["--model", "Qwen2.5-0.5B", "--method", "qlora", "--grad-ckpt", "full", "--attention", "flash"],
        ["--model", "Llama-3.2-1B", "--precision", "fp32", "--optimizer", "sgd"],
        ["--model", "gpt2-medium", "--method", "freeze", "--freeze-layers", "12", "--dropout", "0.1"],
        ["--model", "Llama-3.2-1B", "--optimizer", "adamw-8bit", "--loss", "chunked"],
    ]
    for args in setups:
        label = " ".join(args) or "(no flags)"
        d = llmem.json(*args)
        t.check(isinstance(d, dict), "%s: one JSON object" % label)
        for key in ("model", "precision", "optimizer", "method", "grad_ckpt", "attention",
                    "formula", "peak_phase", "model_source", "lora_targets", "loss"):
            t.check(isinstance(d.get(key), str), "%s: %s is a string" % (label, key), d.get(key))
        for key in ("params_total", "params_trainable", "params_active", "peak_allocated_bytes",
                    "peak_reserved_bytes", "peak_device_bytes", "batch", "seq", "lora_rank",
                    "freeze_layers", "grad_accum", "article_param_bytes"):
            t.check(is_int(d.get(key)), "%s: %s is an integer" % (label, key), d.get(key))
        # Unset, dropout is null (each site at the model's own, under
        # architecture), never the library's -1.
        t.check(isinstance(d.get("dropout"), float) if "--dropout" in args
                else "dropout" in d and d["dropout"] is None,
                "%s: dropout is a real when set, else null" % label, d.get("dropout"))
        t.check(isinstance(d.get("model_modified"), bool), "%s: model_modified is a bool" % label)
        for key in ("terms", "terms_max"):
            obj = d.get(key, {})
            t.check(sorted(obj) == sorted(TERMS) and all(is_int(v) for v in obj.values()),
                    "%s: %s has the four terms as integers" % (label, key), obj)
        comps = d.get("components", {})
        t.check(sorted(comps) == sorted(TERMS), "%s: components of the four terms" % label, comps)
        t.check(all(isinstance(c, dict) and c and all(is_int(v) for v in c.values())
                    for c in comps.values()),
                "%s: each term has integer components" % label, comps)
        phases = d.get("phases", {})
        t.check(sorted(phases) == sorted(PHASES) and all(is_int(v) for v in phases.values()),
                "%s: phases are the four phases, integers" % label, phases)
        arch = d.get("architecture", {})
        t.check(all(is_int(arch.get(k)) for k in ("hidden", "layers", "heads", "kv_heads",
                                                   "head_dim", "intermediate", "vocab")),
                "%s: architecture sizes are integers" % label, arch)

        alloc, res, dev = (d["peak_allocated_bytes"], d["peak_reserved_bytes"],
                           d["peak_device_bytes"])
        t.check(sum(d["terms"].values()) == alloc,
                "%s: the four terms sum to peak_allocated_bytes" % label,
                "%s != %d" % (d["terms"], alloc))
        t.check(res >= alloc, "%s: peak_reserved >= peak_allocated" % label, (res, alloc))
        t.check(dev >= res, "%s: peak_device >= peak_reserved" % label, (dev, res))
        t.check(d["peak_phase"] in PHASES, "%s: peak_phase names a phase" % label, d["peak_phase"])
        t.check(max(phases.values()) == alloc and phases.get(d["peak_phase"]) == alloc,
                "%s: the peak phase holds peak_allocated_bytes" % label, (phases, alloc))
        t.check(all(d["terms_max"][k] >= d["terms"][k] for k in TERMS),
                "%s: each term's max is at least its value at the peak" % label)
        t.check(d["params_trainable"] <= d["params_total"],
                "%s: trainable <= total parameters" % label)

    d = llmem.json("--model", "Qwen/Qwen2.5-0.5B", "--method", "lora", "--batch", "3")
    t.check((d["method"], d["batch"], d["seq"], d["precision"]) == ("lora", 3, 512, "bf16-mixed"),
            "the setup is echoed, defaults included", d)
    t.check(d["params_trainable"] < d["params_total"], "LoRA trains fewer parameters")


def check_params(t, llmem):
    for name in (LLAMA_32_1B, "Llama-3.2-1B"):
        d = llmem.json("--model", name)
        t.check(d["params_total"] == LLAMA_32_1B_PARAMS,
                "--model %s: params_total is %d" % (name, LLAMA_32_1B_PARAMS), d["params_total"])
        t.check(d["model"] == LLAMA_32_1B, "--model %s: model is the full id" % name, d["model"])
        t.check(d["model_source"] == "preset" and d["model_modified"] is False,
                "--model %s: an unmodified preset" % name)
    d = llmem.json("--model", LLAMA_32_1B, "--layers", "8")
    t.check(d["model_modified"] is True and d["architecture"]["layers"] == 8,
            "architecture flags override the preset's fields", d["architecture"])
    t.check(d["params_total"] < LLAMA_32_1B_PARAMS, "fewer layers, fewer parameters")
    d = llmem.json("--model", "gpt2", "--family", "llama")
    t.check(d["architecture"]["family"] == "llama" and d["architecture"]["hidden"] == 768,
            "--family with --model keeps the preset's sizes", d["architecture"])
    # --family is applied first wherever it stands, so a later field flag wins.
    d = llmem.json("--norm", "layernorm", "--formula", "article", *SEVEN_B)
    rc, out, err = llmem.run("estimate", "--norm", "layernorm", *SEVEN_B)
    t.check(rc == 1 and "--norm" in err and "--formula article" in err,
            "the phased estimate refuses a layout its code paths do not build", err)
    t.check(d["architecture"]["norm"] == "layernorm",
            "a field flag before --family is not reset by it", d["architecture"])
    d = llmem.json(*SEVEN_B)
    t.check(d["model"] == "custom" and d["model_source"] == "custom",
            "--family builds a custom model", d["model"])
    t.check(d["params_total"] == 6738415616, "the 7B-like custom model has 6,738,415,616 params",
            d["params_total"])


def check_defaults(t, llmem):
    rc, out, err = llmem.run("estimate")
    t.check(rc == 0 and err == "", "llmem estimate with no flags succeeds", err)
    t.check(LLAMA_32_1B in out, "it names the model it used", out)
    t.check("default" in out, "it says the model is the default", out)
    t.check("the defaults: transformers 5.x with PyTorch 2.11, bf16=True on fp32 weights" in out,
            "the Setup line says whose defaults these are", out)
    t.check("bf16-mixed: fp32 weights; a bf16 checkpoint in its own dtype (transformers 5.x) "
            "is --precision bf16-autocast" in out,
            "it says what bf16-mixed means and what a bf16 checkpoint trains as", out)
    rc, out, err = llmem.run("estimate", "--precision", "bf16")
    t.check(rc == 0 and "a bf16 checkpoint in its own dtype" not in out,
            "no such line under another precision", out)
    t.check("adamw (fused step)" in out and "attention sdpa" in out,
            "the table shows the fused step and SDPA", out)
    d = llmem.json()
    t.check(d["model"] == LLAMA_32_1B and d["model_source"] == "default",
            "--json alone: the default model, marked default", d["model"])
    t.check((d["batch"], d["seq"], d["precision"], d["optimizer"], d["method"]) ==
            (1, 512, "bf16-mixed", "adamw", "full"), "--json alone: the library's defaults")
    t.check((d["optimizer_impl"], d["attention"], d["grad_ckpt"], d["lora_dropout"]) ==
            ("fused", "sdpa", "none", 0), "--json alone: transformers 5.x's defaults",
            (d["optimizer_impl"], d["attention"], d["grad_ckpt"], d["lora_dropout"]))
    # The defaults, spelled out, give the same estimate (--lora-dropout only
    # with a LoRA method, which reads it).
    e = llmem.json("--attention", "sdpa", "--optimizer", "adamw_torch_fused",
                   "--grad-ckpt", "none")
    t.check(e["peak_allocated_bytes"] == d["peak_allocated_bytes"],
            "the defaults spelled out give the same peak", (e["peak_allocated_bytes"],
                                                            d["peak_allocated_bytes"]))
    lora = llmem.json("--method", "lora")
    spelled = llmem.json("--method", "lora", "--lora-dropout", "0")
    t.check(spelled["peak_allocated_bytes"] == lora["peak_allocated_bytes"],
            "LoRA's default dropout spelled out gives the same peak",
            (spelled["peak_allocated_bytes"], lora["peak_allocated_bytes"]))
    rc, out, err = llmem.run("estimate", "--batch", "2")
    t.check("the defaults:" not in out, "with a training flag the note is gone", out)
    # Dropout: each site at the model's own probability (the Trainer's train mode).
    t.check("dropout" in d and d["dropout"] is None,
            "--json alone: dropout null (each site at the model's own)", d.get("dropout"))
    gpt2 = llmem.json("--model", "gpt2")
    t.check((gpt2["architecture"]["attention_dropout"], gpt2["architecture"]["hidden_dropout"],
             gpt2["architecture"]["embedding_dropout"]) == (0.1, 0.1, 0.1),
            "GPT-2's attn_pdrop, resid_pdrop and embd_pdrop are echoed", gpt2["architecture"])
    for args, shown in ((["--dropout", "0.1"], 0.1), (["--dropout", "model"], None),
                        (["--dropout", "-1"], None)):
        e = llmem.json("--model", "gpt2", *args)
        t.check(e["peak_allocated_bytes"] == gpt2["peak_allocated_bytes"],
                "GPT-2's default dropout is %s's" % " ".join(args),
                (e["peak_allocated_bytes"], gpt2["peak_allocated_bytes"]))
        t.check(e["dropout"] == shown and (shown is not None or "dropout" in e),
                "%s: --json's dropout is %r" % (" ".join(args), shown), e.get("dropout"))
    grid = llmem.json("--model", "gpt2", "--batch", "1,2")
    t.check("dropout" in grid and grid["dropout"] is None, "a grid's JSON: dropout null too",
            grid.get("dropout"))
    off = llmem.json("--model", "gpt2", "--dropout", "0")
    t.check(off["dropout"] == 0 and off["peak_allocated_bytes"] < gpt2["peak_allocated_bytes"],
            "--dropout 0 turns GPT-2's dropouts off", off["peak_allocated_bytes"])
    for model, text in (("gpt2", ", dropout model (0.1)\n"),
                        ("opt-125m", ", dropout model (hidden 0.1)\n")):
        rc, out, err = llmem.run("estimate", "--model", model)
        t.check(rc == 0 and text in out, "the Setup line of %s says %r" % (model, text), out)
    rc, out, err = llmem.run("estimate")
    t.check("dropout" not in out, "Llama's attention_dropout 0: no dropout on the Setup line", out)
    rc, out, err = llmem.run("estimate", "--model", "gpt2", "--dropout", "0.2")
    t.check(", dropout 0.2\n" in out, "a set dropout is shown as set", out)


def check_text(t, llmem):
    rc, out, err = llmem.run("estimate", "--model", "gpt2", "--batch", "2")
    t.check(rc == 0, "the table prints", err)
    for word in TERMS + PHASES + ("Peak", "allocated", "reserved", "device", "phase",
                                  "openai-community/gpt2", "124,439,808", "batch 2 x seq 512"):
        t.check(word in out, "the table shows %r" % word, out)
    t.check(" GiB (" in out and " GB)" in out, "bytes in GiB and GB", out)
    t.check("<- peak" in out, "the peak phase is marked", out)
    d = llmem.json("--model", "gpt2", "--batch", "2")
    gib = "%.2f GiB" % (d["peak_allocated_bytes"] / 2.0 ** 30)
    gb = "%.2f GB" % (d["peak_allocated_bytes"] / 1e9)
    t.check(gib in out and gb in out, "the table's peak matches the JSON's", (gib, gb))
    # A rotary model past its max-positions runs, and the Setup says so;
    # learned positions refuse it (exit 1, test_limits).
    # Freeze always freezes the embedding (a tied head with it): said.
    rc, out, err = llmem.run("estimate", "--model", "meta-llama/Llama-3.2-1B", "--method",
                             "freeze")
    t.check(rc == 0 and "freeze (the embedding with its tied output head and the first 0 "
            "layers frozen)" in out, "freeze says the embedding is frozen", out[:900])
    note = "is past the model's max-positions 4096: transformers runs it"
    for seqs, says in (("4096", False), ("4097", True), ("1024,8192", True)):
        rc, out, err = llmem.run("estimate", "--model", "meta-llama/Llama-2-7b-hf", "--seq", seqs)
        t.check(rc == 0 and (note in out) == says, "seq %s past max-positions: said %s"
                % (seqs, says), out[:900])


def check_models(t, llmem):
    rc, out, err = llmem.run("models")
    lines = out.splitlines()
    t.check(rc == 0 and len(lines) >= 24, "llmem models lists at least 24 presets", out)
    t.check(any(line.split()[0] == "openai-community/gpt2" for line in lines if line.split()),
            "the list includes openai-community/gpt2", out)
    row = [line.split() for line in lines if line.startswith(LLAMA_32_1B + " ")]
    t.check(row and row[0][1] == "llama" and row[0][2] == str(LLAMA_32_1B_PARAMS),
            "a row: name, family, parameter count", row)
    rc, out, err = llmem.run("models", "--json")
    try:
        presets = json.loads(out)
    except ValueError as e:
        presets = []
        t.check(False, "llmem models --json is JSON", e)
    t.check(rc == 0 and isinstance(presets, list) and len(presets) >= 24,
            "llmem models --json: an array of at least 24", out[:200])
    t.check(all(isinstance(p.get("name"), str) and isinstance(p.get("family"), str)
                and is_int(p.get("params_total")) for p in presets),
            "each entry has name, family and params_total")
    t.check(len({p["name"] for p in presets}) == len(presets), "preset names are unique")
    for p in presets:
        if p["family"] in ("gpt2", "llama"):
            d = llmem.json("--model", p["name"])
            t.check(d["params_total"] == p["params_total"],
                    "%s: models and estimate agree on params" % p["name"])
    rc, out, err = llmem.run("models", "--batch", "2")
    t.check(rc == 2 and "--batch" in err and out == "", "llmem models rejects estimate flags", err)


def check_article(t, llmem):
    d = llmem.json(*(SEVEN_B + ["--formula", "article"]))
    p = d["params_total"]
    t.check(d["terms"]["parameters"] == 4 * p, "article: m_p = 4 x params bytes",
            (d["terms"]["parameters"], p))
    t.check(d["terms"]["optimizer"] == 2 * 4 * p, "article with AdamW: m_os = 2 x m_p")
    t.check(d["peak_phase"] == "none" and d["formula"] == "article",
            "article: no peak phase", d["peak_phase"])
    t.check(sum(d["terms"].values()) == d["peak_allocated_bytes"], "article: m_total is the sum")
    t.check(d["components"]["parameters"] == {"m_p": 4 * p}, "article: components named m_p...",
            d["components"])
    t.check(d["terms"]["temporary"] == 0, "article: m_tmp is 0 by default")
    d = llmem.json(*(SEVEN_B + ["--formula", "article", "--article-tmp-factor", "1.5",
                                "--article-param-bytes", "2", "--optimizer", "sgd"]))
    t.check(d["terms"]["parameters"] == 2 * p, "--article-param-bytes 2: m_p = 2 x params")
    t.check(d["terms"]["temporary"] == 3 * p, "--article-tmp-factor 1.5: m_tmp = 1.5 x m_p")
    t.check(d["terms"]["optimizer"] == 0, "article with SGD: no optimizer states")
    t.check(d["article_tmp_factor"] == 1.5, "the factor is echoed", d["article_tmp_factor"])
    rc, out, err = llmem.run("estimate", *(SEVEN_B + ["--formula", "article"]))
    t.check(rc == 0 and all(s in out for s in ("m_p", "m_os", "m_data", "m_tmp")),
            "article table labels the terms m_p, m_os, m_data, m_tmp", out)
    t.check("sums the terms" in out and "no phase" in out,
            "article table says the formula sums the terms, with no phase", out)
    # Every family also estimates with the article's formula.
    d = llmem.json("--model", "opt-125m", "--formula", "article")
    t.check(d["terms"]["parameters"] == 4 * d["params_total"], "article works for OPT")
    check_article_flags(t, llmem)


# What the article's formula reads (lib/estimate/article.c: the parameter
# count, batch, seq, the optimizer's multiple, its own two fields; the GPU's
# context and workspace), with a value to give each.
ARTICLE_READS = {"batch": "2", "seq": "128", "optimizer": "sgd", "gpu": "H100",
                 "formula": "article", "article-tmp-factor": "1", "article-param-bytes": "2"}
# Every other flag of the help's Training and Layout sections, and the
# timeline's two outputs: refused with the article's formula, even at their
# defaults, as --lora-rank is without LoRA (given is what counts).
ARTICLE_UNREAD = {"precision": "bf16", "optimizer-impl": "foreach", "grad-ckpt": "full",
                  "attention": "eager", "dropout": "0.1", "method": "lora", "lora-rank": "8",
                  "lora-targets": "q_proj", "lora-dropout": "0", "freeze-layers": "0",
                  "loss": "upcast", "grad-accum": "1", "experts-impl": "loop", "dp": "1",
                  "tp": "1", "pp": "1",
                  "ep": "1", "cp": "1", "sp": "0", "sharding": "none", "zero": "1",
                  "fsdp": "full", "shard-group": "0", "offload": "none", "micro-batches": "1",
                  "schedule": "1f1b", "virtual-stages": "1", "bucket-elements": "0",
                  "svg": None, "timeline": None}


def help_section_flags(usage, first, last):
    """The flags listed between the section headings first and last."""
    section = usage.split("\n" + first)[1].split("\n" + last)[0]
    return {line.split()[0][2:] for line in section.splitlines() if line.startswith("  --")}


def check_article_flags(t, llmem):
    """--formula article refuses every flag whose setting it does not read."""
    rc, usage, _ = llmem.run("help")
    listed = (help_section_flags(usage, "Training:", "Layout across GPUs") |
              help_section_flags(usage, "Layout across GPUs", "Fitting and planning:"))
    t.check(len(listed) > 30 and listed == (set(ARTICLE_READS) | set(ARTICLE_UNREAD)) -
            {"svg", "timeline"}, "every training and layout flag is read or refused by the "
            "article's formula", sorted(listed ^ (set(ARTICLE_READS) | set(ARTICLE_UNREAD))))
    base = ["estimate", "--model", "gpt2", "--formula", "article"]
    work = tempfile.mkdtemp(prefix="llmem-article-")
    svg = os.path.join(work, "step.svg")
    for flag, value in sorted(ARTICLE_UNREAD.items()):
        args = ["--" + flag] + ([svg] if flag == "svg" else [] if value is None else [value])
        for order in (base + args + ["--json"], ["estimate", "--model", "gpt2"] + args +
                      ["--formula", "article", "--json"]):
            rc, out, err = llmem.run(*order)
            given = " ".join(args)  # the flag as given, with its value
            t.check(rc == 2 and out == "" and err.startswith("llmem: %s needs formula phased "
                                                             "(the default)" % given),
                    "%s: a usage error naming it" % " ".join(order[2:]), (rc, err))
    t.check(not os.path.exists(svg), "no picture written")
    shutil.rmtree(work)
    d = llmem.json(*(base[1:] + [a for flag, v in ARTICLE_READS.items() for a in ("--" + flag, v)]))
    t.check(d["formula"] == "article" and d["batch"] == 2 and d["gpu"]["name"] == "H100-SXM",
            "what the article reads is taken", d.get("gpu"))
    # The same flags with the phased formula: no refusal (the last --formula counts).
    d = llmem.json("--model", "gpt2", "--formula", "article", "--dropout", "0.1",
                   "--grad-ckpt", "full", "--formula", "phased")
    t.check(d["formula"] == "phased" and d["dropout"] == 0.1, "the last --formula counts")
    # The article's check comes first: --lora-rank needs formula phased
    # before it needs a LoRA method.
    rc, out, err = llmem.run(*(base + ["--lora-rank", "4"]))
    t.check(rc == 2 and "--lora-rank 4 needs formula phased" in err, "--lora-rank: the formula first",
            err)
    # fit takes the estimate's flags, and the same check.
    rc, out, err = llmem.run("fit", "--gpu", "H100", "--model", "gpt2", "--formula", "article",
                             "--attention", "flash")
    t.check(rc == 2 and out == "" and "--attention flash needs formula phased" in err,
            "fit --formula article --attention: refused", err)


def check_monotonic(t, llmem):
    setups = [
        [],
        ["--model", "gpt2", "--method", "lora"],
        ["--model", "Llama-3.2-1B", "--grad-ckpt", "full", "--attention", "flash"],
        ["--model", "Qwen2.5-0.5B", "--method", "qlora", "--loss", "chunked"],
        SEVEN_B + ["--formula", "article"],
    ]
    for args in setups:
        label = " ".join(args) or "(no flags)"
        last = None
        ok = True
        seen = []
        for batch in (1, 2, 3, 4, 8, 16, 32, 64):
            d = llmem.json(*(args + ["--batch", str(batch)]))
            peak = (d["peak_allocated_bytes"], d["peak_reserved_bytes"], d["peak_device_bytes"])
            seen.append((batch, peak))
            if last is not None and any(a < b for a, b in zip(peak, last)):
                ok = False
            last = peak
        t.check(ok, "%s: a larger batch never lowers the peak" % label, seen)
    d1 = llmem.json("--seq", "256")
    d2 = llmem.json("--seq", "2048")
    t.check(d2["peak_allocated_bytes"] > d1["peak_allocated_bytes"], "a longer sequence costs more")


# (arguments, expected exit status, text the message must contain)
ERRORS = [
    (["--batch", "0"], 2, "--batch"),
    (["--batch", "abc"], 2, "--batch"),
    (["--batch", "1.5"], 2, "--batch"),
    (["--batch", "-3"], 2, "--batch"),
    (["--batch=0"], 2, "--batch"),
    (["--batch="], 2, "--batch"),
    (["--seq", "99999999999999999999999"], 2, "--seq"),
    (["--precision", "fp8"], 2, "--precision"),
    (["--optimizer", "adamx"], 2, "--optimizer"),
    (["--model", "nope"], 2, "--model"),
    (["--model="], 2, "--model"),
    (["--family", "nope"], 2, "--family"),
    (["--dropout", "nan"], 2, "--dropout"),
    (["--dropout", "inf"], 2, "--dropout"),
    (["--dropout", "1"], 2, "--dropout"),
    (["--dropout", "-0.1"], 2, "--dropout"),
    (["--method", "lora", "--lora-targets", "q_proj,nope"], 2, "--lora-targets"),
    (["--lora-rank", "0"], 2, "--lora-rank"),
    (["--grad-accum", "0"], 2, "--grad-accum"),
    (["--article-param-bytes", "0"], 2, "--article-param-bytes"),
    (["--article-tmp-factor", "nan"], 2, "--article-tmp-factor"),
    (["--model", "gpt2", "--hidden", "12x"], 2, "--hidden"),
    (["--model", "gpt2", "--hidden", "99999999999999999999999"], 2, "--hidden"),
    (["--model", "gpt2", "--layers", "0"], 2, "--layers"),
    (["--model", "gpt2", "--tie-embeddings", "2"], 2, "--tie-embeddings"),
    (["--model", "gpt2", "--attn-bias", "-1"], 2, "--attn-bias"),
    (["--model", "gpt2", "--norm", "batchnorm"], 2, "--norm"),
    (["--hidden", "64"], 2, "--hidden"),
    (["--bogus"], 2, "--bogus"),
    (["--bogus=1"], 2, "--bogus"),
    (["--batch"], 2, "--batch"),
    (["--batch", "--seq", "8"], 2, "--batch"),
    (["--json=yes"], 2, "--json"),
    (["stray"], 2, "stray"),
    (["-x"], 2, "-x"),
    (["--heads", "5", "--hidden", "64", "--family", "llama", "--layers", "2",
      "--intermediate", "128", "--vocab", "100"], 1, "--heads"),
    (["--model", "gpt2", "--heads", "5", "--hidden", "64"], 1, "--heads"),
    (["--model", "Llama-3.2-1B", "--kv-heads", "3"], 1, "--kv-heads"),
    (["--family", "llama", "--hidden", "64", "--heads", "4", "--layers", "2", "--vocab", "100"],
     1, "--intermediate"),
    (["--freeze-layers", "3"], 2, "--freeze-layers 3 needs method freeze"),
    (["--method", "freeze", "--freeze-layers", "99"], 1, "--freeze-layers"),
    (["--method", "qlora", "--precision", "fp32"], 1, "--precision"),
    (["--model", "gpt2", "--experts", "4"], 1, "--experts-per-token"),
    # The preset's own family is no flag the user typed: the message names the
    # field and the way out, not --family.
    (["--model", "opt-125m", "--post-norm", "2"], 2, "--post-norm"),
    (["--model", "opt-125m", "--activation", "tanh"], 2, "--activation"),
    (["--model", "gpt2", "--activation", "relu"], 1, "--activation"),
    (["--model", "gpt2", "--post-norm", "1"], 1, "--post-norm"),
    # The architecture flags of the newer model fields.
    (["--model", "gpt2", "--qk-norm", "2"], 2, "--qk-norm"),
    (["--model", "gpt2", "--shared-expert-gate", "-1"], 2, "--shared-expert-gate"),
    (["--model", "gpt2", "--final-norm", "x"], 2, "--final-norm"),
    (["--model", "gpt2", "--norms-per-layer", "9"], 2, "--norms-per-layer"),
    (["--model", "gpt2", "--head-bias", "2"], 2, "--head-bias"),
    (["--model", "gpt2", "--rotary-dim", "-1"], 2, "--rotary-dim"),
    (["--model", "gpt2", "--embed-dim", "1.5"], 2, "--embed-dim"),
    (["--model", "gpt2", "--position-offset", "abc"], 2, "--position-offset"),
    (["--qk-norm", "1"], 2, "--qk-norm"),
    (["--model", "Llama-3.2-1B", "--dense-layers", "2"], 1, "--dense-layers"),
    (["--model", "Llama-3.2-1B", "--rotary-dim", "9999"], 1, "--rotary-dim"),
    (["--model", "Llama-3.2-1B", "--experts", "4", "--experts-per-token", "2",
      "--expert-intermediate", "64", "--shared-expert-gate", "1"], 1, "--shared-expert-gate"),
    # --config and --weights: usage errors before any file is read.
    (["--config", "x.json", "--model", "gpt2"], 2, "--config"),
    (["--model", "gpt2", "--config=x.json"], 2, "--model"),
    (["--config"], 2, "--config"),
    (["--weights", "x.safetensors"], 2, "llmem weights"),
    (["--weights", "x.safetensors", "--batch", "2"], 2, "--weights"),
    (["--weights"], 2, "--weights"),
]


def check_errors(t, llmem):
    for args, status, needle in ERRORS:
        for extra in ([], ["--json"]):
            label = " ".join(args + extra)
            rc, out, err = llmem.run("estimate", *(args + extra))
            lines = err.splitlines()
            t.check(rc == status, "%s: exit status %d" % (label, status), (rc, err))
            t.check(len(lines) == 1 and lines[0].startswith("llmem: "),
                    "%s: one line 'llmem: ...' on stderr" % label, err)
            t.check(needle in err, "%s: the message names %s" % (label, needle), err)
            t.check(out == "", "%s: nothing on stdout" % label, out)
            t.check(rc > 0 and rc < 128, "%s: no crash" % label, rc)
    for args, status in ((["frob"], 2), ([], 2), (["version", "x"], 2), (["help", "x"], 2),
                         (["weights"], 2), (["weights", "a", "b"], 2),
                         (["weights", "--batch", "2"], 2), (["weights", "x", "--json=1"], 2),
                         (["weights", "--bogus"], 2)):
        rc, out, err = llmem.run(*args)
        t.check(rc == status and err.startswith("llmem: ") and out == "",
                "llmem %s: usage error" % " ".join(args), (rc, err))
    # help for a command prints its usage; --help after version, the whole usage
    for args in (["help", "estimate"], ["help", "pack"], ["version", "--help"], ["help", "-h"]):
        rc, out, err = llmem.run(*args)
        t.check(rc == 0 and out.startswith("Usage: llmem") and err == "",
                "llmem %s: the usage, exit 0" % " ".join(args), (rc, err))
    rc, out, err = llmem.run("help", "estimate", "x")
    t.check(rc == 2 and "takes one command" in err, "llmem help estimate x: usage error",
            (rc, err))


def check_equals(t, llmem):
    spaced = ["--model", "gpt2", "--batch", "4", "--seq", "256", "--precision", "fp32",
              "--optimizer", "lion", "--method", "lora", "--lora-targets", "c_attn",
              "--lora-rank", "16", "--dropout", "0.1", "--grad-accum", "2"]
    joined = [spaced[i] + "=" + spaced[i + 1] for i in range(0, len(spaced), 2)]
    a = llmem.json(*spaced)
    b = llmem.json(*joined)
    t.check(a == b, "--flag=value gives what --flag value gives", (a, b))
    t.check((b["batch"], b["seq"], b["precision"], b["optimizer"], b["lora_rank"]) ==
            (4, 256, "fp32", "lion", 16), "--flag=value values are applied", b)
    mixed = joined[:3] + spaced[6:]
    t.check(llmem.json(*mixed) == a, "both forms mix")
    d = llmem.json("--model=gpt2", "--hidden=1024", "--heads=16")
    t.check(d["architecture"]["hidden"] == 1024, "architecture flags take --flag=value")
    d = llmem.json("--batch", "2", "--batch", "5")
    t.check(d["batch"] == 5, "a repeated flag: the last one wins", d["batch"])


# Every value the usage lists is accepted by the library and echoed back.
CHOICES = {
    "precision": ["fp32", "bf16-mixed", "fp16-mixed", "bf16", "bf16-autocast"],
    "optimizer": ["adamw", "adam", "sgd", "sgd-momentum", "adafactor", "adamw-8bit", "lion",
                  "paged-adamw-8bit", "paged-adamw", "lion-8bit", "lion-32bit",
                  "paged-lion-8bit", "paged-lion"],
    "optimizer-impl": ["fused", "foreach", "forloop"],
    "grad-ckpt": ["none", "full", "reentrant", "non-reentrant"],
    "attention": ["eager", "flash", "sdpa"],
    "method": ["full", "lora", "qlora", "freeze"],
    "loss": ["upcast", "chunked"],
    "formula": ["phased", "article"],
}
MODEL_CHOICES = {
    "family": ["gpt2", "llama", "opt", "bloom", "gemma2", "phi3", "gemma", "gpt_neox", "falcon",
               "phi", "starcoder2", "deepseek"],
    "norm": ["layernorm", "rmsnorm"],
    "mlp": ["plain", "gated"],
}


# The Hugging Face Trainer's optim names: the optimizer each maps to, and the
# implementation it sets (None: it leaves the default, fused).
TRAINER_OPTIM = {
    "adamw_torch": ("adamw", "foreach"),
    "adamw_torch_fused": ("adamw", "fused"),
    "adamw_bnb_8bit": ("adamw-8bit", None),
    "adamw_8bit": ("adamw-8bit", None),
    "paged_adamw_8bit": ("paged-adamw-8bit", None),
    "paged_adamw_32bit": ("paged-adamw", None),
    "lion_8bit": ("lion-8bit", None),
    "lion_32bit": ("lion-32bit", None),
    "paged_lion_8bit": ("paged-lion-8bit", None),
    "paged_lion_32bit": ("paged-lion", None),
}


def check_choices(t, llmem):
    for name, (ours, impl) in TRAINER_OPTIM.items():
        d = llmem.json("--optimizer", name)
        t.check((d["optimizer"], d["optimizer_impl"]) == (ours, impl or "fused"),
                "--optimizer %s is %s with the %s step" % (name, ours, impl or "fused"),
                (d["optimizer"], d["optimizer_impl"]))
    # An explicit --optimizer-impl wins wherever it stands.
    for args in (["--optimizer-impl", "forloop", "--optimizer", "adamw_torch"],
                 ["--optimizer", "adamw_torch", "--optimizer-impl", "forloop"]):
        d = llmem.json(*args)
        t.check(d["optimizer_impl"] == "forloop", "%s: the explicit implementation wins"
                % " ".join(args), d["optimizer_impl"])
    rc, out, err = llmem.run("help")
    t.check("|paged-lion|adamw_torch|adamw_torch_fused|" in out,
            "the usage lists the Trainer's optim names after ours", out)
    for flag, values in CHOICES.items():
        for v in values:
            d = llmem.json("--" + flag, v)
            t.check(d[flag.replace("-", "_")] == v, "--%s %s is accepted and echoed" % (flag, v))
    for flag, values in MODEL_CHOICES.items():
        for v in values:
            # Learned positions (gpt2, opt) need a table length.
            d = llmem.json(*(SEVEN_B + ["--" + flag, v, "--formula", "article",
                                        "--max-positions", "4096"]))
            t.check(d["architecture"][flag] == v, "--%s %s is accepted and echoed" % (flag, v))
    d = llmem.json("--method", "lora", "--lora-targets",
                   "q_proj,k_proj,v_proj,o_proj,gate_proj,up_proj,down_proj")
    t.check(d["lora_targets"] == "q_proj,k_proj,v_proj,o_proj,gate_proj,up_proj,down_proj",
            "all seven LoRA targets are echoed", d["lora_targets"])
    rc, out, err = llmem.run("help")
    for flag in list(CHOICES) + list(MODEL_CHOICES):
        values = CHOICES.get(flag) or MODEL_CHOICES[flag]
        listed = "|".join(values) + ("|" if flag == "optimizer" else "")
        t.check("--%s %s" % (flag, listed) in out,
                "the usage lists --%s with its values" % flag)


FLAGS = ["model", "family", "hidden", "layers", "heads", "kv-heads", "head-dim", "intermediate",
         "vocab", "max-positions", "tie-embeddings", "attn-bias", "norm", "mlp", "experts",
         "experts-per-token", "expert-intermediate", "shared-expert-intermediate",
         "shared-expert-gate", "dense-layers", "router-bias", "qk-norm", "rotary-dim",
         "v-head-dim", "q-lora-rank", "kv-lora-rank", "parallel-block", "head-bias",
         "norms-per-layer", "final-norm", "embed-dim", "position-offset", "config", "weights",
         "batch", "seq", "precision", "optimizer", "optimizer-impl",
         "grad-ckpt", "attention", "dropout", "method", "lora-rank", "lora-targets", "lora-dropout",
         "freeze-layers", "loss", "grad-accum", "formula", "article-tmp-factor",
         "article-param-bytes", "json"]


def check_info(t, llmem):
    for args in (["help"], ["--help"], ["-h"], ["estimate", "--help"], ["estimate", "-h"]):
        rc, out, err = llmem.run(*args)
        t.check(rc == 0 and out.startswith("Usage: llmem"), "llmem %s prints the usage"
                % " ".join(args), (rc, err))
    rc, out, err = llmem.run("help")
    for flag in FLAGS:
        t.check(("--%s " % flag) in out or ("--%s\n" % flag) in out,
                "the usage lists --%s" % flag)
    for cmd in ("estimate", "models", "weights", "version", "help"):
        t.check(cmd in out, "the usage lists the %s command" % cmd)
    for args in (["version"], ["--version"]):
        rc, out, err = llmem.run(*args)
        t.check(rc == 0 and out.startswith("llmem ") and "libllmem" in out,
                "llmem %s prints the versions" % args[0], out)
        d = llmem.json()
        t.check(d["version"] in out, "the versions agree", (out, d["version"]))


# Each command's help: (a flag it takes, flags only other commands take).
COMMAND_HELP = {
    "estimate": ("--batch", ["--jobs", "--top", "--mig", "--bytes"]),
    "plan": ("--top", ["--jobs", "--svg", "--mig", "--bytes"]),
    "models": ("--json", ["--batch", "--jobs", "--mig"]),
    "weights": ("--json", ["--batch", "--mig", "--jobs"]),
    "gpus": ("--mig", ["--batch", "--jobs", "--top"]),
    "fit": ("--bytes", ["--jobs", "--top", "--svg", "--mig"]),
    "pack": ("--jobs", ["--batch", "--mig", "--top", "--bytes"]),
}
# How each command refuses a flag it does not take.
REFUSALS = ("unknown flag", "is not a flag of", "does not take", "takes --mig and --json only",
            "is a flag of `llmem estimate`")


def help_flags(out):
    """The flags a usage lists, with their value placeholder ("" for a switch)."""
    flags = {}
    for line in out.splitlines():
        if line.startswith("  --"):
            head = re.split(r"\s{2,}", line.strip())[0].split(" ", 1)
            flags[head[0]] = head[1] if len(head) > 1 else ""
    return flags


def check_command_help(t, llmem):
    _, whole, _ = llmem.run("help")
    tmp = tempfile.mkdtemp()
    try:
        for cmd, (takes, others) in sorted(COMMAND_HELP.items()):
            rc, out, err = llmem.run(cmd, "--help")
            rc2, out2, err2 = llmem.run("help", cmd)
            t.check(rc == 0 and err == "" and out.startswith("Usage: llmem %s" % cmd),
                    "llmem %s --help: its usage on stdout, exit 0" % cmd, (rc, err, out[:80]))
            t.check(rc2 == 0 and out2 == out, "llmem help %s: the same" % cmd, (rc2, err2))
            t.check(out != whole, "llmem %s --help is not the whole usage" % cmd)
            flags = help_flags(out)
            t.check(takes in flags, "llmem %s --help lists %s" % (cmd, takes), sorted(flags))
            for other in others:
                t.check(other not in flags, "llmem %s --help leaves out %s" % (cmd, other))
            # Every flag listed is one the command takes (a bad value may be
            # refused; the flag may not).
            for flag, value in sorted(flags.items()):
                args = [cmd, flag]
                if flag == "--svg":
                    args.append(os.path.join(tmp, "step.svg"))
                elif value:
                    args.append(value.split("|")[0].split("[")[0].split(",")[0] or "1")
                rc, out, err = llmem.run(*args)
                refused = [r for r in REFUSALS if r in err]
                t.check(not refused and rc < 128, "llmem %s: %s is taken" % (cmd, " ".join(args[1:])),
                        (rc, err.strip()))
            # The check above would see a refusal.
            needed = ["--gpu", "A100-80GB"] if cmd == "fit" else []
            rc, out, err = llmem.run(cmd, *(needed + [others[0], "1"]))
            t.check(rc == 2 and any(r in err for r in REFUSALS),
                    "llmem %s %s 1: refused" % (cmd, others[0]), (rc, err.strip()))
    finally:
        shutil.rmtree(tmp)
    for args in (["help", "nosuch"], ["help", "--bogus"]):
        rc, out, err = llmem.run(*args)
        t.check(rc == 2 and out == "" and err.startswith("llmem: ") and args[1] in err,
                "llmem %s: a usage error naming the command" % " ".join(args), (rc, err))
    for args in (["help"], ["--help"], ["help", "help"], ["help", "version"]):
        rc, out, err = llmem.run(*args)
        t.check(rc == 0 and out == whole, "llmem %s: the whole usage" % " ".join(args), rc)


# The integer model fields of the newer flags: flag, JSON key, a value to set on
# Llama-3.2-1B (16 layers, hidden 2048, head-dim 64), and what params_total
# becomes (None: not checked here).
ARCH_FLAGS = [
    ("qk-norm", "qk_norm", "1", LLAMA_32_1B_PARAMS + 16 * 2 * 64),  # q_norm, k_norm
    ("final-norm", "final_norm", "0", LLAMA_32_1B_PARAMS - 2048),
    ("norms-per-layer", "norms_per_layer", "3", LLAMA_32_1B_PARAMS + 16 * 2048),
    ("head-bias", "head_bias", "1", None),
    ("embed-dim", "embed_dim", "1024", None),
    ("position-offset", "position_offset", "2", None),
]


def check_arch_flags(t, llmem):
    """The flags of the newer model fields: applied, echoed, counted."""
    for flag, key, value, params in ARCH_FLAGS:
        # The article formula: parameter counts are the point, and the phased
        # estimate refuses layouts its code paths do not build (embed-dim, ...).
        d = llmem.json("--model", "Llama-3.2-1B", "--formula", "article", "--" + flag, value)
        t.check(d["architecture"].get(key) == int(value) and d["model_modified"] is True,
                "--%s %s is applied and echoed as %s" % (flag, value, key), d["architecture"])
        if params is not None:
            t.check(d["params_total"] == params,
                    "--%s %s: params_total %d" % (flag, value, params), d["params_total"])
    moe = ["--model", "Llama-3.2-1B", "--experts", "8", "--experts-per-token", "2",
           "--expert-intermediate", "1024"]
    shared = ["--shared-expert-intermediate", "512", "--shared-expert-gate", "1"]
    base = llmem.json(*moe)
    d = llmem.json(*(moe + shared))
    # Each of the 16 MoE layers: a gated shared MLP (3 x 2048 x 512) and its Linear(2048, 1) gate.
    extra = 16 * (3 * 2048 * 512 + 2048)
    t.check(d["params_total"] - base["params_total"] == extra,
            "a gated shared expert adds 16 x (3 x 2048 x 512 + 2048) parameters",
            (base["params_total"], d["params_total"]))
    t.check(d["params_active"] - base["params_active"] == extra,
            "the shared expert is active for every token",
            (base["params_active"], d["params_active"]))
    d = llmem.json(*(moe + ["--dense-layers", "2"]))
    t.check(d["architecture"]["dense_layers"] == 2 and d["params_total"] != base["params_total"],
            "--dense-layers 2 changes the count", d["architecture"])
    rc, out, err = llmem.run("estimate", *(moe + shared + ["--dense-layers", "2"]))
    t.check(rc == 0 and "shared expert 512 (gated)" in out and "2 dense layers" in out,
            "the table shows the shared expert and the dense layers", (rc, err, out[:600]))
    d = llmem.json("--model", "Llama-3.2-1B", "--rotary-dim", "32", "--formula", "article")
    t.check(d["architecture"]["rotary_dim"] == 32, "--rotary-dim is echoed", d["architecture"])
    d = llmem.json("--family", "deepseek", "--hidden", "256", "--layers", "2", "--heads", "4",
                   "--head-dim", "48", "--rotary-dim", "16", "--v-head-dim", "32",
                   "--kv-lora-rank", "64", "--q-lora-rank", "96", "--intermediate", "512",
                   "--vocab", "1000", "--formula", "article")
    arch = d["architecture"]
    t.check((arch["kv_lora_rank"], arch["q_lora_rank"], arch["v_head_dim"], arch["rotary_dim"]) ==
            (64, 96, 32, 16), "the latent-attention flags describe a custom DeepSeek model", arch)
    d = llmem.json("--family", "gpt_neox", "--hidden", "256", "--layers", "2", "--heads", "4",
                   "--intermediate", "1024", "--vocab", "1000", "--parallel-block", "0",
                   "--formula", "article")
    t.check(d["architecture"]["parallel_block"] == 0,
            "--parallel-block 0 is applied after --family's defaults", d["architecture"])
    d = llmem.json("--model", "Llama-3.2-1B")
    for key in ("qk_norm", "rotary_dim", "dense_layers", "shared_expert_intermediate",
                "shared_expert_gate", "head_bias", "norms_per_layer", "final_norm", "embed_dim",
                "position_offset", "v_head_dim", "q_lora_rank", "kv_lora_rank", "router_bias",
                "parallel_block"):
        t.check(is_int(d["architecture"].get(key)), "architecture.%s is an integer" % key)


def config_path(name):
    return os.path.join(HF_CONFIGS, name + ".json")


def read_expected_params():
    with open(os.path.join(HF_DIR, "expected_params.csv")) as f:
        return {row["config"]: int(row["expected_params"]) for row in csv.DictReader(f)}


def check_config(t, llmem):
    """--config: the model of a Hugging Face config.json, used as a preset is."""
    llama = config_path("Llama-3.2-1B")
    d = llmem.json("--config", llama)
    t.check(d["params_total"] == LLAMA_32_1B_PARAMS,
            "--config Llama-3.2-1B.json: params_total %d" % LLAMA_32_1B_PARAMS, d["params_total"])
    t.check(d["model"] == llama and d["model_source"] == "config" and d["model_modified"] is False,
            "the model is named by its path, model_source config", (d["model"], d["model_source"]))
    for name in ("Llama-3.2-1B", "gpt2", "Qwen2.5-0.5B"):
        a = llmem.json("--model", name, "--batch", "2")
        b = llmem.json("--config", config_path(name), "--batch", "2")
        for k in ("model", "model_source"):
            a.pop(k)
            b.pop(k)
        t.check(a == b, "--config %s.json estimates what --model %s does" % (name, name))
    with tempfile.TemporaryDirectory() as tmp:
        shutil.copy(llama, os.path.join(tmp, "config.json"))
        d = llmem.json("--config", tmp)
        t.check(d["params_total"] == LLAMA_32_1B_PARAMS and d["model"] == tmp,
                "--config DIR reads DIR/config.json", (d["model"], d["params_total"]))
    d = llmem.json("--config=" + llama)
    t.check(d["params_total"] == LLAMA_32_1B_PARAMS, "--config=PATH works too")

    mixtral = llmem.json("--config", config_path("Mixtral-8x7B-v0.1"))
    t.check(mixtral["params_total"] == 46702792704,
            "Mixtral-8x7B-v0.1: params_total 46,702,792,704", mixtral["params_total"])
    t.check(mixtral["params_active"] == 12879925248,
            "Mixtral-8x7B-v0.1: 12,879,925,248 active a token", mixtral["params_active"])
    t.check(mixtral["params_active"] < mixtral["params_total"], "Mixtral: fewer active than total")
    t.check(mixtral["formula"] == "phased" and mixtral["peak_phase"] in PHASES and
            mixtral["architecture"]["experts"] == 8,
            "Mixtral (llama-family MoE) estimates with the phased formula", mixtral["peak_phase"])

    # Every family the configs name runs the phased model (latent attention,
    # shared and routed experts, Falcon-RW's ALiBi included); a layout its code
    # path does not build is refused, naming the field and the way out.
    deepseek = config_path("DeepSeek-V2-Lite")
    for name in ("DeepSeek-V2-Lite", "DeepSeek-V3", "opt-350m", "bloom-560m", "pythia-160m",
                 "falcon-7b", "falcon-40b", "falcon-rw-1b", "phi-2", "starcoder2-3b"):
        d = llmem.json("--config", config_path(name))
        t.check(d["formula"] == "phased" and d["peak_phase"] in PHASES and
                d["peak_allocated_bytes"] > 4 * d["params_total"],
                "%s estimates with the phased formula" % name, (d["formula"], d["peak_phase"]))
    rc, out, err = llmem.run("estimate", "--config", config_path("falcon-7b"), "--positions",
                             "alibi")
    t.check(rc == 1 and out == "", "falcon-7b with ALiBi (multi-query), phased: exit 1, "
            "nothing on stdout", (rc, out[:200]))
    t.check(len(err.splitlines()) == 1 and err.startswith("llmem: --positions:") and
            "--formula article" in err, "the message names --positions and --formula article",
            err)
    opt350 = llmem.json("--config", config_path("opt-350m"))
    t.check(opt350["architecture"]["post_norm"] == 1 and opt350["architecture"]["final_norm"] == 0
            and opt350["architecture"]["activation"] == "relu",
            "opt-350m: do_layer_norm_before false, no final norm, ReLU", opt350["architecture"])
    d = llmem.json("--config", deepseek, "--formula", "article")
    t.check(d["params_total"] == 15706484224 and d["params_active"] == 2661150208,
            "DeepSeek-V2-Lite with --formula article: 15,706,484,224 total, 2,661,150,208 active",
            (d["params_total"], d["params_active"]))
    t.check(d["architecture"]["family"] == "deepseek" and d["architecture"]["kv_lora_rank"] == 512,
            "DeepSeek-V2-Lite: family deepseek, latent attention", d["architecture"])

    # Architecture flags override the config's fields as they do a preset's.
    d = llmem.json("--config", llama, "--layers", "8")
    t.check(d["model_modified"] is True and d["architecture"]["layers"] == 8 and
            d["params_total"] < LLAMA_32_1B_PARAMS, "--layers overrides the config",
            d["architecture"])
    d = llmem.json("--config", config_path("gpt2"), "--family", "llama")
    t.check(d["architecture"]["family"] == "llama" and d["architecture"]["hidden"] == 768,
            "--family with --config keeps the config's sizes", d["architecture"])
    qwen3 = llmem.json("--config", config_path("Qwen3-0.6B"))
    d = llmem.json("--config", config_path("Qwen3-0.6B"), "--qk-norm", "0")
    t.check(qwen3["architecture"]["qk_norm"] == 1 and
            qwen3["params_total"] - d["params_total"] == 28 * 2 * 128,
            "--qk-norm 0 removes Qwen3's q_norm and k_norm",
            (qwen3["params_total"], d["params_total"]))

    rc, out, err = llmem.run("estimate", "--config", config_path("Mixtral-8x7B-v0.1"))
    t.check(rc == 0 and out.startswith("Model") and config_path("Mixtral-8x7B-v0.1") in out and
            "Hugging Face config" in out, "the table names the config", out[:300])
    t.check("8 experts a layer, top-2 routed" in out and "active a token" in out,
            "the table shows the experts and the active parameters", out[:600])

    # Every published config: the library's count, through the command.
    expected = read_expected_params()
    for name in sorted(expected):
        d = llmem.json("--config", config_path(name), "--formula", "article")
        t.check(d["params_total"] == expected[name],
                "--config %s.json: params_total %d" % (name, expected[name]), d["params_total"])


def expect_failure(t, llmem, args, status, needles, label):
    """One failed run: its exit status, one 'llmem: ' line naming needles, no stdout."""
    rc, out, err = llmem.run(*args)
    t.check(rc == status, "%s: exit status %d" % (label, status), (rc, err))
    t.check(len(err.splitlines()) == 1 and err.startswith("llmem: "),
            "%s: one line 'llmem: ...' on stderr" % label, err)
    for needle in needles:
        t.check(needle in err, "%s: the message has %r" % (label, needle), err)
    t.check(out == "", "%s: nothing on stdout" % label, out)


# (what, config.json text, what the message names besides the path)
BAD_CONFIGS = [
    ("malformed JSON", '{"model_type": "llama", "hidden_size": 64,', ["JSON"]),
    ("a top level that is not an object", '[1, 2]', ["object"]),
    ("a missing field", '{"model_type": "llama", "num_hidden_layers": 2, '
     '"num_attention_heads": 4, "intermediate_size": 128, "vocab_size": 100}',
     ["hidden_size", "llama"]),
    ("an unknown model_type", '{"model_type": "frobnicator"}', ["frobnicator"]),
    ("a field of the wrong type", '{"model_type": "gpt2", "n_embd": "64", "n_layer": 2, '
     '"n_head": 4, "n_positions": 32, "vocab_size": 100}', ["n_embd"]),
]


def check_config_errors(t, llmem):
    with tempfile.TemporaryDirectory() as tmp:
        missing = os.path.join(tmp, "nope.json")
        cases = [("a missing file", missing, ["no such file"]),
                 ("a directory without config.json", tmp, ["config.json"])]
        for i, (label, text, needles) in enumerate(BAD_CONFIGS):
            d = os.path.join(tmp, "bad%d" % i)
            os.mkdir(d)
            with open(os.path.join(d, "config.json"), "w") as f:
                f.write(text)
            cases.append((label, d, needles))
            cases.append((label + " (the file itself)", os.path.join(d, "config.json"), needles))
        for label, path, needles in cases:
            for extra in ([], ["--json"]):
                expect_failure(t, llmem, ["estimate", "--config", path] + extra, 1,
                               ["--config '%s': " % path] + needles,
                               "--config, %s%s" % (label, " --json" if extra else ""))
    gpt2 = config_path("gpt2")
    expect_failure(t, llmem, ["estimate", "--config", gpt2, "--model", "gpt2"], 2,
                   ["--model", "--config"], "--config with --model")
    expect_failure(t, llmem, ["estimate", "--config", gpt2, "--layers", "0"], 2, ["--layers"],
                   "--config with a bad architecture value")
    expect_failure(t, llmem, ["estimate", "--config", gpt2, "--heads", "5"], 1, ["--heads"],
                   "--config with a flag that contradicts it")


def generate(tmp, config, name, *options):
    """Write the checkpoint config describes (tests/hf/gen_safetensors.py) under
    tmp/name: (its parameter count, the directory); the count is None when
    sparse files cannot be written here."""
    out = os.path.join(tmp, name)
    proc = subprocess.run([sys.executable, GENERATOR, config, out] + list(options),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, timeout=300)
    if proc.returncode == 77:
        return None, out
    if proc.returncode != 0:
        raise AssertionError("gen_safetensors.py %s: %s" % (config, proc.stderr.strip()))
    return int(proc.stdout.strip()), out


def tensor_count(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n).decode("utf-8"))
    return len([k for k in header if k != "__metadata__"])


def write_safetensors(path, tensors, header_length=None):
    """A small file by hand: tensors are (name, dtype, shape, bytes), in order."""
    header, offset = {}, 0
    for name, dtype, shape, size in tensors:
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + size]}
        offset += size
    text = json.dumps(header).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text) if header_length is None else header_length))
        f.write(text)
        f.write(b"\0" * offset)


def weights_json(llmem, path):
    rc, out, err = llmem.run("weights", path, "--json")
    if rc != 0:
        raise AssertionError("llmem weights %s --json: exit %d: %s" % (path, rc, err.strip()))
    return json.loads(out)


def check_bnb_weights(t, llmem, tmp, config, count):
    """A bitsandbytes 4-bit checkpoint (gen_safetensors.py --bnb-4bit): its
    packed weights count two parameters a byte, its quantization state bytes
    only, and it matches its config's model."""
    with open(config) as f:
        quantized = json.load(f)
    for quant_type, shards in (("nf4", "1"), ("fp4", "2")):
        n, path = generate(tmp, config, "bnb-" + quant_type, "--bnb-4bit", quant_type,
                           "--shards", shards)
        quantized["quantization_config"] = {
            "quant_method": "bitsandbytes", "load_in_4bit": True, "load_in_8bit": False,
            "bnb_4bit_use_double_quant": True, "bnb_4bit_quant_type": quant_type}
        with open(os.path.join(path, "config.json"), "w") as f:
            json.dump(quantized, f)
        d = weights_json(llmem, path)
        packed = d["dtypes"].get("bnb-" + quant_type, {})
        t.check(n == count and d["params"] == count and list(d["dtypes"]) ==
                ["BF16", "bnb-" + quant_type] and packed.get("bytes", 0) * 2 ==
                packed.get("params") > 0 and "U8" not in d["dtypes"] and
                d["dtypes"]["BF16"]["params"] + packed["params"] == count,
                "bnb %s, %s shard(s): packed weights two parameters a byte" % (quant_type, shards),
                d)
        state = d.get("quant_state", {})
        t.check(state.get("tensors", 0) > 0 and d["bytes"] == state["bytes"] +
                d["dtypes"]["BF16"]["bytes"] + packed["bytes"] and d["files"] == int(shards),
                "bnb %s: the quantization state is bytes, not parameters" % quant_type, d)
        rc, out, err = llmem.run("weights", path)
        t.check(rc == 0 and "bnb-" + quant_type in out and "quant state" in out and
                "{:,}".format(count) in out, "bnb %s: the table shows the packed weights and "
                "the state" % quant_type, out)
        rc, out, err = llmem.run("estimate", "--config", path, "--weights", path, "--method",
                                 "qlora", "--json")
        w = json.loads(out).get("weights", {}) if rc in (0, 3) else {}
        t.check(rc == 0 and err == "" and w.get("matches_model") is True and
                w.get("quant_state") == state,
                "bnb %s: estimate --config --weights on the checkpoint exits 0" % quant_type,
                (rc, err, w))
        rc, out, err = llmem.run("estimate", "--config", path, "--weights", path, "--method",
                                 "qlora")
        t.check(rc == 0 and "matches params_total" in out and "quant state" in out,
                "bnb %s: the table says the weights match" % quant_type, (rc, err, out[-700:]))


def check_weights(t, llmem):
    with tempfile.TemporaryDirectory() as tmp:
        check_weights_in(t, llmem, tmp)


def check_weights_in(t, llmem, tmp):
    mistral_cfg = os.path.join(HF_CROSSCHECK, "mistral-tied.json")
    count, mistral = generate(tmp, mistral_cfg, "mistral")
    if count is None:
        t.skip("llmem weights", "sparse files cannot be written here")
        return
    single = os.path.join(mistral, "model.safetensors")
    tensors = tensor_count(single)
    for path in (single, mistral):
        d = weights_json(llmem, path)
        t.check((d["params"], d["bytes"], d["tensors"], d["files"]) ==
                (count, 2 * count, tensors, 1),
                "llmem weights %s: params, bytes, tensors, files" % os.path.basename(path),
                (d, count, tensors))
        t.check(d["dtypes"] == {"BF16": {"params": count, "bytes": 2 * count}},
                "llmem weights: params and bytes per dtype", d["dtypes"])
        t.check(d["path"] == path and "matches_model" not in d,
                "llmem weights: the path, and no model to check against", d)
    rc, out, err = llmem.run("weights", single)
    t.check(rc == 0 and err == "" and out.startswith("Weights"), "the table prints", err)
    t.check("{:,}".format(count) in out and "BF16" in out and "in 1 file" in out,
            "the table shows the count, the dtype and the files", out)
    t.check("vs the model" not in out, "the table has no cross-check without a model", out)

    count32, f32 = generate(tmp, mistral_cfg, "f32", "--dtype", "F32")
    d = weights_json(llmem, f32)
    t.check(d["params"] == count32 == count and d["bytes"] == 4 * count and
            list(d["dtypes"]) == ["F32"], "F32 weights: 4 bytes a parameter", d)

    moe_cfg = os.path.join(HF_CROSSCHECK, "qwen2_moe-sparse.json")
    moe_count, moe = generate(tmp, moe_cfg, "moe", "--shards", "2")
    for path in (moe, os.path.join(moe, "model.safetensors.index.json")):
        d = weights_json(llmem, path)
        t.check(d["params"] == moe_count and d["files"] == 2,
                "sharded, %s: every shard counted once" % os.path.basename(path), d)

    mixed = os.path.join(tmp, "mixed.safetensors")
    write_safetensors(mixed, [("a", "F32", [2, 3], 24), ("b", "BF16", [4], 8),
                              ("c", "I64", [], 8), ("d", "F32", [5], 20)])
    d = weights_json(llmem, mixed)
    t.check(d["dtypes"] == {"F32": {"params": 11, "bytes": 44}, "BF16": {"params": 4, "bytes": 8},
                            "I64": {"params": 1, "bytes": 8}},
            "mixed dtypes: params and bytes of each", d["dtypes"])
    t.check((d["params"], d["bytes"], d["tensors"], d["files"]) == (16, 60, 4, 1),
            "mixed dtypes: the totals", d)

    # The cross-check: the weights against the model of the same config.
    d = llmem.json("--config", mistral_cfg, "--weights", mistral)
    w = d.get("weights", {})
    t.check(w.get("matches_model") is True and w.get("params") == d["params_total"] == count,
            "--config with its own weights: matches_model true", w)
    t.check((w.get("params_difference"), w.get("bytes"), w.get("tensors"), w.get("files")) ==
            (0, 2 * count, tensors, 1) and
            w.get("dtypes") == {"BF16": {"params": count, "bytes": 2 * count}},
            "the estimate's weights object has the header counts", w)
    shutil.copy(moe_cfg, os.path.join(moe, "config.json"))
    d = llmem.json("--config", moe, "--weights", moe)
    t.check(d["weights"]["matches_model"] is True and d["weights"]["files"] == 2,
            "one directory with config.json and sharded weights: they match", d["weights"])
    # Weights that differ: the whole answer on stdout, exit 3 (the check failed)
    # and one line on stderr with both counts, so a script can tell.
    rc, out, err = llmem.run("estimate", "--config", moe_cfg, "--weights", mistral, "--json")
    d = json.loads(out)
    w = d["weights"]
    t.check(w["matches_model"] is False and w["params_difference"] == count - d["params_total"],
            "other weights: matches_model false, the difference weights - model", w)
    t.check(rc == 3 and err.count("\n") == 1 and
            err.startswith("llmem: --weights '%s': %d parameters in the weights, %d in the model"
                           % (mistral, count, d["params_total"])),
            "other weights, --json: exit 3 and one line naming both counts", (rc, err))
    t.check(d["peak_allocated_bytes"] ==
            llmem.json("--config", moe_cfg)["peak_allocated_bytes"],
            "--weights does not change the estimate")
    rc, out, err = llmem.run("estimate", "--config", mistral_cfg, "--weights", mistral)
    t.check(rc == 0 and "\nWeights" in out and "matches params_total" in out,
            "the table adds the weights and says they match", out[-700:])
    rc, out, err = llmem.run("estimate", "--config", moe_cfg, "--weights", mistral)
    t.check(rc == 3 and "differs" in out and "{:,}".format(count) in out and
            "{:,}".format(moe_count) in out and "{:,}".format(moe_count - count) in out and
            "they differ" in err,
            "a mismatch shows both counts and the difference, and exits 3", (rc, err, out[-700:]))
    rc, out, err = llmem.run("estimate", "--config", mistral_cfg, "--weights", mistral,
                             "--batch", "1,2")
    t.check(rc == 0 and "\nWeights" in out and "matches params_total" in out and err == "",
            "a grid's table has the weights too, and exits 0 when they match", (rc, err, out[-700:]))
    rc, out, err = llmem.run("estimate", "--config", moe_cfg, "--weights", mistral,
                             "--seq", "128,256")
    t.check(rc == 3 and "differs" in out and "they differ" in err,
            "a grid with weights that differ exits 3", (rc, err, out[-700:]))
    rc, out, err = llmem.run("estimate", "--family", "llama", "--hidden", "64", "--layers", "2",
                             "--heads", "4", "--intermediate", "128", "--vocab", "100",
                             "--weights", mistral, "--json")
    d = json.loads(out)
    t.check(rc == 3 and "weights" in d and d["model_source"] == "custom",
            "--weights with a custom (--family) model", (rc, d.get("weights")))

    check_bnb_weights(t, llmem, tmp, mistral_cfg, count)

    # Malformed weights: exit 1, the library's message, nothing on stdout.
    bad = []
    garbage = os.path.join(tmp, "garbage.safetensors")
    with open(garbage, "wb") as f:
        f.write(b"garbage")
    bad.append(("a file too short", garbage, []))
    long_header = os.path.join(tmp, "long.safetensors")
    write_safetensors(long_header, [("w", "F32", [2], 8)], header_length=10 ** 6)
    bad.append(("a header length beyond the file", long_header, []))
    shape = os.path.join(tmp, "shape.safetensors")
    write_safetensors(shape, [("some.weight", "F32", [3], 8)])
    bad.append(("a shape that disagrees with its offsets", shape, ["some.weight"]))
    dtype = os.path.join(tmp, "dtype.safetensors")
    write_safetensors(dtype, [("w", "F33", [2], 8)])
    bad.append(("an unknown dtype", dtype, ["F33"]))
    not_json = os.path.join(tmp, "notjson.safetensors")
    with open(not_json, "wb") as f:
        f.write(struct.pack("<Q", 4) + b"{{{{")
    bad.append(("a header that is not JSON", not_json, []))
    empty = os.path.join(tmp, "empty")
    os.mkdir(empty)
    bad.append(("a directory without weights", empty, []))
    bad.append(("a missing file", os.path.join(tmp, "nope.safetensors"), []))
    for label, path, needles in bad:
        expect_failure(t, llmem, ["weights", path], 1, ["weights '%s': " % path] + needles,
                       "llmem weights, %s" % label)
        expect_failure(t, llmem, ["weights", path, "--json"], 1, needles,
                       "llmem weights --json, %s" % label)
        expect_failure(t, llmem, ["estimate", "--config", mistral_cfg, "--weights", path], 1,
                       ["--weights '%s': " % path] + needles, "estimate --weights, %s" % label)


GROUPS = {
    "json": check_json,
    "params": check_params,
    "defaults": check_defaults,
    "text": check_text,
    "models": check_models,
    "article": check_article,
    "monotonic": check_monotonic,
    "errors": check_errors,
    "equals": check_equals,
    "choices": check_choices,
    "info": check_info,
    "command-help": check_command_help,
    "arch-flags": check_arch_flags,
    "config": check_config,
    "config-errors": check_config_errors,
    "weights": check_weights,
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
