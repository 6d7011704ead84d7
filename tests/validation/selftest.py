"""Self-test of the measurement method (asserts and prints).

    /usr/bin/python3 tests/validation/selftest.py [--quick]

1. tracker unit tests with hand-computed byte counts;
2. CUDA autocast emulation: cast caching, per-use casts of frozen weights;
3. training-step cross-checks, to the byte, on several configurations:
   after forward   live = baseline + autograd-saved + loss
   after backward  live = baseline + gradients (= bytes of trainable params)
   after step      live = baseline + gradients
   after zero_grad live = baseline (= params + buffers + states + batch)
   optimizer transient = the torch 2.x foreach temporary (optimizers.py)
4. torch.profiler (profile_memory=True) allocator peak vs tracker peak, on
   configurations where the CPU run is the measured semantics (fp32; the
   torch-2.x InputBuffer emulation switched off for the comparison);
5. meta device vs CPU: identical peaks.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import measure as ms  # noqa: E402
import models as M  # noqa: E402
from live_tracker import LiveTracker, gc_disabled, profiler_peak  # noqa: E402

FAILS = []


def check(name, got, want, tol=0):
    ok = abs(got - want) <= tol
    print("  %-58s %s  got %d  want %d%s" % (name, "ok  " if ok else "FAIL", got, want,
                                              "" if tol == 0 else "  (tol %d)" % tol))
    if not ok:
        FAILS.append(name)
    return ok


# ---------------------------------------------------------------------------
def unit_tests():
    print("1. tracker unit tests")
    tr = LiveTracker()
    with tr:
        tr.set_phase("t")
        a = torch.empty(1000)                  # 4000
        v = a.view(10, 100)                    # view: +0
        b = a * 2                              # 4000
        tr.quiet("q1")
        c = (b + 1).sum()                      # b+1: 4000 transient, sum: 4
        del b
        tr.quiet("q2")
        a.add_(1)                              # in place: +0
        tr.quiet("q3")
        del a, v, c
        tr.quiet("q4")
        lst = torch._foreach_sqrt([torch.ones(10), torch.ones(20)])  # 40+80 (+40+80 inputs)
        tr.quiet("q5")
        del lst
    q = tr.quiet_points
    check("two live tensors", q["q1"], 8000)
    check("transient (b+1) freed, sum kept", q["q2"], 4004)
    check("peak includes the transient", tr.peak, 12004)
    check("in-place op adds nothing", q["q3"], 4004)
    check("all freed", q["q4"], 0)
    check("foreach outputs tracked (inputs freed)", q["q5"], 120)
    tr.close()

    # InputBuffer accumulation: x used twice -> two grads summed by the engine.
    x = torch.randn(1000, requires_grad=True)
    res = {}
    for emu in (False, True):
        tr = LiveTracker(emulate_inplace_accumulate=emu)
        tr.track_existing([x], "param")
        with tr:
            tr.set_phase("forward")
            y = (x * 2).sum() + (x * 3).sum()
            tr.set_phase("backward")
            y.backward()
            del y
        res[emu] = (tr.peak, tr.inplace_accumulations)
        x.grad = None
        tr.close()
    # backward: grad A (4000) + grad B (4000) + x; torch 1.13 sums out of
    # place (+4000 result), torch 2.x adds B into A in place.
    # + 8: the loss scalar and its ones_like seed
    check("InputBuffer sum, torch 1.13 (out of place)", res[False][0], 4000 * 4 + 8)
    check("InputBuffer sum, torch 2.x emulation (in place)", res[True][0], 4000 * 3 + 8)
    check("in-place accumulations detected", res[True][1], 1)

    # bf16 LayerNorm: mean/rstd counted in fp32 (CUDA), not bf16 (CPU)
    xb = torch.randn(4, 8, 16).bfloat16()
    w = torch.ones(16, dtype=torch.bfloat16)
    tr = LiveTracker()
    with tr:
        out = F.layer_norm(xb, (16,), w, w)
    check("bf16 layer_norm peak: out bf16 + mean/rstd fp32", tr.peak,
          4 * 8 * 16 * 2 + 2 * 4 * 8 * 4)
    del out
    tr.close()


# ---------------------------------------------------------------------------
def autocast_tests():
    print("2. CUDA autocast emulation")
    amp = M.CudaAutocastEmu(torch.bfloat16)
    lin = M.Linear(64, 32, False, amp)
    x0 = torch.randn(8, 64, requires_grad=True)
    tr = LiveTracker()
    tr.track_existing([x0, lin.weight], "base")
    with tr:
        x = x0 * 1.0  # an activation (not a leaf): 8*64*4
        with amp.region():
            y1 = lin(x)
            y2 = lin(x)
        tr.quiet("after")
    # trainable weight (leaf requiring grad): one cached bf16 cast, used twice;
    # activation: cast at every use; outputs 2 x (8*32*2)
    base = 8 * 64 * 4 + 64 * 32 * 4
    check("trainable weight cast once, activation cast per use",
          tr.quiet_points["after"] - base,
          8 * 64 * 4 + 64 * 32 * 2 + 2 * 8 * 64 * 2 + 2 * 8 * 32 * 2)
    check("cache hits (second use of the weight)", amp.cache_hits, 1)
    del y1, y2, x
    tr.close()
    x = x0 * 1.0
    lin.weight.requires_grad_(False)
    amp2 = M.CudaAutocastEmu(torch.bfloat16)
    lin._amp[0] = amp2
    tr = LiveTracker()
    tr.track_existing([x0, x, lin.weight], "base")
    with tr:
        with amp2.region():
            y1 = lin(x)
            y2 = lin(x)
        tr.quiet("after")
    # frozen weight: cast at each use and saved by each mm (x needs grad);
    # the activation casts are not saved (the weight needs no grad)
    check("frozen weight recast at every use (saved by each mm)",
          tr.quiet_points["after"] - (2 * 8 * 64 * 4 + 64 * 32 * 4),
          2 * 64 * 32 * 2 + 2 * 8 * 32 * 2)
    del y1, y2
    tr.close()
    # fp32 list: pow on a bf16 tensor runs in fp32
    amp3 = M.CudaAutocastEmu(torch.bfloat16)
    with amp3.region():
        h = torch.randn(4, 4).bfloat16()
        g = M.gelu_new(amp3, h)
    check("gelu_new under autocast returns fp32 (pow on fp32 list)", int(g.dtype == torch.float32), 1)


# ---------------------------------------------------------------------------
STEP_CONFIGS = [
    dict(family="gpt2", hidden=128, layers=2, heads=4, vocab=2048, batch=2, seq=64,
         precision="fp32", optimizer="adamw", dropout=0.1),
    dict(family="gpt2", hidden=128, layers=2, heads=4, vocab=2048, batch=2, seq=64,
         precision="bf16-mixed", optimizer="lion", grad_ckpt="reentrant", dropout=0.1),
    dict(family="gpt2", hidden=128, layers=3, heads=4, vocab=2048, batch=1, seq=128,
         precision="bf16", optimizer="sgd-momentum", method="lora", lora_rank=8),
    dict(family="llama", hidden=128, layers=2, heads=4, kv_heads=2, vocab=2048, batch=2,
         seq=64, precision="bf16-mixed", optimizer="adamw", dropout=0.1),
    dict(family="llama", hidden=128, layers=3, heads=4, kv_heads=1, vocab=2048, batch=2,
         seq=64, precision="fp32", optimizer="adam", method="freeze", freeze_layers=1,
         grad_ckpt="reentrant"),
    dict(family="llama", hidden=128, layers=2, heads=4, kv_heads=4, vocab=2048, batch=1,
         seq=128, precision="bf16", optimizer="sgd", method="lora", lora_rank=16,
         grad_ckpt="reentrant", attn_bias=1, tie_embeddings=1),
]


def _bytes(ts):
    seen = {}
    for t in ts:
        if t is not None:
            seen[t._storage()._cdata] = t._storage().nbytes()
    return sum(seen.values())


def step_tests(configs):
    print("3. training-step cross-checks (to the byte)")
    rows = []
    for kw in configs:
        rc = ms.RunConfig(**kw).normalized()
        r = ms.measure(rc, cross_checks=True)
        # independent expectations from the built objects
        model, opt, batch, _ = ms.build(rc)
        trainable = [p for p in model.parameters() if p.requires_grad]
        exp_grads = _bytes(trainable)
        params = _bytes(model.parameters())
        buffers = _bytes(model.buffers())
        batch_b = _bytes(batch.values())
        # optimizer state bytes: AdamW/Adam 2x, momentum/lion 1x, sgd 0
        mult = {"adamw": 2, "adam": 2, "sgd": 0, "sgd-momentum": 1, "lion": 1}[rc.optimizer]
        exp_states = mult * exp_grads
        q = r["quiet_bytes"]
        b = r["baseline_bytes"]
        label = "%s %s %s %s gc=%s p=%s" % (rc.family, rc.method, rc.precision, rc.optimizer,
                                          rc.grad_ckpt, rc.dropout)
        print(" ", label)
        check("baseline = params + buffers + states + batch", b,
              params + buffers + exp_states + batch_b)
        check("after forward = baseline + saved + loss", q["after_forward"],
              b + r["check_saved_bytes"] + r["check_loss_bytes"])
        check("after backward = baseline + grads(trainable params)", q["after_backward"],
              b + exp_grads)
        check("after step = baseline + grads", q["after_step"], b + r["grads_bytes"])
        check("after zero_grad = baseline", q["after_zero_grad"], b)
        # optimizer transient
        groups = ms.trainer_param_groups(model)
        if rc.optimizer in ("adamw", "adam"):
            exp_tr = max(_bytes(g["params"]) for g in groups)
        elif rc.optimizer == "lion":
            exp_tr = 2 * max(_bytes([p]) for p in trainable)
        else:
            exp_tr = 0
        check("optimizer transient (%s)" % rc.optimizer,
              r["measured_optimizer_peak_bytes"] - q["after_backward"], exp_tr)
        rows.append((label, r["measured_peak_bytes"], r["measured_peak_phase"],
                     r["check_saved_bytes"], len(r["check_saved_host"]),
                     r["inplace_accumulations"]))
    print("  summary: config | peak | phase | autograd-saved bytes after forward |"
          " host-side saved tensors not counted | InputBuffer sums done in place")
    for row in rows:
        print("   ", " | ".join(str(x) for x in row))


# ---------------------------------------------------------------------------
PROFILER_CONFIGS = [
    dict(family="gpt2", hidden=128, layers=2, heads=4, vocab=4096, batch=2, seq=64,
         dropout=0.1),
    dict(family="gpt2", hidden=128, layers=2, heads=4, vocab=4096, batch=2, seq=128,
         grad_ckpt="reentrant", optimizer="sgd"),
    dict(family="llama", hidden=128, layers=2, heads=4, kv_heads=2, vocab=4096, batch=2,
         seq=64, optimizer="adamw"),
    dict(family="llama", hidden=128, layers=3, heads=4, kv_heads=2, vocab=512, batch=2,
         seq=256, optimizer="sgd", grad_ckpt="reentrant", method="lora"),
]


def profiler_tests(configs):
    print("4. torch.profiler(profile_memory=True) vs tracker (CPU semantics, fp32)")
    for kw in configs:
        rc = ms.RunConfig(**kw).normalized()
        model, opt, batch, _ = ms.build(rc)
        ms.train_step(model, opt, batch)
        out = {}
        for emu in (False, True):
            tr = LiveTracker(emulate_inplace_accumulate=emu)
            for cat, ts in ms._baseline_tensors(model, opt, batch):
                tr.track_existing(ts, cat)
            base = tr.quiet("start")

            def fn():
                with tr:
                    ms.train_step(model, opt, batch, tr)
            with gc_disabled():
                ppeak, pend = profiler_peak(fn)
            rep = tr.report()
            out[emu] = (rep["peak_bytes"] - base, ppeak, pend, rep["peak_phase"])
            tr.close()
        d, p, e, ph = out[False]
        label = "%s gc=%s %s, peak in %s" % (rc.family, rc.grad_ckpt, rc.method, ph)
        print(" ", label)
        # The profiler also sees host-side allocations: Python scalars and,
        # under checkpointing, the 5056-byte CPU RNG state each
        # CheckpointFunction stashes (and fork_rng copies in backward).
        k = round((p - d) / 5056) if rc.grad_ckpt != "none" else 0
        check("profiler - tracker - %d x 5056 B RNG stash" % k, p - d - 5056 * k, 0, tol=1024)
        check("profiler end-of-step delta", e, 0, tol=1024)
        print("    tracker peak delta %d, profiler %d; with the torch-2.x in-place "
              "InputBuffer emulation the tracker reports %d" % (d, p, out[True][0]))


# ---------------------------------------------------------------------------
META_CONFIGS = [
    dict(family="gpt2", hidden=128, layers=2, heads=4, vocab=4096, batch=2, seq=64,
         precision="bf16", dropout=0.1),
    dict(family="gpt2", hidden=128, layers=2, heads=4, vocab=4096, batch=2, seq=64,
         precision="bf16-mixed", grad_ckpt="reentrant", method="lora"),
    dict(family="llama", hidden=128, layers=2, heads=4, kv_heads=2, vocab=4096, batch=2,
         seq=64, precision="bf16-mixed", dropout=0.1, optimizer="lion"),
    dict(family="llama", hidden=128, layers=3, heads=4, kv_heads=1, vocab=4096, batch=1,
         seq=128, precision="bf16", method="freeze", freeze_layers=2, optimizer="adam",
         grad_ckpt="reentrant"),
]
KEYS = ("measured_peak_bytes", "measured_peak_phase", "measured_forward_peak_bytes",
        "measured_backward_peak_bytes", "measured_optimizer_peak_bytes", "baseline_bytes")


def meta_tests(configs):
    print("5. meta device vs CPU")
    for kw in configs:
        rc = ms.RunConfig(**kw)
        a = ms.measure(rc)
        b = ms.measure(ms.RunConfig(**dict(kw, device="meta")))
        label = "%s %s %s" % (kw["family"], kw.get("precision"), kw.get("method", "full"))
        same = all(a[k] == b[k] for k in KEYS)
        print("  %-40s %s  cpu %d (%s)  meta %d (%s)" % (
            label, "ok  " if same else "FAIL", a["measured_peak_bytes"],
            a["measured_peak_phase"], b["measured_peak_bytes"], b["measured_peak_phase"]))
        if not same:
            FAILS.append("meta " + label)


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="fewer configurations")
    a = ap.parse_args(argv)
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    t = time.time()
    unit_tests()
    autocast_tests()
    step_tests(STEP_CONFIGS[:3] if a.quick else STEP_CONFIGS)
    profiler_tests(PROFILER_CONFIGS[:2] if a.quick else PROFILER_CONFIGS)
    meta_tests(META_CONFIGS[:2] if a.quick else META_CONFIGS)
    print("selftest: %s (%.0f s)" % ("FAILED: " + ", ".join(FAILS) if FAILS else "all passed",
                                   time.time() - t))
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())
