# SPDX-License-Identifier: MIT
"""Estimates from Python equal what the C API gives through `llmem --json`."""
import pytest

import llmem

LLAMA_8B = "meta-llama/Llama-3.1-8B"
LLAMA_1B = "meta-llama/Llama-3.2-1B"
# (Python keywords, the same setup as llmem flags)
SETUPS = [
    (dict(model=LLAMA_8B, batch=4, seq=2048, attention="flash"),
     ["--model", LLAMA_8B, "--batch", 4, "--seq", 2048, "--attention", "flash"]),
    (dict(model=LLAMA_1B, method="qlora", lora_rank=16, optimizer="paged-adamw-8bit",
          grad_ckpt="full", lora_targets=["q_proj", "k_proj", "v_proj", "o_proj"]),
     ["--model", LLAMA_1B, "--method", "qlora", "--lora-rank", 16, "--optimizer",
      "paged-adamw-8bit", "--grad-ckpt", "full", "--lora-targets", "q_proj,k_proj,v_proj,o_proj"]),
    (dict(model="openai-community/gpt2", precision="fp32", optimizer="sgd-momentum",
          dropout=0.1, batch=8, seq=1024, loss="chunked"),
     ["--model", "openai-community/gpt2", "--precision", "fp32", "--optimizer", "sgd-momentum",
      "--dropout", "0.1", "--batch", 8, "--seq", 1024, "--loss", "chunked"]),
    (dict(model="Llama-2-7b-hf", formula="article", article_tmp_factor=0.5),
     ["--model", "Llama-2-7b-hf", "--formula", "article", "--article-tmp-factor", "0.5"]),
    (dict(model="Qwen2.5-0.5B", layers=12, method="freeze", freeze_layers=6, grad_accum=4),
     ["--model", "Qwen2.5-0.5B", "--layers", 12, "--method", "freeze", "--freeze-layers", 6,
      "--grad-accum", 4]),
]


def assert_matches_cli(result, js):
    assert result.params_total == js["params_total"]
    assert result.params_trainable == js["params_trainable"]
    assert result.params_active == js["params_active"]
    assert result.peak_allocated == js["peak_allocated_bytes"]
    assert result.peak_reserved == js["peak_reserved_bytes"]
    assert result.peak_device == js["peak_device_bytes"]
    if js["formula"] == "article":  # no phases: the command prints "none" and {}
        assert result.peak_phase is None and js["peak_phase"] == "none"
        assert set(result.phase_bytes.values()) == {0} and js["phases"] == {}
    else:
        assert result.peak_phase == js["peak_phase"]
        assert result.phase_bytes == js["phases"]
    assert {n: t.bytes_at_peak for n, t in result.terms.items()} == js["terms"]
    assert {n: t.max_bytes for n, t in result.terms.items()} == js["terms_max"]
    assert {n: t.components for n, t in result.terms.items()} == js["components"]


@pytest.mark.parametrize("keywords,flags", SETUPS, ids=[s[0]["model"] for s in SETUPS])
def test_estimate_equals_the_cli(cli, keywords, flags):
    keywords = dict(keywords)
    result = llmem.estimate(keywords.pop("model"), **keywords)
    assert_matches_cli(result, cli(*flags))


def test_the_issue_example():
    est = llmem.estimate("meta-llama/Llama-3.1-8B", batch=4, seq=2048, attention="flash")
    assert est.peak_allocated <= est.peak_reserved <= est.peak_device
    assert est.peak_phase in dict(llmem.PHASES).values()
    assert est.phase_bytes[est.peak_phase] == est.peak_allocated
    optimizer = est.terms["optimizer"]
    assert set(optimizer.components) == {"gradients", "states"}
    assert sum(optimizer.components.values()) == optimizer.bytes_at_peak
    assert sum(t.bytes_at_peak for t in est.terms.values()) == est.peak_allocated


def test_article_formula_has_no_peak_phase():
    est = llmem.estimate("gpt2", formula="article")
    assert est.peak_phase is None
    assert set(est.phase_bytes.values()) == {0}


def test_custom_model_equals_the_cli(cli):
    model = llmem.Model("llama", hidden=4096, layers=32, heads=32, intermediate=11008,
                        vocab=32000)
    assert model.param_count == 6738415616
    result = llmem.estimate(model, batch=2)
    assert_matches_cli(result, cli("--family", "llama", "--hidden", 4096, "--layers", 32,
                                   "--heads", 32, "--intermediate", 11008, "--vocab", 32000,
                                   "--batch", 2))


def test_a_reused_handle_gives_what_fresh_ones_give():
    with llmem.Model.from_preset(LLAMA_1B) as model, llmem.Train() as train, \
            llmem.Estimate() as est:
        for batch in (1, 3, 2, 1):
            train.batch = batch
            assert est.run(model, train) == llmem.estimate(LLAMA_1B, batch=batch)


def test_peaks_grow_with_the_batch():
    peaks = [llmem.estimate(LLAMA_1B, batch=b).peak_allocated for b in (1, 2, 4)]
    assert peaks[0] < peaks[1] < peaks[2]


def test_lora_targets_as_a_list_or_a_string_are_the_same():
    a = llmem.estimate(LLAMA_1B, method="lora", lora_targets=["q_proj", "v_proj", "o_proj"])
    b = llmem.estimate(LLAMA_1B, method="lora", lora_targets="q_proj,v_proj,o_proj")
    c = llmem.estimate(LLAMA_1B, method="lora", lora_targets="q_proj,v_proj")
    assert a == b
    assert a.params_trainable > c.params_trainable


def test_model_keywords_need_a_preset_name():
    with llmem.Model.from_preset(LLAMA_1B) as model:
        with pytest.raises(TypeError, match="layers"):
            llmem.estimate(model, layers=4)
    assert llmem.estimate(LLAMA_1B, layers=4).params_total < \
        llmem.estimate(LLAMA_1B).params_total


def test_presets_are_the_librarys():
    names = llmem.presets()
    assert LLAMA_8B in names and len(names) == len(set(names)) > 10
    for name in names:
        with llmem.Model.from_preset(name) as model:
            assert model.param_count > 0


@pytest.mark.parametrize("layout", [dict(), dict(dp=2, pp=2, micro_batches=4)])
def test_the_result_is_the_library_getters(layout):
    """Result's peaks, phases and terms are its most loaded rank's, which the
    library's own getters (llmem_estimate_get_u64, _phase_bytes, _term) give."""
    import ctypes
    from llmem._library import LIB
    from llmem.estimate import PHASES, TERMS
    with llmem.Model.from_preset("meta-llama/Llama-3.2-1B") as model, \
            llmem.Train(batch=4, seq=1024, method="lora") as train, \
            llmem.Parallel(**layout) as parallel, llmem.Estimate() as est:
        result = est.run(model, train, parallel)
        handle = est._handle
        out, term = ctypes.c_uint64(), ctypes.c_void_p()
        for key, field in ((3, "peak_allocated"), (4, "peak_reserved"), (5, "peak_device")):
            assert LIB.llmem_estimate_get_u64(handle, key, ctypes.byref(out)) == 0
            assert out.value == getattr(result, field) > 0
        for value, name in PHASES:
            assert LIB.llmem_estimate_phase_bytes(handle, value, ctypes.byref(out)) == 0
            assert out.value == result.phase_bytes[name]
        for kind, name in TERMS:
            assert LIB.llmem_estimate_term(handle, kind, ctypes.byref(term)) == 0
            assert LIB.llmem_term_bytes_at_peak(term) == result.terms[name].bytes_at_peak
            assert LIB.llmem_term_max_bytes(term) == result.terms[name].max_bytes
        assert len(result.ranks) == (2 if layout else 1)
