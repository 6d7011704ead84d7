#!/usr/bin/env python3
"""Ground truth on a real GPU: Hugging Face models trained one step on CUDA,
their memory per phase, and llmem's estimate of the same runs.

    # on a machine with one CUDA GPU, torch, transformers and peft (no downloads:
    # the models are built from configs with random weights):
    python3 tests/validation/gpu/run_gpu.py measure --out tests/validation/gpu/gpu.csv
    python3 tests/validation/gpu/run_gpu.py measure --only g01,l03 --out /tmp/x.csv
    python3 tests/validation/gpu/run_gpu.py list
    # anywhere (python3 standard library only):
    python3 tests/validation/gpu/run_gpu.py compare --llmem build/cli/llmem \\
        --csv tests/validation/gpu/gpu.csv

``measure`` runs each row of ROWS as the Hugging Face Trainer would (model
from its config with ``attn_implementation``; PEFT LoRA; gradient
checkpointing with the row's ``use_reentrant`` and, for LoRA,
``enable_input_require_grads``; the Trainer's two AdamW parameter groups with
``fused=True`` or ``foreach=True``; bf16-mixed as accelerate's
``torch.autocast("cuda", bfloat16)`` around the forward and loss, pure bf16
as a bf16 model; ``use_cache=False``; the batch ``input_ids``,
``attention_mask`` (no padding), ``labels``, int64 on the GPU): one warm-up
step with the same batch (the optimizer states, and the caching allocator's
segments as they are in steady state), then one measured step whose three
phases -- forward with the loss, backward, ``optimizer.step()`` with
``zero_grad(set_to_none=True)`` -- each start with
``torch.cuda.reset_peak_memory_stats()`` and end with a synchronize, after
which it records:

* ``torch.cuda.max_memory_allocated()`` (what llmem's *allocated* level
  estimates),
* ``torch.cuda.max_memory_reserved()`` (its *reserved* level),
* the device's used memory from NVML (pynvml, or ``torch.cuda.mem_get_info``
  without it) minus what was used before this process created its CUDA
  context (its *device* level).  NVML reports the current use, not a peak:
  it is read at the end of each phase, when the caching allocator still
  holds what the phase reserved.

One CSV row per run; ``hf_config`` holds the model's ``config.json`` so the
comparison needs nothing else.  ``compare`` runs ``llmem estimate --config``
on it with the row's setup and prints, for each of the three levels, the
summary compare.py prints for the CPU grid (median, p95, max relative error,
and the phase agreement for the allocated level).

The grid is sized for an H100/H200 (80-141 GB) to finish in well under 8
minutes; ``--budget-s`` stops before a row would start past the budget.
"""

from __future__ import annotations

import argparse
import csv
import gc
import json
import os
import statistics
import sys
import tempfile
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import compare as C  # noqa: E402  (stdlib only: the CPU grid's comparison)

GIB = 1 << 30

# Model architectures (transformers config classes and their fields).
MODELS = {
    "gpt2": ("GPT2Config", dict(n_embd=768, n_layer=12, n_head=12, n_positions=1024,
                                vocab_size=50257)),
    "llama-1b": ("LlamaConfig", dict(hidden_size=2048, num_hidden_layers=16,
                                     num_attention_heads=32, num_key_value_heads=8,
                                     intermediate_size=8192, vocab_size=128256,
                                     max_position_embeddings=131072, rms_norm_eps=1e-5,
                                     tie_word_embeddings=True, rope_theta=500000.0)),
    "qwen2-0.5b": ("Qwen2Config", dict(hidden_size=896, num_hidden_layers=24,
                                       num_attention_heads=14, num_key_value_heads=2,
                                       intermediate_size=4864, vocab_size=151936,
                                       max_position_embeddings=32768, rms_norm_eps=1e-6,
                                       tie_word_embeddings=True, rope_theta=1000000.0)),
    "phi3-mini": ("Phi3Config", dict(hidden_size=3072, num_hidden_layers=32,
                                     num_attention_heads=32, num_key_value_heads=32,
                                     intermediate_size=8192, vocab_size=32064,
                                     max_position_embeddings=4096, rms_norm_eps=1e-5,
                                     tie_word_embeddings=False)),
    # Phi-3-mini-4k's own window (config.json: sliding_window 2047): from seq 2047
    # on SDPA gets a [B, 1, S, S] mask and each layer saves a bias.
    "phi3-mini-4k": ("Phi3Config", dict(hidden_size=3072, num_hidden_layers=32,
                                        num_attention_heads=32, num_key_value_heads=32,
                                        intermediate_size=8192, vocab_size=32064,
                                        max_position_embeddings=4096, rms_norm_eps=1e-5,
                                        tie_word_embeddings=False, sliding_window=2047)),
    "mistral-7b-v0.1": ("MistralConfig", dict(hidden_size=4096, num_hidden_layers=32,
                                              num_attention_heads=32, num_key_value_heads=8,
                                              intermediate_size=14336, vocab_size=32000,
                                              max_position_embeddings=32768, rms_norm_eps=1e-5,
                                              tie_word_embeddings=False, sliding_window=4096)),
    "llama-8b": ("LlamaConfig", dict(hidden_size=4096, num_hidden_layers=32,
                                     num_attention_heads=32, num_key_value_heads=8,
                                     intermediate_size=14336, vocab_size=128256,
                                     max_position_embeddings=131072, rms_norm_eps=1e-5,
                                     tie_word_embeddings=False, rope_theta=500000.0)),
    # Other families, each a published checkpoint's shape (its config.json), or a
    # few layers of it where the MoE layers make the whole model slow to build.
    "gemma-2-2b": ("Gemma2Config", dict(hidden_size=2304, num_hidden_layers=26,
                                        num_attention_heads=8, num_key_value_heads=4,
                                        head_dim=256, intermediate_size=9216, vocab_size=256000,
                                        max_position_embeddings=8192, sliding_window=4096,
                                        query_pre_attn_scalar=256, attn_logit_softcapping=50.0,
                                        final_logit_softcapping=30.0,
                                        hidden_activation="gelu_pytorch_tanh",
                                        tie_word_embeddings=True)),
    "qwen3-0.6b": ("Qwen3Config", dict(hidden_size=1024, num_hidden_layers=28,
                                       num_attention_heads=16, num_key_value_heads=8,
                                       head_dim=128, intermediate_size=3072, vocab_size=151936,
                                       max_position_embeddings=40960, rms_norm_eps=1e-6,
                                       tie_word_embeddings=True, rope_theta=1000000.0)),
    "mixtral-4l": ("MixtralConfig", dict(hidden_size=1024, num_hidden_layers=4,
                                         num_attention_heads=16, num_key_value_heads=4,
                                         intermediate_size=3584, num_local_experts=8,
                                         num_experts_per_tok=2, vocab_size=32000,
                                         max_position_embeddings=32768, rms_norm_eps=1e-5,
                                         tie_word_embeddings=False)),
    "qwen2-moe-4l": ("Qwen2MoeConfig", dict(hidden_size=1024, num_hidden_layers=4,
                                            num_attention_heads=16, num_key_value_heads=16,
                                            intermediate_size=2816, moe_intermediate_size=512,
                                            shared_expert_intermediate_size=2048, num_experts=16,
                                            num_experts_per_tok=4, vocab_size=151936,
                                            max_position_embeddings=8192,
                                            tie_word_embeddings=False)),
    "opt-350m": ("OPTConfig", dict(hidden_size=1024, num_hidden_layers=24, ffn_dim=4096,
                                   num_attention_heads=16, word_embed_proj_dim=512,
                                   vocab_size=50272, max_position_embeddings=2048,
                                   do_layer_norm_before=False, dropout=0.1)),
    "phi-2": ("PhiConfig", dict(hidden_size=2560, num_hidden_layers=32, num_attention_heads=32,
                                intermediate_size=10240, partial_rotary_factor=0.4,
                                vocab_size=51200, max_position_embeddings=2048, resid_pdrop=0.1,
                                tie_word_embeddings=False)),
    "bloom-560m": ("BloomConfig", dict(hidden_size=1024, n_layer=24, n_head=16,
                                       vocab_size=250880)),
    "starcoder2-3b": ("Starcoder2Config", dict(hidden_size=3072, num_hidden_layers=30,
                                               num_attention_heads=24, num_key_value_heads=2,
                                               intermediate_size=12288, vocab_size=49152,
                                               max_position_embeddings=16384,
                                               sliding_window=4096, use_bias=True,
                                               norm_epsilon=1e-5, residual_dropout=0.1,
                                               embedding_dropout=0.1, attention_dropout=0.1,
                                               rope_theta=999999.4420358813)),
    "deepseek-v2-3l": ("DeepseekV2Config", dict(hidden_size=1024, num_hidden_layers=3,
                                                num_attention_heads=16, num_key_value_heads=16,
                                                intermediate_size=2816, moe_intermediate_size=512,
                                                n_routed_experts=16, n_shared_experts=2,
                                                num_experts_per_tok=4, first_k_dense_replace=1,
                                                kv_lora_rank=256, q_lora_rank=None,
                                                qk_nope_head_dim=64, qk_rope_head_dim=32,
                                                v_head_dim=64, vocab_size=32000,
                                                max_position_embeddings=4096,
                                                tie_word_embeddings=False)),
}

ALL_LINEARS = "q_proj,k_proj,v_proj,o_proj,gate_proj,up_proj,down_proj"

# id, model, batch, seq, precision, optim (the Trainer's name), grad_ckpt,
# attention, method, lora (rank, targets, dropout) or None
ROWS = [
    ("g01", "gpt2", 4, 1024, "fp32", "adamw_torch", "none", "eager", "full", None),
    ("g02", "gpt2", 8, 1024, "bf16-mixed", "adamw_torch_fused", "none", "sdpa", "full", None),
    ("l01", "llama-1b", 4, 2048, "bf16-mixed", "adamw_torch_fused", "none", "sdpa", "full", None),
    ("l02", "llama-1b", 2, 2048, "bf16-mixed", "adamw_torch", "none", "eager", "full", None),
    ("l03", "llama-1b", 8, 2048, "bf16-mixed", "adamw_torch_fused", "non-reentrant", "sdpa",
     "full", None),
    ("l04", "llama-1b", 8, 2048, "bf16-mixed", "adamw_torch_fused", "reentrant", "sdpa",
     "full", None),
    ("l05", "llama-1b", 2, 1024, "fp32", "adamw_torch_fused", "none", "sdpa", "full", None),
    ("l06", "llama-1b", 4, 2048, "bf16", "adamw_torch", "none", "sdpa", "full", None),
    ("l07", "llama-1b", 4, 2048, "bf16-mixed", "adamw_torch_fused", "none", "sdpa", "lora",
     (16, ALL_LINEARS, 0.05)),
    ("l08", "llama-1b", 8, 2048, "bf16-mixed", "adamw_torch_fused", "non-reentrant", "sdpa",
     "lora", (16, ALL_LINEARS, 0.05)),
    ("q01", "qwen2-0.5b", 4, 2048, "bf16-mixed", "adamw_torch_fused", "none", "sdpa", "full",
     None),
    ("q02", "qwen2-0.5b", 2, 1024, "fp32", "adamw_torch", "none", "eager", "full", None),
    ("p01", "phi3-mini", 2, 2048, "bf16-mixed", "adamw_torch_fused", "none", "sdpa", "full",
     None),
    ("w01", "phi3-mini-4k", 2, 2048, "bf16-mixed", "adamw_torch_fused", "none", "sdpa", "full",
     None),
    ("w02", "mistral-7b-v0.1", 1, 4096, "bf16", "adamw_torch_fused", "none", "sdpa", "lora",
     (16, "q_proj,k_proj,v_proj,o_proj", 0.05)),
    ("b01", "llama-8b", 2, 4096, "bf16", "adamw_torch_fused", "non-reentrant", "sdpa", "lora",
     (16, "q_proj,k_proj,v_proj,o_proj", 0.05)),
    ("b02", "llama-8b", 1, 2048, "bf16", "adamw_torch_fused", "non-reentrant", "sdpa", "full",
     None),
    # Every other family on the phased model, after the rows above (a budget cut
    # drops these first).
    ("x01", "gemma-2-2b", 1, 2048, "bf16-mixed", "adamw_torch_fused", "none", "eager", "full",
     None),
    ("x02", "gemma-2-2b", 1, 4608, "bf16", "adamw_torch_fused", "non-reentrant", "sdpa", "lora",
     (16, "q_proj,k_proj,v_proj,o_proj", 0.05)),
    ("x03", "qwen3-0.6b", 4, 2048, "bf16-mixed", "adamw_torch_fused", "none", "sdpa", "full",
     None),
    ("x04", "mixtral-4l", 4, 1024, "bf16-mixed", "adamw_torch_fused", "none", "sdpa", "full",
     None),
    ("x05", "qwen2-moe-4l", 2, 1024, "bf16-mixed", "adamw_torch_fused", "none", "sdpa", "full",
     None),
    ("x06", "opt-350m", 4, 1024, "bf16-mixed", "adamw_torch_fused", "none", "sdpa", "full", None),
    ("x07", "phi-2", 2, 2048, "bf16-mixed", "adamw_torch_fused", "reentrant", "sdpa", "full",
     None),
    ("x08", "bloom-560m", 2, 1024, "bf16-mixed", "adamw_torch", "none", "eager", "full", None),
    ("x09", "starcoder2-3b", 1, 2048, "bf16", "adamw_torch_fused", "non-reentrant", "sdpa",
     "lora", (16, "q_proj,k_proj,v_proj,o_proj", 0.05)),
    ("x10", "deepseek-v2-3l", 2, 1024, "bf16-mixed", "adamw_torch_fused", "none", "eager", "full",
     None),
]

PHASES = ("forward", "backward", "optimizer")
LEVELS = ("allocated", "reserved", "device")

COLUMNS = (["id", "model", "hf_config", "batch", "seq", "precision", "optimizer",
            "grad_ckpt", "attention", "method", "lora_rank", "lora_targets", "lora_dropout",
            "measured_peak_bytes", "measured_peak_phase"]
           + ["measured_%s_peak_bytes" % p for p in PHASES]
           + ["reserved_peak_bytes"] + ["reserved_%s_peak_bytes" % p for p in PHASES]
           + ["device_used_bytes"] + ["device_%s_used_bytes" % p for p in PHASES]
           + ["baseline_bytes", "context_bytes", "seconds", "gpu", "torch", "cuda", "cudnn",
              "transformers", "peft"])


# ---------------------------------------------------------------------------
# measure (needs a CUDA GPU, torch, transformers, peft)
# ---------------------------------------------------------------------------

class DeviceMemory:
    """The device's used bytes: NVML when pynvml is installed, else
    torch.cuda.mem_get_info (total - free, the same driver figure)."""

    def __init__(self, index):
        self.index = index
        self.nvml = None
        try:
            import pynvml
            pynvml.nvmlInit()
            self.nvml = pynvml
            self.handle = pynvml.nvmlDeviceGetHandleByIndex(index)
        except Exception:  # noqa: BLE001 - no NVML: fall back to the runtime
            self.nvml = None

    def used(self):
        if self.nvml is not None:
            return int(self.nvml.nvmlDeviceGetMemoryInfo(self.handle).used)
        import torch
        free, total = torch.cuda.mem_get_info(self.index)
        return int(total - free)


def _build(row, torch, transformers):
    rid, model_name, batch, seq, precision, optim, ckpt, attention, method, lora = row
    cls_name, fields = MODELS[model_name]
    try:
        config = getattr(transformers, cls_name)(**fields)
    except (TypeError, ValueError):  # a release that takes the RoPE base in rope_parameters
        fields = dict(fields)
        theta = fields.pop("rope_theta", None)
        if theta is None:
            raise
        fields["rope_parameters"] = {"rope_type": "default", "rope_theta": theta}
        config = getattr(transformers, cls_name)(**fields)
    config.use_cache = False
    dtype = torch.bfloat16 if precision == "bf16" else torch.float32
    with torch.device("cuda"):
        try:  # transformers >= 4.56 spells it dtype, older ones torch_dtype
            model = transformers.AutoModelForCausalLM.from_config(
                config, attn_implementation=attention, dtype=dtype)
        except TypeError:
            model = transformers.AutoModelForCausalLM.from_config(
                config, attn_implementation=attention, torch_dtype=dtype)
    model.train()
    if ckpt != "none":
        model.gradient_checkpointing_enable(
            gradient_checkpointing_kwargs={"use_reentrant": ckpt == "reentrant"})
    if method == "lora":
        import peft
        rank, targets, dropout = lora
        if ckpt != "none":
            model.enable_input_require_grads()
        model = peft.get_peft_model(model, peft.LoraConfig(
            r=rank, lora_alpha=2 * rank, lora_dropout=dropout,
            target_modules=targets.split(","), task_type="CAUSAL_LM"))
    # Trainer.create_optimizer: no weight decay on biases and norm weights.
    decay, no_decay = [], []
    for name, p in model.named_parameters():
        if not p.requires_grad:
            continue
        lname = name.lower()
        (no_decay if ("bias" in lname or "norm" in lname or "ln_" in lname) else decay).append(p)
    groups = [g for g in ({"params": decay, "weight_decay": 0.0},
                          {"params": no_decay, "weight_decay": 0.0}) if g["params"]]
    impl = {"fused": True} if optim == "adamw_torch_fused" else {"foreach": True}
    opt = torch.optim.AdamW(groups, lr=1e-5, **impl)
    gen = torch.Generator(device="cuda").manual_seed(0)
    ids = torch.randint(0, config.vocab_size, (batch, seq), device="cuda", generator=gen)
    data = {"input_ids": ids, "attention_mask": torch.ones_like(ids), "labels": ids.clone()}
    # What building the model cached is not the step's: the warm-up step then
    # fills the allocator's pool as training keeps it.
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    return model, opt, data, config


def _step(model, opt, data, precision, torch, probe=None):
    """One Trainer step; probe(phase) closes each phase when given."""
    def phase_start():
        if probe is not None:
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()

    def phase_end(name):
        if probe is not None:
            torch.cuda.synchronize()
            probe(name)

    phase_start()
    if precision == "bf16-mixed":
        with torch.autocast("cuda", dtype=torch.bfloat16):
            out = model(**data)
    else:
        out = model(**data)
    loss = out.loss
    del out  # Trainer.compute_loss keeps the loss only
    phase_end("forward")
    phase_start()
    loss.backward()
    del loss
    phase_end("backward")
    phase_start()
    opt.step()
    opt.zero_grad(set_to_none=True)
    phase_end("optimizer")


def measure_row(row, device, idle, torch, transformers):
    t0 = time.time()
    model, opt, data, config = _build(row, torch, transformers)
    _step(model, opt, data, row[4], torch)  # warm-up: states, segments
    torch.cuda.synchronize()
    res = {"baseline_bytes": torch.cuda.memory_allocated()}
    alloc, reserved, used = {}, {}, {}

    def probe(name):
        alloc[name] = torch.cuda.max_memory_allocated()
        reserved[name] = torch.cuda.max_memory_reserved()
        used[name] = device.used() - idle

    _step(model, opt, data, row[4], torch, probe)
    peak_phase = max(PHASES, key=lambda p: alloc[p])
    res.update({
        "measured_peak_bytes": max(alloc.values()), "measured_peak_phase": peak_phase,
        "reserved_peak_bytes": max(reserved.values()), "device_used_bytes": max(used.values()),
        "hf_config": json.dumps(config.to_dict(), sort_keys=True, default=str),
        "seconds": round(time.time() - t0, 1),
    })
    for p in PHASES:
        res["measured_%s_peak_bytes" % p] = alloc[p]
        res["reserved_%s_peak_bytes" % p] = reserved[p]
        res["device_%s_used_bytes" % p] = used[p]
    del model, opt, data
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    return res


def cmd_measure(a):
    try:
        import torch
        import transformers
    except ImportError as e:
        print("run_gpu.py: measure needs torch and transformers (and peft for the LoRA "
              "rows): %s" % e, file=sys.stderr)
        return 2
    try:
        import peft
        peft_version = peft.__version__
    except ImportError:
        peft_version = ""
    if not torch.cuda.is_available():
        print("run_gpu.py: no CUDA device", file=sys.stderr)
        return 2
    index = torch.cuda.current_device()
    device = DeviceMemory(index)
    idle = device.used()  # before this process's CUDA context exists
    torch.cuda.init()
    torch.empty(1, device="cuda")
    torch.cuda.synchronize()
    context = device.used() - idle - torch.cuda.memory_reserved()
    info = {"gpu": torch.cuda.get_device_name(index), "torch": torch.__version__,
            "cuda": torch.version.cuda or "", "cudnn": str(torch.backends.cudnn.version()),
            "transformers": transformers.__version__, "peft": peft_version,
            "context_bytes": context}
    only = {x for v in a.only for x in v.split(",") if x}
    rows = [r for r in ROWS if not only or r[0] in only]
    out_rows, failed = [], []
    t_all = time.time()
    print("run_gpu.py: %s, torch %s (CUDA %s), transformers %s, peft %s; context %.0f MiB"
          % (info["gpu"], info["torch"], info["cuda"], info["transformers"], info["peft"],
             context / (1 << 20)), flush=True)
    for i, row in enumerate(rows):
        if a.budget_s and time.time() - t_all > a.budget_s:
            print("run_gpu.py: budget of %d s spent; %d rows not run" % (a.budget_s,
                                                                     len(rows) - i))
            break
        rid, model_name, batch, seq, precision, optim, ckpt, attention, method, lora = row
        rec = {"id": rid, "model": model_name, "batch": batch, "seq": seq,
               "precision": precision, "optimizer": optim, "grad_ckpt": ckpt,
               "attention": attention, "method": method,
               "lora_rank": lora[0] if lora else 0, "lora_targets": lora[1] if lora else "",
               "lora_dropout": lora[2] if lora else 0.0}
        rec.update(info)
        if method == "lora" and not peft_version:
            print("run_gpu.py: %s: skipped, peft is not installed" % rid)
            continue
        why = None
        try:
            rec.update(measure_row(row, device, idle, torch, transformers))
        except torch.cuda.OutOfMemoryError as e:  # a row too large for this GPU
            why = "out of memory (%s)" % str(e).splitlines()[0]
        except Exception:  # noqa: BLE001 - a row this transformers cannot build or run
            why = traceback.format_exc()
        if why is not None:  # released past the except: its traceback holds the row's tensors
            print("run_gpu.py: %s: failed: %s" % (rid, why), flush=True)
            failed.append((rid, why))
            with open(a.out + ".failed.txt", "w") as f:
                for fid, fwhy in failed:
                    f.write("## %s\n%s\n" % (fid, fwhy))
            _release(torch)
            continue
        out_rows.append(rec)
        write_csv(a.out, out_rows)
        print("[%2d/%d] %s %-10s b%d s%-5d %-10s %-17s %-13s %-5s %-4s allocated %6.2f GiB "
              "reserved %6.2f GiB device %6.2f GiB %-9s (%.1f s)" % (
                  i + 1, len(rows), rid, model_name, batch, seq, precision, optim, ckpt,
                  attention, method, rec["measured_peak_bytes"] / GIB,
                  rec["reserved_peak_bytes"] / GIB, rec["device_used_bytes"] / GIB,
                  rec["measured_peak_phase"], rec["seconds"]), flush=True)
    print("run_gpu.py: %d rows in %.0f s -> %s" % (len(out_rows), time.time() - t_all, a.out))
    if failed:
        print("run_gpu.py: %d rows failed: %s (%s)" % (
            len(failed), ", ".join(r for r, _ in failed), a.out + ".failed.txt"))
    return 0


def _release(torch):
    """What a failed row left on the GPU, let go before the next."""
    gc.collect()
    torch.cuda.synchronize()
    torch.cuda.empty_cache()


def write_csv(path, rows):
    tmp = path + ".tmp"
    with open(tmp, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS, lineterminator="\n")
        w.writeheader()
        for r in rows:
            w.writerow({k: r.get(k, "") for k in COLUMNS})
    os.replace(tmp, path)


# ---------------------------------------------------------------------------
# compare (python3 standard library only)
# ---------------------------------------------------------------------------

def llmem_command(llmem, config_dir, row):
    cmd = [llmem, "estimate", "--config", config_dir,
           "--batch", row["batch"], "--seq", row["seq"],
           "--precision", row["precision"], "--optimizer", row["optimizer"],
           "--grad-ckpt", row["grad_ckpt"], "--attention", row["attention"],
           "--method", row["method"]]
    if row["method"] in ("lora", "qlora"):
        cmd += ["--lora-rank", row["lora_rank"], "--lora-targets", row["lora_targets"],
                "--lora-dropout", row["lora_dropout"]]
    return cmd + ["--json"]


def _estimate(llmem, row, timeout):
    """llmem's estimate of one row: its config written to a directory of its own."""
    with tempfile.TemporaryDirectory(prefix="llmem-gpu-") as d:
        with open(os.path.join(d, "config.json"), "w") as f:
            f.write(row["hf_config"])
        peak, phase, phases, doc = C.run_llmem(llmem_command(llmem, d, row), timeout,
                                               want_doc=True)
    for key in ("peak_reserved_bytes", "peak_device_bytes"):
        if not isinstance(doc.get(key), (int, float)):
            raise C.LlmemError("JSON has no number %r" % key)
    return {"allocated": peak, "reserved": float(doc["peak_reserved_bytes"]),
            "device": float(doc["peak_device_bytes"]), "phase": phase, "phases": phases}


MEASURED = {"allocated": "measured_peak_bytes", "reserved": "reserved_peak_bytes",
            "device": "device_used_bytes"}


def cmd_compare(a):
    try:
        with open(a.csv, newline="") as f:
            rows = list(csv.DictReader(f))
    except OSError as e:
        print("run_gpu.py: %s" % e, file=sys.stderr)
        return 2
    missing = [c for c in COLUMNS[:22] if rows and c not in rows[0]]
    if not rows or missing:
        print("run_gpu.py: %s: no rows or missing columns %s" % (a.csv, missing),
              file=sys.stderr)
        return 2
    errors = {lvl: [] for lvl in LEVELS}
    agree = 0
    if not a.quiet:
        print("%-4s %-10s %-10s %-17s %-13s %-5s %-4s  %s" % (
            "id", "model", "precision", "optimizer", "grad_ckpt", "attn", "meth",
            "  ".join("%-22s" % ("%s meas/est err%%" % lvl) for lvl in LEVELS)))
    for r in rows:
        try:
            est = _estimate(a.llmem, r, a.timeout)
        except C.LlmemError as e:
            print("run_gpu.py: llmem failed on row %s: %s" % (r["id"], e), file=sys.stderr)
            return 2
        cells = []
        for lvl in LEVELS:
            meas = float(r[MEASURED[lvl]])
            err = abs(est[lvl] - meas) / meas * 100.0 if meas > 0 else float("inf")
            errors[lvl].append((err, r["id"]))
            cells.append("%7.2f/%7.2f %6.2f" % (meas / GIB, est[lvl] / GIB, err))
        same = C.coarse_phase(est["phase"] or "") == r["measured_peak_phase"].strip().lower()
        agree += same
        if not a.quiet:
            print("%-4s %-10s %-10s %-17s %-13s %-5s %-4s  %s%s" % (
                r["id"], r["model"], r["precision"], r["optimizer"], r["grad_ckpt"],
                r["attention"], r["method"], "  ".join("%-22s" % c for c in cells),
                "" if same else "  * phase %s/%s" % (r["measured_peak_phase"], est["phase"])))
    for lvl in LEVELS:
        errs = [e for e, _ in errors[lvl]]
        worst = max(errors[lvl])
        print("%-9s rows %d: median error %.2f%%, p95 %.2f%%, max %.2f%% (row %s)%s" % (
            lvl, len(errs), statistics.median(errs), C.percentile(errs, 95), worst[0], worst[1],
            "; phase agrees on %d/%d rows" % (agree, len(rows)) if lvl == "allocated" else ""))
    errs = [e for e, _ in errors["allocated"]]
    failed = []
    if a.max_median is not None and statistics.median(errs) > a.max_median:
        failed.append("allocated median %.2f%% > %.2f%%" % (statistics.median(errs),
                                                            a.max_median))
    if a.max_error is not None and max(errs) > a.max_error:
        failed.append("allocated max %.2f%% > %.2f%%" % (max(errs), a.max_error))
    if failed:
        print("run_gpu.py: FAIL: " + "; ".join(failed), file=sys.stderr)
        return 1
    return 0


def cmd_list(a):
    for row in ROWS:
        print(*row)
    return 0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd")
    m = sub.add_parser("measure", help="run the grid on this machine's CUDA GPU")
    m.add_argument("--out", default=os.path.join(HERE, "gpu.csv"))
    m.add_argument("--only", action="append", default=[])
    m.add_argument("--budget-s", type=int, default=450,
                   help="start no row after this many seconds (0: no limit)")
    c = sub.add_parser("compare", help="compare a measured CSV with llmem")
    c.add_argument("--llmem", required=True)
    c.add_argument("--csv", default=os.path.join(HERE, "gpu.csv"))
    c.add_argument("--max-median", type=float, default=None, metavar="PCT")
    c.add_argument("--max-error", type=float, default=None, metavar="PCT")
    c.add_argument("--timeout", type=float, default=60.0)
    c.add_argument("--quiet", action="store_true")
    sub.add_parser("list", help="print the grid")
    a = ap.parse_args(argv)
    if a.cmd == "measure":
        return cmd_measure(a)
    if a.cmd == "compare":
        return cmd_compare(a)
    if a.cmd == "list":
        return cmd_list(a)
    ap.print_help()
    return 2


if __name__ == "__main__":
    sys.exit(main())
