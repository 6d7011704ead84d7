#!/usr/bin/env python3
"""The GPU comparison's path without a GPU: a fake measured CSV built from
llmem's own estimates, each level scaled by a known factor, must come back
from ``run_gpu.py compare`` as exactly those errors, with the phases agreeing,
and the gate must trip.

    python3 tests/validation/gpu/test_compare.py build/cli/llmem

Exit status 0 on success, 1 on a failed check, 77 (skipped) when llmem was
built without its Hugging Face config reader (``--config`` unsupported).
"""

import csv
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import run_gpu as R  # noqa: E402

# Two small models in the shape of transformers' config.to_dict().
CONFIGS = {
    "llama-tiny": {"model_type": "llama", "architectures": ["LlamaForCausalLM"],
                   "hidden_size": 256, "num_hidden_layers": 2, "num_attention_heads": 8,
                   "num_key_value_heads": 2, "intermediate_size": 688, "vocab_size": 4096,
                   "max_position_embeddings": 2048, "rms_norm_eps": 1e-5,
                   "tie_word_embeddings": False, "hidden_act": "silu",
                   "attention_bias": False, "mlp_bias": False, "rope_theta": 10000.0,
                   "torch_dtype": "float32", "use_cache": False},
    "gpt2-tiny": {"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"], "n_embd": 128,
                  "n_layer": 2, "n_head": 4, "n_positions": 1024, "n_inner": None,
                  "vocab_size": 8192, "activation_function": "gelu_new",
                  "layer_norm_epsilon": 1e-5, "tie_word_embeddings": True,
                  "torch_dtype": "float32", "use_cache": False},
}

# Measured = estimate x factor, per level: the errors |e - m| / m follow.
FACTORS = {"allocated": 1.02, "reserved": 0.99, "device": 1.05}
ROWS = [
    dict(id="t01", model="llama-tiny", batch=2, seq=512, precision="bf16-mixed",
         optimizer="adamw_torch_fused", grad_ckpt="non-reentrant", attention="sdpa",
         method="lora", lora_rank=16, lora_targets="q_proj,v_proj", lora_dropout=0.05),
    dict(id="t02", model="gpt2-tiny", batch=2, seq=256, precision="fp32",
         optimizer="adamw_torch", grad_ckpt="none", attention="eager", method="full",
         lora_rank=0, lora_targets="", lora_dropout=0.0),
]

failures = []


def check(ok, what, detail=""):
    print("%s - %s" % ("ok" if ok else "not ok", what))
    if not ok:
        failures.append(what)
        if detail:
            print("  # %s" % str(detail).replace("\n", "\n  # "))


def main():
    llmem = sys.argv[1]
    with tempfile.TemporaryDirectory(prefix="llmem-gpu-test-") as d:
        probe = os.path.join(d, "probe")
        os.mkdir(probe)
        with open(os.path.join(probe, "config.json"), "w") as f:
            json.dump(CONFIGS["llama-tiny"], f)
        p = subprocess.run([llmem, "estimate", "--config", probe, "--json"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           universal_newlines=True)
        if p.returncode != 0 and "not supported" in p.stderr.lower():
            print("# skipped: llmem has no Hugging Face config reader (%s)" % p.stderr.strip())
            return 77
        check(p.returncode == 0, "llmem reads a transformers config", p.stderr)

        rows = []
        for spec in ROWS:
            row = {k: str(v) for k, v in spec.items()}
            row["hf_config"] = json.dumps(CONFIGS[spec["model"]], sort_keys=True)
            est = R._estimate(llmem, row, 60)
            for level, col in R.MEASURED.items():
                row[col] = int(round(est[level] * FACTORS[level]))
            row["measured_peak_phase"] = R.C.coarse_phase(est["phase"])
            for ph in R.PHASES:
                row["measured_%s_peak_bytes" % ph] = int(est["phases"].get(ph, 0))
                row["reserved_%s_peak_bytes" % ph] = row["reserved_peak_bytes"]
                row["device_%s_used_bytes" % ph] = row["device_used_bytes"]
            rows.append(row)
        path = os.path.join(d, "fake.csv")
        R.write_csv(path, rows)
        with open(path, newline="") as f:
            back = list(csv.DictReader(f))
        check([r["id"] for r in back] == ["t01", "t02"], "the CSV round-trips its rows")
        check(json.loads(back[0]["hf_config"]) == CONFIGS["llama-tiny"],
              "the config survives the CSV's quoting")

        run = [sys.executable, os.path.join(HERE, "run_gpu.py"), "compare", "--llmem", llmem,
               "--csv", path]
        p = subprocess.run(run, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           universal_newlines=True)
        check(p.returncode == 0, "compare succeeds without thresholds", p.stderr)
        out = p.stdout
        for level, factor in FACTORS.items():
            err = abs(1.0 - factor) / factor * 100.0
            line = "%-9s rows 2: median error %.2f%%, p95 %.2f%%, max %.2f%%" % (
                level, err, err, err)
            check(line in out, "the %s level's errors come back as %.2f%%" % (level, err), out)
        check("phase agrees on 2/2 rows" in out, "the phases agree", out)
        check(all(r in out for r in ("t01", "t02")), "each row is listed", out)

        p = subprocess.run(run + ["--max-median", "1.0", "--quiet"], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, universal_newlines=True)
        check(p.returncode == 1 and "FAIL" in p.stderr,
              "a median above --max-median fails (allocated: 1.96%)", (p.returncode, p.stderr))
        p = subprocess.run(run + ["--max-error", "2.5", "--quiet"], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, universal_newlines=True)
        check(p.returncode == 0, "errors under --max-error pass", p.stderr)

        broken = os.path.join(d, "broken.csv")
        with open(broken, "w") as f:
            f.write("id,model\nx,y\n")
        p = subprocess.run([sys.executable, os.path.join(HERE, "run_gpu.py"), "compare",
                            "--llmem", llmem, "--csv", broken], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, universal_newlines=True)
        check(p.returncode == 2, "a CSV without the measured columns is refused", p.stderr)
    print("%d check(s) failed" % len(failures) if failures else "all checks passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
