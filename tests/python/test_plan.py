# SPDX-License-Identifier: MIT
"""The planner and the largest fitting batch from Python equal `llmem plan
--json` and `llmem estimate --max --json`."""
import json
import os
import subprocess

import pytest

import llmem

LLAMA_8B = "meta-llama/Llama-3.1-8B"
LLAMA_1B = "meta-llama/Llama-3.2-1B"
GIB = 1 << 30
# `llmem plan` keeps this share of the layouts; ask for all of them.
TOP_ALL = 100000


@pytest.fixture
def llmem_json():
    """Run `llmem ARGS --json` and return its JSON object."""
    path = os.environ.get("LLMEM_TEST_CLI")
    if not path:
        pytest.skip("the llmem command is not built")

    def run(*args):
        out = subprocess.run([path] + [str(a) for a in args] + ["--json"],
                             stdout=subprocess.PIPE, universal_newlines=True, check=True,
                             timeout=300).stdout
        return json.loads(out)

    return run


PLANS = [
    (dict(model=LLAMA_8B, gpus=8, gpu_bytes=80 * GIB),
     ["--model", LLAMA_8B, "--gpus", 8, "--capacity", 80 * GIB]),
    (dict(model="Qwen/Qwen2.5-7B", gpus=16, gpu_bytes=40 * GIB, seq=4096, margin_permille=100,
          plan_offload=1, gpus_per_node=4),
     ["--model", "Qwen/Qwen2.5-7B", "--gpus", 16, "--capacity", 40 * GIB, "--seq", 4096,
      "--margin", 10, "--allow-offload", 1, "--gpus-per-node", 4]),
]


@pytest.mark.parametrize("keywords,flags", PLANS, ids=["llama-8b-8x80", "qwen-7b-16x40"])
def test_plan_equals_the_cli(llmem_json, keywords, flags):
    keywords = dict(keywords)
    result = llmem.plan(keywords.pop("model"), **keywords)
    js = llmem_json("plan", *flags, "--top", TOP_ALL)
    assert len(result.layouts) == js["layouts_fitting"] == len(js["layouts"]) > 0
    for planned, jl in zip(result.layouts, js["layouts"]):
        assert {k: planned.layout[k] for k in ("dp", "tp", "pp", "ep", "cp", "sp", "sharding",
                                               "offload")} == \
            {k: jl[k] for k in ("dp", "tp", "pp", "ep", "cp", "sp", "sharding", "offload")}
        assert (planned.grad_ckpt, planned.micro_batch, planned.micro_batches) == \
            (jl["grad_ckpt"], jl["micro_batch"], jl["micro_batches"])
        assert (planned.peak_device, planned.headroom, planned.comm_bytes) == \
            (jl["peak_device_bytes"], jl["headroom_bytes"], jl["comm_bytes_per_step"])
        assert (planned.bubble, planned.tokens_per_second) == (jl["bubble"],
                                                               jl["tokens_per_second"])
    assert [(r.reason, r.layouts, r.example) for r in result.rejected] == \
        [(r["reason"], r["layouts"], r["example"]) for r in js["rejected"]]
    tps = [p.tokens_per_second for p in result.layouts]
    assert tps == sorted(tps, reverse=True)  # best first


def test_a_planned_layout_fits_when_estimated():
    result = llmem.plan(LLAMA_8B, gpus=8, gpu_bytes=80 * GIB)
    best = result.layouts[0]
    est = llmem.estimate(LLAMA_8B, batch=best.micro_batch, grad_ckpt=best.grad_ckpt,
                         **best.layout)
    assert est.peak_device == best.peak_device
    assert est.peak_device <= 80 * GIB * 0.95  # the default margin: 5%


@pytest.mark.parametrize("field,flags", [("batch", []), ("seq", ["--batch", 2]),
                                         ("batch", ["--dp", 8, "--zero", 3])])
def test_largest_fitting_equals_the_cli(llmem_json, field, flags):
    capacity = 40 * GIB
    js = llmem_json("estimate", "--model", LLAMA_1B, "--max", field, "--capacity", capacity,
                    "--margin", 0, *flags)
    settings = {"batch": 2} if "--batch" in flags else {}
    if "--dp" in flags:
        settings.update(dp=8, sharding="zero3")
    usable = js["max"]["usable_bytes"]
    assert llmem.largest_fitting(LLAMA_1B, field, capacity=usable, **settings) == \
        js["max"]["value"] > 0


def test_largest_fitting_is_the_edge():
    capacity = 24 * GIB
    n = llmem.largest_fitting(LLAMA_1B, capacity=capacity, seq=1024)
    assert llmem.estimate(LLAMA_1B, batch=n, seq=1024).peak_device <= capacity
    assert llmem.estimate(LLAMA_1B, batch=n + 1, seq=1024).peak_device > capacity
    allocated = llmem.largest_fitting(LLAMA_1B, capacity=capacity, seq=1024, level="allocated")
    assert allocated >= n
    assert llmem.largest_fitting(LLAMA_8B, capacity=GIB) == 0  # not even batch 1


def test_planner_fields_and_errors():
    with llmem.Plan(gpus=8) as planner:
        assert (planner.gpus, planner.gpus_per_node, planner.margin_permille) == (8, 8, 50)
        with pytest.raises(TypeError, match="an int"):
            planner.gpus = "eight"
    with pytest.raises(llmem.OutOfRange) as info:
        llmem.Plan(gpus=0)
    assert (info.value.field, info.value.object) == ("gpus", "plan")
    with pytest.raises(llmem.Inconsistent) as info:
        llmem.plan(LLAMA_8B, gpus=8)
    assert info.value.field == "gpu_bytes" and "gpu-bytes" in str(info.value)
    with pytest.raises(ValueError, match="level"):
        llmem.largest_fitting(LLAMA_1B, capacity=GIB, level="nvidia-smi")
    with pytest.raises(llmem.Error):
        llmem.largest_fitting(LLAMA_1B, "dropout", capacity=GIB)


def test_plan_on_a_gpu_equals_the_cli(llmem_json):
    """gpu= names the GPU: its usable memory is the capacity (gpu_bytes unset)."""
    result = llmem.plan(LLAMA_8B, gpus=8, gpu="A100-80GB", seq=2048)
    js = llmem_json("plan", "--model", LLAMA_8B, "--gpus", 8, "--gpu", "A100-80GB", "--seq",
                    2048, "--top", TOP_ALL)
    assert js["gpu"]["name"] == "A100-80GB" and js["gpu"]["capacity_source"] == "gpu"
    assert len(result.layouts) == js["layouts_fitting"] > 0
    assert [p.peak_device for p in result.layouts] == \
        [jl["peak_device_bytes"] for jl in js["layouts"]]
    usable = js["gpu"]["usable_bytes"]
    same = llmem.plan(LLAMA_8B, gpus=8, gpu="A100-80GB", gpu_bytes=usable, seq=2048)
    assert [p.peak_device for p in same.layouts] == [p.peak_device for p in result.layouts]
