# SPDX-License-Identifier: MIT
"""The planner and the largest fitting batch from Python equal `llmem plan
--json` and `llmem estimate --max --json`."""
import json
import os
import re
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
    assert llmem.largest_fitting(LLAMA_1B, field, capacity=usable, margin=0, **settings) == \
        js["max"]["value"] > 0


def test_largest_fitting_is_the_edge():
    capacity = 24 * GIB
    n = llmem.largest_fitting(LLAMA_1B, capacity=capacity, seq=1024, margin=0)
    assert llmem.estimate(LLAMA_1B, batch=n, seq=1024).peak_device <= capacity
    assert llmem.estimate(LLAMA_1B, batch=n + 1, seq=1024).peak_device > capacity
    allocated = llmem.largest_fitting(LLAMA_1B, capacity=capacity, seq=1024, level="allocated",
                                      margin=0)
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


@pytest.mark.parametrize("model,settings,flags", [
    (LLAMA_1B, dict(gpus=4, gpu="A100-40GB", seq=1024),
     ["--gpus", 4, "--gpu", "A100-40GB", "--seq", 1024]),
    (LLAMA_1B, dict(gpus=4, gpu="A100-40GB", gpu_bytes=20 * GIB, margin_permille=100),
     ["--gpus", 4, "--gpu", "A100-40GB", "--capacity", 20 * GIB, "--margin", 10]),
    ("meta-llama/Llama-3.1-70B", dict(gpus=2, gpu="T4"), ["--gpus", 2, "--gpu", "T4"]),
], ids=["fits-a100", "capacity-wins", "nothing-fits-t4"])
def test_plan_verdict_equals_the_cli(model, settings, flags):
    """The verdict on the GPU: the capacity the layouts were fitted to,
    whether the best one fits, its headroom; `llmem plan --json`'s gpu object
    (which exits 3 when nothing fits)."""
    path = os.environ.get("LLMEM_TEST_CLI")
    if not path:
        pytest.skip("the llmem command is not built")
    result = llmem.plan(model, **settings)
    proc = subprocess.run([path, "plan", "--model", model] + [str(f) for f in flags] + ["--json"],
                          stdout=subprocess.PIPE, universal_newlines=True, timeout=300)
    gpu = json.loads(proc.stdout)["gpu"]
    assert proc.returncode == (0 if gpu["fits"] else 3)
    assert (result.gpu_bytes, result.margin_permille, result.fits, result.gpu_headroom) == \
        (gpu["capacity_bytes"], gpu["margin_permille"], gpu["fits"], gpu["headroom_bytes"])
    assert (result.margin_bytes, result.budget_bytes) == (gpu["margin_bytes"], gpu["budget_bytes"])
    if result.fits:
        assert result.best == result.layouts[0]
        assert result.gpu_headroom == result.best.headroom >= 0
        assert result.best.peak_device <= result.gpu_bytes * (1000 - result.margin_permille) // 1000
    else:
        assert result.best is None and result.layouts == ()


def test_plan_verdict_without_a_gpu():
    """gpu_bytes alone is the capacity; 1 GiB holds no layout of the 8B."""
    result = llmem.plan(LLAMA_8B, gpus=2, gpu_bytes=GIB)
    assert (result.gpu_bytes, result.margin_permille, result.fits, result.best,
            result.gpu_headroom) == (GIB, 50, False, None, None)
    result = llmem.plan(LLAMA_1B, gpus=2, gpu_bytes=80 * GIB, margin_permille=0)
    assert result.fits and result.gpu_headroom == 80 * GIB - result.best.peak_device > 0


def test_gpus_per_node_takes_whole_nodes():
    """A job on more GPUs than a node holds takes whole nodes: 8 GPUs over
    nodes of 3 are refused naming both fields, and the planner is unchanged."""
    gpt2 = "openai-community/gpt2"
    with llmem.Model.from_preset(gpt2) as model, llmem.Train(seq=512) as train, \
            llmem.Plan(gpus=8, gpu_bytes=80 * GIB) as planner:
        before = planner.run(model, train)
        planner.gpus_per_node = 3
        with pytest.raises(llmem.Inconsistent) as info:
            planner.run(model, train)
        assert info.value.field == "gpus_per_node" and info.value.object == "plan"
        assert str(info.value).startswith("gpus-per-node: 3 does not divide gpus 8")
        planner.gpus_per_node = 4
        assert planner.run(model, train).layouts
    assert before.layouts
    # One partial node, or whole nodes of any size, are accepted.
    for gpus, per_node in ((3, 8), (12, 6), (6, 6), (12, 3)):
        assert llmem.plan(gpt2, gpus=gpus, gpus_per_node=per_node, gpu_bytes=80 * GIB,
                          seq=512).layouts


def test_gpus_per_node_zero_is_one_node():
    """0, as a pack's gpus-per-node 0, is no node boundary: every GPU in one
    node, the plan of a node of --gpus; 1025 is beyond both handles' range."""
    gpt2 = "openai-community/gpt2"
    zero, one_node = (llmem.plan(gpt2, gpus=12, gpus_per_node=n, gpu_bytes=80 * GIB, seq=512)
                      for n in (0, 12))
    assert [(p.layout, p.micro_batch, p.tokens_per_second) for p in zero.layouts] == \
        [(p.layout, p.micro_batch, p.tokens_per_second) for p in one_node.layouts]
    assert {p.layout["tp"] for p in zero.layouts} == {1, 2, 4}
    with llmem.Plan() as planner, pytest.raises(llmem.OutOfRange):
        planner.gpus_per_node = 1025


@pytest.mark.parametrize("gpus,per_node,tps", [(12, 6, {1, 2}), (12, 3, {1}), (6, 6, {1, 2}),
                                               (16, 8, {1, 2, 4})])
def test_tensor_parallel_groups_stay_within_a_node(gpus, per_node, tps):
    """tp is a power of two: across nodes only a tp dividing a node's GPUs
    keeps its group within one (nodes of 6: tp 4 would straddle two)."""
    result = llmem.plan("openai-community/gpt2", gpus=gpus, gpus_per_node=per_node,
                        gpu_bytes=80 * GIB, seq=512)
    assert {p.layout["tp"] for p in result.layouts} == tps


def test_a_group_across_nodes_is_slower():
    """The cost model's groups within a node: pipelines of 3 stages on nodes
    of 6 are (ranks 0-2, 3-5), on nodes of 4 some straddle two (ranks 3-5),
    so the same layout ranks slower; the data-parallel groups cross nodes in
    both. Before, 3 <= 4 counted as within."""
    def pp3(per_node):
        result = llmem.plan("openai-community/gpt2", gpus=12, gpus_per_node=per_node,
                            gpu_bytes=80 * GIB, seq=512)
        return {(p.layout["sharding"], p.grad_ckpt): p for p in result.layouts
                if (p.layout["pp"], p.layout["tp"], p.layout["dp"]) == (3, 1, 4)}
    six, four = pp3(6), pp3(4)
    assert six and six.keys() == four.keys()
    for key in six:
        assert (six[key].micro_batch, six[key].comm_bytes) == (four[key].micro_batch,
                                                               four[key].comm_bytes)
        assert four[key].tokens_per_second < six[key].tokens_per_second


def test_every_rejection_has_an_example():
    """'does not fit at micro-batch 1' names its layout and the bytes micro-batch
    1 needs (its example was empty); the global batch's names both numbers."""
    result = llmem.plan(LLAMA_1B, gpus=4, gpu_bytes=GIB)
    assert result.rejected and all(r.example for r in result.rejected)
    fit = [r for r in result.rejected if r.reason == "does not fit at micro-batch 1"]
    m = re.match(r"dp (\d+) tp (\d+) pp (\d+) cp (\d+) ep (\d+) sp (\d+), sharding (\S+), "
                 r"offload (\S+), grad-ckpt (\S+): micro-batch 1 needs (?:[\d.]+ [GM]iB \()?(\d+) "
                 r"bytes\)? at the device level, above the (?:[\d.]+ [GM]iB \()?(\d+) bytes\)? "
                 r"budget \(the usable memory less the margin\)$", fit[0].example)
    assert m is not None, fit
    dp, tp, pp, cp, ep, sp = (int(v) for v in m.groups()[:6])
    est = llmem.estimate(LLAMA_1B, batch=1, dp=dp, tp=tp, pp=pp, cp=cp, ep=ep, sp=sp,
                         sharding=m.group(7), offload=m.group(8), grad_ckpt=m.group(9),
                         micro_batches=2 * pp if pp > 1 else 1)
    assert est.peak_device == int(m.group(10)) > int(m.group(11)) == GIB * 950 // 1000
    split = llmem.plan(LLAMA_1B, gpus=4, gpu_bytes=80 * GIB, global_batch=6)
    examples = {r.reason: r.example for r in split.rejected}
    assert examples["the global batch does not split over dp"] == \
        "global-batch 6 is not a multiple of dp 4"


def test_setup_errors_are_errors_not_rejections():
    """What no layout changes raises as an estimate does; it is not 'no layout fits'."""
    with pytest.raises(llmem.Inconsistent, match=r"^lora-rank: 16 is not read"):
        llmem.plan(LLAMA_1B, gpus=8, gpu="H100", lora_rank=16)
    with pytest.raises(llmem.Inconsistent, match=r"^precision: qlora needs"):
        llmem.plan(LLAMA_1B, gpus=8, gpu="H100", method="qlora", precision="fp32")
    with pytest.raises(llmem.Inconsistent, match=r"^batch: 4 is not read"):
        llmem.plan(LLAMA_1B, gpus=8, gpu="H100", batch=4)


def test_the_setups_checkpointing_is_the_one_tried():
    """Reentrant checkpointing asked for: the planner tries none and it, not full."""
    result = llmem.plan(LLAMA_1B, gpus=4, gpu="H100", grad_ckpt="reentrant")
    tried = {r.grad_ckpt for r in result.layouts}
    assert tried <= {"none", "reentrant"} and "reentrant" in tried, tried
    result = llmem.plan(LLAMA_1B, gpus=4, gpu="H100")
    assert {r.grad_ckpt for r in result.layouts} <= {"none", "full"}
