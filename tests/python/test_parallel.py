# SPDX-License-Identifier: MIT
"""Layouts across GPUs from Python equal `llmem estimate --json` with the
layout flags, rank by rank."""
import json
import os
import subprocess

import pytest

import llmem
from test_estimate import assert_matches_cli

LLAMA_1B = "meta-llama/Llama-3.2-1B"
LLAMA_8B = "meta-llama/Llama-3.1-8B"
# (Python keywords, the same layout as llmem flags)
LAYOUTS = [
    (dict(model=LLAMA_1B, dp=8, sharding="fsdp-full", pp=2),
     ["--model", LLAMA_1B, "--dp", 8, "--fsdp", "full", "--pp", 2]),
    (dict(model=LLAMA_8B, tp=4, sp=1, batch=2, seq=4096, attention="flash"),
     ["--model", LLAMA_8B, "--tp", 4, "--sp", 1, "--batch", 2, "--seq", 4096,
      "--attention", "flash"]),
    (dict(model=LLAMA_8B, dp=16, sharding="fsdp-hybrid", shard_group=8),
     ["--model", LLAMA_8B, "--dp", 16, "--fsdp", "hybrid", "--shard-group", 8]),
    (dict(model=LLAMA_8B, dp=4, sharding="zero3", offload="parameters"),
     ["--model", LLAMA_8B, "--dp", 4, "--zero", 3, "--offload", "parameters"]),
    (dict(model=LLAMA_8B, pp=4, micro_batches=8, schedule="interleaved", virtual_stages=2,
          grad_ckpt="full"),
     ["--model", LLAMA_8B, "--pp", 4, "--micro-batches", 8, "--schedule", "interleaved",
      "--virtual-stages", 2, "--grad-ckpt", "full"]),
    (dict(model=LLAMA_8B, pp=6, micro_batches=8, method="freeze", freeze_layers=12),
     ["--model", LLAMA_8B, "--pp", 6, "--micro-batches", 8, "--method", "freeze",
      "--freeze-layers", 12]),
]


def assert_ranks_match_cli(result, js):
    assert len(result.ranks) == len(js["ranks"])
    for rank, jr in zip(result.ranks, js["ranks"]):
        assert (rank.stage, rank.stages, rank.layer_first, rank.layers, rank.chunks,
                rank.chunk_stride, rank.gpus) == \
            (jr["stage"], jr["stages"], jr["layer_first"], jr["layers"], jr["chunks"],
             jr["chunk_stride"], jr["gpus"])
        assert rank.micro_batches_in_flight == jr["micro_batches_in_flight"]
        assert (rank.peak_allocated, rank.peak_reserved, rank.peak_device, rank.host_bytes) == \
            (jr["peak_allocated_bytes"], jr["peak_reserved_bytes"], jr["peak_device_bytes"],
             jr["host_bytes"])
        assert rank.peak_phase == jr["peak_phase"] and rank.phase_bytes == jr["phases"]
        assert {n: t.bytes_at_peak for n, t in rank.terms.items()} == jr["terms"]
        assert {n: t.max_bytes for n, t in rank.terms.items()} == jr["terms_max"]
        assert {n: t.components for n, t in rank.terms.items()} == jr["components"]
        assert jr["most_loaded"] == (rank.index == result.peak_rank)


@pytest.mark.parametrize("keywords,flags", LAYOUTS, ids=[" ".join(map(str, f[2:6]))
                                                          for _, f in LAYOUTS])
def test_layouts_equal_the_cli(cli, keywords, flags):
    keywords = dict(keywords)
    result = llmem.estimate(keywords.pop("model"), **keywords)
    js = cli(*flags)
    assert_matches_cli(result, js)
    assert_ranks_match_cli(result, js)
    peak = result.ranks[result.peak_rank]
    assert (result.peak_allocated, result.peak_device) == (peak.peak_allocated, peak.peak_device)


def test_interleaved_ranks_run_their_model_chunks():
    result = llmem.estimate(LLAMA_8B, pp=4, micro_batches=8, schedule="interleaved",
                            virtual_stages=2)
    middle = result.ranks[1]
    assert (middle.stage, middle.stages, middle.gpus) == (1, 2, 2)
    assert middle.layer_ranges == [(4, 7), (20, 23)]
    assert sum(r.stages * r.layers for r in result.ranks) == 32


def test_a_layout_object_equals_its_keywords():
    with llmem.Parallel(dp=8, sharding="zero2") as layout:
        assert (layout.gpus, layout.sharding, layout.tp) == (8, "zero2", 1)
        layout.tp = 2
        assert layout.gpus == 16
        assert llmem.estimate(LLAMA_1B, parallel=layout) == \
            llmem.estimate(LLAMA_1B, dp=8, sharding="zero2", tp=2)
        with pytest.raises(TypeError, match="dp"):
            llmem.estimate(LLAMA_1B, parallel=layout, dp=2)


def test_offloading_moves_bytes_to_the_host():
    result = llmem.estimate(LLAMA_8B, dp=4, sharding="zero3", offload="parameters")
    assert result.ranks[result.peak_rank].host_bytes > 0
    assert result.peak_device < llmem.estimate(LLAMA_8B, dp=4, sharding="zero3").peak_device


def test_one_gpu_is_one_rank():
    result = llmem.estimate(LLAMA_1B)
    assert result.peak_rank == 0 and len(result.ranks) == 1
    rank = result.ranks[0]
    assert (rank.stage, rank.gpus, rank.host_bytes) == (0, 1, 0)
    assert rank.peak_allocated == result.peak_allocated
    assert llmem.estimate(LLAMA_1B, dp=1, tp=1, pp=1) == result


STEPS = [  # a layout's keywords and flags; the command's smallest --max values for them
    (dict(cp=2), ["--cp", 2]),
    (dict(tp=4, sp=1), ["--tp", 4, "--sp", 1]),
    (dict(cp=2, tp=4, sp=1), ["--cp", 2, "--tp", 4, "--sp", 1]),
    (dict(dp=2), ["--dp", 2]),
]


@pytest.mark.parametrize("keywords,flags", STEPS, ids=[" ".join(map(str, s[1])) for s in STEPS])
def test_step_is_the_smallest_value_the_command_tries(keywords, flags):
    # llmem_parallel_step: the multiples of batch or seq a layout splits, the
    # smallest `llmem estimate --max FIELD` tries (its smallest_value when none fits).
    path = os.environ.get("LLMEM_TEST_CLI")
    if not path:
        pytest.skip("the llmem command is not built")
    with llmem.Parallel(**keywords) as layout:
        for field in ("batch", "seq"):
            proc = subprocess.run([path, "estimate", "--model", LLAMA_1B, "--max", field,
                                   "--capacity", "1000", "--json"] + [str(f) for f in flags],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  universal_newlines=True, timeout=120)
            assert proc.returncode == 3, proc.stderr  # nothing fits 1000 bytes
            assert layout.step(field) == json.loads(proc.stdout)["max"]["smallest_value"]


def test_step_of_the_cxx_wrappers_layout():
    # tests/cxx: dp 8 fsdp-full pp 2 cp 2 splits seq by 4, batch by 1.
    layout = llmem.Parallel(dp=8, sharding="fsdp-full", pp=2, cp=2)
    assert (layout.step("seq"), layout.step("batch")) == (4, 1)
    assert llmem.Parallel().step("seq") == 1
    assert layout.step("lora_rank") == 1  # a training field it does not split
    with pytest.raises(TypeError, match="did you mean 'seq'"):
        layout.step("sq")
    with pytest.raises(TypeError, match="expected a str"):
        layout.step(5)
    layout.close()
    with pytest.raises(ValueError, match="closed"):
        layout.step("seq")


def test_sharding_lowers_what_a_rank_holds():
    replicas = llmem.estimate(LLAMA_8B, dp=8)
    zero3 = llmem.estimate(LLAMA_8B, dp=8, sharding="zero3")
    assert zero3.terms["optimizer"].max_bytes < replicas.terms["optimizer"].max_bytes
    assert zero3.peak_device < replicas.peak_device


def test_bad_layouts_name_the_field():
    with pytest.raises(llmem.Inconsistent) as info:
        llmem.estimate(LLAMA_1B, tp=7)
    assert (info.value.field, info.value.object) == ("tp", "parallel")
    assert str(info.value).startswith("tp: ")
    with pytest.raises(llmem.NotFound) as info:
        llmem.Parallel(sharding="zero4")
    assert info.value.field == "sharding" and "zero3" in str(info.value)
    with pytest.raises(llmem.OutOfRange) as info:
        llmem.Parallel(dp=0)
    assert info.value.field == "dp"
