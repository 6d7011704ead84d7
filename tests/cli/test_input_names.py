# SPDX-License-Identifier: MIT
"""Names and sizes as users type them, through the `llmem` command.

Usage: test_input_names.py PATH/TO/llmem GROUP [no-configs]

GROUP: messages (whole choice lists, "did you mean"), presets (any case),
lora (all-linear; the Setup line's and --json's lora_targets given back give
the same estimate, for every preset and Hugging Face config), sizes
(--capacity units). no-configs: a build without the Hugging Face reader.
TAP on stdout; standard library only.
"""
import json
import os
import subprocess
import sys

import test_cli

HF_CONFIGS = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "hf",
                          "configs")


# test_cli's TAP writer and runner (its json() runs `llmem estimate ARGS --json`).
Tap = test_cli.Tap
Llmem = test_cli.Llmem


def check_messages(t, llmem):
    rc, _, err = llmem.run("estimate", "--optimizer", "adamw8")
    t.check(rc == 2, "--optimizer adamw8: usage error", err)
    t.check("did you mean 'adamw-8bit'?" in err, "--optimizer adamw8: suggests adamw-8bit", err)
    t.check(err.rstrip().endswith("paged_lion_8bit|paged_lion_32bit)"),
            "--optimizer adamw8: the whole list, to its last name", err)
    rc, _, err = llmem.run("estimate", "--method", "lora", "--lora-targets", "q_proj,vproj")
    t.check(rc == 2 and "did you mean 'v_proj'?" in err, "--lora-targets vproj: suggests v_proj",
            err)
    t.check(err.rstrip().endswith("|all-linear)"), "--lora-targets: the whole list", err)
    rc, _, err = llmem.run("estimate", "--attention", "sdap")
    t.check(rc == 2 and "did you mean 'sdpa'?" in err, "--attention sdap: suggests sdpa", err)
    rc, _, err = llmem.run("estimate", "--optimizer", "zzzzzzzz")
    t.check(rc == 2 and "did you mean" not in err, "--optimizer zzzzzzzz: no suggestion", err)


def check_presets(t, llmem):
    canonical = llmem.json("--model", "meta-llama/Llama-3.1-8B")
    for spelling in ("llama-3.1-8b", "META-LLAMA/LLAMA-3.1-8B", "Meta-Llama/llama-3.1-8B"):
        d = llmem.json("--model", spelling)
        t.check(d["model"] == "meta-llama/Llama-3.1-8B", "--model %s: printed as the "
                "canonical id" % spelling, d["model"])
        t.check(d["peak_allocated_bytes"] == canonical["peak_allocated_bytes"],
                "--model %s: the same estimate" % spelling)
    rc, out, _ = llmem.run("estimate", "--model", "mistralai/mistral-7b-v0.1")
    t.check(rc == 0 and "Model         mistralai/Mistral-7B-v0.1" in out,
            "--model mistralai/mistral-7b-v0.1: the text names the canonical id", out[:200])
    rc, _, err = llmem.run("estimate", "--model", "mistral-7b")
    t.check(rc == 2 and "did you mean 'mistralai/Mistral-7B-v0.1'?" in err,
            "--model mistral-7b: suggests the preset", err)
    rc, _, err = llmem.run("estimate", "--model", "bogus")
    t.check(rc == 2 and "unknown preset 'bogus'" in err and "did you mean" not in err,
            "--model bogus: unknown, no suggestion", err)


def models():
    for preset in json.loads(subprocess.run(
            [sys.argv[1], "models", "--json"], stdout=subprocess.PIPE,
            universal_newlines=True, check=True).stdout):
        yield preset["name"], ["--model", preset["name"]]
    if "no-configs" not in sys.argv[3:] and os.path.isdir(HF_CONFIGS):
        for name in sorted(os.listdir(HF_CONFIGS)):
            if name.endswith(".json"):
                yield name, ["--config", os.path.join(HF_CONFIGS, name)]


def check_lora(t, llmem):
    d = llmem.json("--model", "meta-llama/Llama-3.1-8B", "--method", "lora",
                   "--lora-targets", "all-linear")
    t.check(d["params_trainable"] == 20971520, "all-linear on Llama-3.1-8B: PEFT's 20,971,520",
            d["params_trainable"])
    t.check(d["lora_targets"] == "q_proj,k_proj,v_proj,o_proj,gate_proj,up_proj,down_proj",
            "all-linear: JSON shows the modules", d["lora_targets"])
    rc, out, _ = llmem.run("estimate", "--model", "gpt2", "--method", "lora")
    t.check("lora (rank 8 on c_attn)" in out, "gpt2 default: Setup names c_attn", out)
    # Every preset and config: the default, all-linear (loop experts where
    # grouped-mm refuses it) given back as printed.
    for label, model in models():
        for extra in ([], ["--lora-targets", "all-linear"],
                      ["--lora-targets", "all-linear", "--experts-impl", "loop"]):
            args = model + ["--method", "lora", "--formula", "phased"] + extra
            rc, out, err = llmem.run("estimate", *(args + ["--json"]))
            if rc != 0:
                # --experts-impl is refused on a model without routed experts
                no_experts = "--experts-impl" in extra and "needs a model with routed experts" in err
                t.check(extra != [] and ("all-linear under grouped-mm" in err or no_experts),
                        "%s %s: refused only for all-linear under grouped-mm or experts-impl "
                        "without experts" % (label, " ".join(extra)), err)
                continue
            first = json.loads(out)
            names = first["lora_targets"]
            rest = [a for a in extra if a != "all-linear" and a != "--lora-targets"]
            again = llmem.json(*(model + ["--method", "lora", "--formula", "phased",
                                          "--lora-targets", names] + rest))
            same = all(first[k] == again[k] for k in ("params_trainable",
                                                      "peak_allocated_bytes",
                                                      "peak_device_bytes"))
            t.check(same and again["lora_targets"] == names,
                    "%s %s: lora_targets %s given back, the same estimate"
                    % (label, " ".join(extra), names))
            rc, text, _ = llmem.run("estimate", *args)
            t.check(rc == 0 and ("on %s" % names) in text,
                    "%s %s: the Setup line shows %s" % (label, " ".join(extra), names))


def check_sizes(t, llmem):
    cases = [("80G", 80 * 10**9), ("80gb", 80 * 10**9), ("80GB", 80 * 10**9),
             ("80 GB", 80 * 10**9), ("80Gi", 80 * 2**30), ("80gi", 80 * 2**30),
             ("80GiB", 80 * 2**30), ("80gib", 80 * 2**30), ("512Mi", 512 * 2**20),
             ("1Ti", 2**40), ("1.5T", 15 * 10**11), ("2k", 2000), ("2Ki", 2048),
             ("85899345920", 85899345920)]
    for text, want in cases:
        rc, out, err = llmem.run("estimate", "--capacity", text, "--json")
        got = json.loads(out)["gpu"]["capacity_bytes"] if out else None
        t.check(rc in (0, 3) and got == want, "--capacity %s is %d bytes" % (text, want),
                "exit %d, %r, %s" % (rc, got, err))
    for text in ("80Gx", "80 G B", "G80", "80gigabytes", "1.5", "0G", "-1Gi"):
        rc, _, err = llmem.run("estimate", "--capacity", text)
        t.check(rc == 2 and "Ki, Mi, Gi" in err, "--capacity %s: refused, naming the units"
                % text, err)


GROUPS = {"messages": check_messages, "presets": check_presets, "lora": check_lora,
          "sizes": check_sizes}


def main():
    if len(sys.argv) not in (3, 4) or sys.argv[2] not in GROUPS:
        print("usage: test_input_names.py PATH/TO/llmem %s" % "|".join(GROUPS), file=sys.stderr)
        return 2
    t = Tap()
    GROUPS[sys.argv[2]](t, Llmem(sys.argv[1]))
    return t.finish()


if __name__ == "__main__":
    sys.exit(main())
