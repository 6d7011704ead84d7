# SPDX-License-Identifier: MIT
"""Checks of the `llmem` command, run as a user runs it.

Usage: test_cli.py PATH/TO/llmem GROUP

Each GROUP is one meson test and prints TAP. Standard library only, so it runs
with any python3. LLMEM_TEST_WRAPPER runs every llmem under a tool, e.g.
LLMEM_TEST_WRAPPER="valgrind -q --leak-check=full --error-exitcode=99".
"""
import json
import os
import shlex
import subprocess
import sys

LLAMA_32_1B = "meta-llama/Llama-3.2-1B"
LLAMA_32_1B_PARAMS = 1235814400  # published count (tests/data/published_params.csv)
TERMS = ("parameters", "optimizer", "data", "temporary")
PHASES = ("forward", "loss-backward", "backward", "optimizer")
# A Llama-2-7B-shaped custom model: 6,738,415,616 parameters.
SEVEN_B = ["--family", "llama", "--hidden", "4096", "--layers", "32", "--heads", "32",
           "--intermediate", "11008", "--vocab", "32000"]


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
        t.check(isinstance(d.get("dropout"), float), "%s: dropout is a real" % label)
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
    d = llmem.json("--norm", "layernorm", *SEVEN_B)
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
    t.check("library's defaults" in out, "it says the setup is the library's default", out)
    d = llmem.json()
    t.check(d["model"] == LLAMA_32_1B and d["model_source"] == "default",
            "--json alone: the default model, marked default", d["model"])
    t.check((d["batch"], d["seq"], d["precision"], d["optimizer"], d["method"]) ==
            (1, 512, "bf16-mixed", "adamw", "full"), "--json alone: the library's defaults")


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
    # Families without a phased code path still estimate with the article's formula.
    d = llmem.json("--model", "opt-125m", "--formula", "article")
    t.check(d["terms"]["parameters"] == 4 * d["params_total"], "article works for OPT")


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
    (["--freeze-layers", "3"], 1, "--freeze-layers"),
    (["--method", "freeze", "--freeze-layers", "99"], 1, "--freeze-layers"),
    (["--method", "qlora", "--precision", "fp32"], 1, "--precision"),
    (["--model", "gpt2", "--experts", "4"], 1, "--experts-per-token"),
    (["--model", "opt-125m"], 1, "--family"),
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
    for args, status in ((["frob"], 2), ([], 2), (["version", "x"], 2), (["help", "x"], 2)):
        rc, out, err = llmem.run(*args)
        t.check(rc == status and err.startswith("llmem: ") and out == "",
                "llmem %s: usage error" % " ".join(args), (rc, err))


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
    "precision": ["fp32", "bf16-mixed", "fp16-mixed", "bf16"],
    "optimizer": ["adamw", "adam", "sgd", "sgd-momentum", "adafactor", "adamw-8bit", "lion"],
    "grad-ckpt": ["none", "full"],
    "attention": ["eager", "flash"],
    "method": ["full", "lora", "qlora", "freeze"],
    "loss": ["upcast", "chunked"],
    "formula": ["phased", "article"],
}
MODEL_CHOICES = {
    "family": ["gpt2", "llama", "opt", "bloom", "gemma2", "phi3"],
    "norm": ["layernorm", "rmsnorm"],
    "mlp": ["gated", "plain"],
}


def check_choices(t, llmem):
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
        t.check("--%s %s" % (flag, "|".join(values)) in out,
                "the usage lists --%s with its values" % flag)


FLAGS = ["model", "family", "hidden", "layers", "heads", "kv-heads", "head-dim", "intermediate",
         "vocab", "max-positions", "tie-embeddings", "attn-bias", "norm", "mlp", "experts",
         "experts-per-token", "expert-intermediate", "batch", "seq", "precision", "optimizer",
         "grad-ckpt", "attention", "dropout", "method", "lora-rank", "lora-targets",
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
    for cmd in ("estimate", "models", "version", "help"):
        t.check(cmd in out, "the usage lists the %s command" % cmd)
    for args in (["version"], ["--version"]):
        rc, out, err = llmem.run(*args)
        t.check(rc == 0 and out.startswith("llmem ") and "libllmem" in out,
                "llmem %s prints the versions" % args[0], out)
        d = llmem.json()
        t.check(d["version"] in out, "the versions agree", (out, d["version"]))


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
