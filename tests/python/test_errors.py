# SPDX-License-Identifier: MIT
"""Bad input raises the exception of the library's status, with its message
and the field; the object stays usable."""
import ctypes
import math
import os
import subprocess

import pytest

import llmem
from llmem import errors
from llmem._library import LIB


def test_unknown_preset():
    with pytest.raises(llmem.NotFound) as info:
        llmem.estimate("no-such/model")
    assert "no-such/model" in str(info.value)
    assert info.value.status == errors.ENOTFOUND
    assert isinstance(info.value, LookupError) and isinstance(info.value, llmem.Error)


def test_out_of_range_names_the_field():
    with pytest.raises(llmem.OutOfRange) as info:
        llmem.estimate("gpt2", lora_rank=0)
    assert info.value.field == "lora_rank" and info.value.object == "train"
    assert str(info.value).startswith("lora-rank: ")
    assert info.value.message == str(info.value)
    assert isinstance(info.value, ValueError)


def test_unknown_value_name_names_the_field_and_the_choices():
    with pytest.raises(llmem.NotFound) as info:
        llmem.Train(attention="fast")
    assert info.value.field == "attention"
    assert "'fast'" in str(info.value) and "flash" in str(info.value)
    with pytest.raises(llmem.NotFound) as info:
        llmem.Model("llama", norm="batchnorm")
    assert info.value.field == "norm" and info.value.object == "model"
    with pytest.raises(llmem.NotFound, match="lora-targets"):
        llmem.Train(lora_targets=["q_proj", "x_proj"])


def test_unknown_keyword_is_a_type_error_with_a_suggestion():
    with pytest.raises(TypeError, match="lora_rnak.*did you mean 'lora_rank'"):
        llmem.estimate("gpt2", lora_rnak=4)
    with pytest.raises(TypeError, match="hiden"):
        llmem.Model("llama", hiden=4)


def test_wrong_python_types():
    with pytest.raises(TypeError, match="hidden"):
        llmem.Model("llama", hidden=1.5)
    with pytest.raises(TypeError):
        llmem.Train(batch=[1])
    with pytest.raises(llmem.InvalidArgument) as info:
        llmem.Train(batch="four")
    assert info.value.field == "batch" and "'four'" in str(info.value)
    # A bool is an int in Python: batch=True was batch 1. A flag takes it.
    with pytest.raises(TypeError, match="batch: expected an int, got bool"):
        llmem.Train(batch=True)
    with pytest.raises(TypeError, match="dropout"):
        llmem.Train(dropout=False)
    with llmem.Model.from_preset("meta-llama/Llama-3.2-1B", tie_embeddings=False) as model:
        assert model.tie_embeddings == 0


def test_non_finite_reals_are_refused():
    with llmem.Train() as train:
        for value in (math.nan, math.inf):
            with pytest.raises(llmem.Error) as info:
                train.dropout = value
            assert info.value.field == "dropout"
        assert train.dropout == -1.0  # unchanged: the model's own


def test_an_int64_overflow_is_out_of_range_before_the_call():
    with pytest.raises(llmem.OutOfRange) as info:
        llmem.Model("llama", hidden=1 << 64)
    assert info.value.field == "hidden" and "hidden" in str(info.value)


def test_inconsistent_fields_at_run_time():
    with pytest.raises(llmem.Inconsistent) as info:
        llmem.estimate("gpt2", method="freeze", freeze_layers=20)
    assert "freeze-layers" in str(info.value)
    assert info.value.field == "freeze_layers" and info.value.object == "train"


def test_heads_not_dividing_hidden():
    model = llmem.Model("llama", hidden=100, heads=3, layers=2, intermediate=10, vocab=10)
    with pytest.raises(llmem.Error) as info:
        model.validate()
    assert "heads" in str(info.value) and "hidden" in str(info.value)
    model.hidden = 99
    model.validate()
    assert model.param_count > 0


def test_a_failed_set_leaves_the_object_usable_and_unchanged():
    with llmem.Train(batch=3) as train:
        with pytest.raises(llmem.OutOfRange):
            train.set(batch=0)
        assert train.batch == 3
        train.batch = 5
        assert train.batch == 5
        # The next failure reports its own field, not the previous one.
        with pytest.raises(llmem.NotFound) as info:
            train.optimizer = "adamx"
        assert info.value.field == "optimizer"


def test_each_status_has_its_class():
    codes = [errors.EINVAL, errors.ENOMEM, errors.ERANGE, errors.ENOTFOUND, errors.EOVERFLOW,
             errors.EINCONSISTENT, errors.EIO, errors.EPARSE, errors.ENOTSUP, errors.EBUFFER]
    classes = [errors.error_class(code) for code in codes]
    assert len(set(classes)) == len(codes)
    for code, cls in zip(codes, classes):
        assert issubclass(cls, llmem.Error) and cls.status == code
        # Each code is one the library describes (not its "unknown" text).
        assert LIB.llmem_status_str(code) != LIB.llmem_status_str(-1000)
    assert errors.error_class(-1000) is llmem.Error
    assert issubclass(llmem.ReadError, OSError) and issubclass(llmem.Overflow, OverflowError)


def test_a_handle_of_the_wrong_kind_is_a_type_error():
    # Handles reach the library as bare pointers: a Model read as a Train
    # crashed the interpreter, a Train read as a Model raised an unrelated error.
    with llmem.Model.from_preset("gpt2") as model, llmem.Train(seq=64) as train, \
            llmem.Estimate() as est, llmem.Plan(gpus=2, gpu_bytes=80 * 2**30) as planner:
        cases = [
            (lambda: est.run(model, model), "train: expected llmem.Train, not Model"),
            (lambda: est.run(train, model), "model: expected llmem.Model, not Train"),
            (lambda: est.run("gpt2", train), "model: expected llmem.Model, not str"),
            (lambda: est.run(model, train, train), "parallel: expected llmem.Parallel, not Train"),
            (lambda: est.sweep(model, model, batch=[1]), "train: expected"),
            (lambda: est.max(train, train, capacity=1 << 30), "model: expected"),
            (lambda: planner.run(model, model), "train: expected"),
            (lambda: llmem.estimate("gpt2", parallel=train), "parallel: expected"),
        ]
        for call, message in cases:
            with pytest.raises(TypeError, match=message):
                call()
        assert est.run(model, train).peak_allocated > 0  # still usable


def test_capacities_outside_64_bits_are_refused_not_wrapped():
    # ctypes wrapped them: -1 fitted the largest batch, 2**64 nothing.
    for capacity in (-1, 2**64, 2**64 + 2**30):
        with pytest.raises(llmem.OutOfRange) as info:
            llmem.largest_fitting("gpt2", capacity=capacity)
        assert info.value.field == "capacity"
    with pytest.raises(TypeError, match="capacity"):
        llmem.largest_fitting("gpt2", capacity=80e9)
    with llmem.Estimate() as est:
        with pytest.raises(llmem.OutOfRange):
            est.record_timeline(capacity=2**64)
    assert llmem.largest_fitting("gpt2", capacity=80 * 2**30) > 0


def _job_calls(model, train):
    """Each job call on ``model``, by name: a function of the context of
    the handle that makes it."""
    return {
        "run": lambda ctx: llmem.Estimate(context=ctx).run(model, train),
        "max": lambda ctx: llmem.Estimate(context=ctx).max(model, train, capacity=2**40),
        "sweep": lambda ctx: llmem.Estimate(context=ctx).sweep(model, train, batch=[1, 2]),
        "plan": lambda ctx: llmem.Plan(context=ctx, gpus=2, gpu_bytes=2**36).run(model, train),
        "estimate()": lambda ctx: llmem.estimate(model, context=ctx),
    }


def test_a_model_of_another_context_keeps_its_field():
    # The library copied the message of a model it could not resolve into the
    # estimate's (or planner's) context, but not its field: the exception of
    # a job run with handles of another context lost it.
    theirs, ours = llmem.Context(), llmem.Context()
    model = llmem.Model.from_preset("gpt2", context=theirs, heads=7)
    train = llmem.Train(context=theirs)
    for name, call in _job_calls(model, train).items():
        found = {}
        for ctx in (theirs, ours):
            with pytest.raises(llmem.Inconsistent) as info:
                call(ctx)
            found[ctx is ours] = (info.value.message, info.value.field, info.value.object)
        assert found[True] == found[False], name
        message, field, object = found[True]
        assert (field, object) == ("heads", "model"), name
        assert "heads: 7 does not divide hidden 768" in message, name


def test_a_stale_error_of_the_models_context_is_not_reported():
    theirs, ours = llmem.Context(), llmem.Context()
    model = llmem.Model.from_preset("gpt2", context=theirs)
    with pytest.raises(llmem.OutOfRange):
        model.hidden = 0  # refused, the model unchanged: its context keeps the error
    assert theirs.last_error.startswith("hidden: ")
    with llmem.Estimate(context=ours) as est:
        # A failure naming no field stays without one (called directly: the
        # binding refuses a field max() does not solve for before the call).
        out, train = ctypes.c_int64(), llmem.Train(context=ours)
        with pytest.raises(llmem.InvalidArgument) as info, ours._lock:
            ours.check(LIB.llmem_estimate_max(est._handle, model._handle, train._handle, None,
                                              llmem.TRAIN_FIELDS["lora_rank"].key, 3, 2**40,
                                              ctypes.byref(out)))
        assert info.value.field is None and "batch or seq" in info.value.message
        # A failure naming its own field keeps it.
        with pytest.raises(llmem.Inconsistent) as info:
            est.run(model, llmem.Train(context=ours, method="freeze", freeze_layers=20))
        assert (info.value.field, info.value.object) == ("freeze_layers", "train")
        assert est.run(model, llmem.Train(context=theirs)).peak_allocated > 0


@pytest.mark.parametrize("keyword,text", [("batch", " 4"), ("batch", "4 "), ("seq", "\t512"),
                                          ("lora_rank", "+ 8"), ("dropout", " 0.1"),
                                          ("dropout", "0x1p-3"), ("lora_dropout", "nan"),
                                          ("dp", " 2")])
def test_numbers_as_text_are_read_as_the_cli_reads_them(keyword, text):
    # strtoll and strtod skip leading white space, and strtod reads hexadecimal:
    # " 4" was batch 4 here where `llmem estimate --batch ' 4'` is a usage error.
    with pytest.raises(llmem.InvalidArgument) as info:
        llmem.estimate("gpt2", **{keyword: text})
    assert info.value.field == keyword
    assert "'%s'" % text in info.value.message
    path = os.environ.get("LLMEM_TEST_CLI")
    if path:
        flag = "--" + keyword.replace("_", "-")
        proc = subprocess.run([path, "estimate", "--model", "gpt2", flag, text],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
        assert proc.returncode == 2, proc.stderr


def test_numbers_as_text_in_decimal_form_are_taken():
    with llmem.Train(batch="+4", seq="0256", dropout=".5", lora_dropout="1e-1") as train:
        assert (train.batch, train.seq, train.dropout, train.lora_dropout) == (4, 256, 0.5, 0.1)


def test_a_preset_name_is_a_str_or_bytes():
    # .encode() of anything else was an AttributeError; bytes are taken as
    # from_hf_config takes a bytes path.
    for name in (None, 3, ["gpt2"]):
        with pytest.raises(TypeError, match="name: expected a str or bytes, got %s"
                           % type(name).__name__):
            llmem.Model.from_preset(name)
    with llmem.Model.from_preset(b"gpt2") as a, llmem.Model.from_preset("gpt2") as b:
        assert a.to_dict() == b.to_dict()
    for path in (None, 3):
        with pytest.raises(TypeError, match="path: expected"):
            llmem.Model.from_hf_config(path)
    # bytes(3) was three NULs handed to the JSON reader
    for text in (None, 3, [123, 125]):
        with pytest.raises(TypeError, match="text: expected a str or bytes"):
            llmem.Model.from_hf_json(text)
    for call in (llmem.largest_fitting, llmem.sweep, llmem.plan):
        with pytest.raises(TypeError, match="model must be a preset name or a llmem.Model, "
                           "not NoneType"):
            call(None, capacity=2**40) if call is llmem.largest_fitting else call(None)


def test_a_family_is_a_name_or_an_int():
    # None and 1.5 raised ctypes.ArgumentError; True was family 1 (gpt2).
    for family in (None, 1.5, True, b"llama"):
        with pytest.raises(TypeError, match="family: expected a name or an int, got %s"
                           % type(family).__name__):
            llmem.Model(family)
    gpt2 = dict(llmem.MODEL_FIELDS["family"].choices)["gpt2"]
    assert llmem.Model(gpt2).family == "gpt2"
    # ctypes wrapped a code beyond a C int: 2**40 was "unknown value 0"
    with pytest.raises(llmem.OutOfRange, match="family: value 1099511627776 out of range"):
        llmem.Model(1 << 40)


def test_largest_fitting_names_a_field_it_does_not_solve_for():
    # "key -1 is neither": the name never reached the message.
    with pytest.raises(llmem.InvalidArgument) as info:
        llmem.largest_fitting("gpt2", "bogus", capacity=2**40)
    assert str(info.value) == "field: 'bogus' is not one of batch, seq"
    with pytest.raises(llmem.InvalidArgument, match="'lora_rank' is not one of batch, seq"):
        llmem.largest_fitting("gpt2", "lora_rank", capacity=2**40)
    with pytest.raises(TypeError, match="field: expected a str, got NoneType"):
        llmem.largest_fitting("gpt2", None, capacity=2**40)
    assert llmem.largest_fitting("gpt2", "seq", capacity=2**40) > 0


@pytest.mark.parametrize("call,field", [
    (lambda: llmem.Train(precision="bf16\x00xx"), "precision"),
    (lambda: llmem.Train(gpu="H100\x00junk"), "gpu"),
    (lambda: llmem.Train(lora_targets=["q_proj\x00", "v_proj"]), "lora-targets"),
    (lambda: llmem.Train(batch="4\x005"), "batch"),
    (lambda: llmem.Model("llama\x00x"), "family"),
    (lambda: llmem.Parallel(sharding="zero3\x00"), "sharding"),
    (lambda: llmem.estimate("gpt2", attention="flash\x00"), "attention"),
])
def test_a_nul_inside_a_field_value_is_refused(call, field):
    # ctypes ended the string at the NUL: "bf16\0xx" was bf16.
    with pytest.raises(llmem.InvalidArgument) as info:
        call()
    assert str(info.value).startswith("%s: embedded NUL character in " % field)
    assert info.value.field == field.replace("-", "_")


def test_a_nul_inside_a_name_or_a_path_is_refused(tmp_path):
    for name in ("gpt2\x00junk", b"gpt2\x00"):
        with pytest.raises(llmem.InvalidArgument, match="name: embedded NUL character"):
            llmem.Model.from_preset(name)
    with pytest.raises(llmem.InvalidArgument, match="name: embedded NUL"):
        llmem.estimate("gpt2\x00junk")
    # "/tmp\0x" was /tmp
    for path in (str(tmp_path) + "\x00x", os.fsencode(tmp_path) + b"\x00x"):
        with pytest.raises(llmem.InvalidArgument, match="path: embedded NUL character"):
            llmem.Model.from_hf_config(path)
        with pytest.raises(llmem.InvalidArgument, match="path: embedded NUL character"):
            llmem.Weights(path)


def test_a_failed_max_keeps_the_last_countable_value():
    # llmem_estimate_max's EOVERFLOW leaves the last value it could count in
    # *out (a floor of the answer): the binding hands it on as exc.value.
    with llmem.Model.from_preset("meta-llama/Llama-3.1-8B") as model, \
            llmem.Train() as train, llmem.Estimate() as est:
        with pytest.raises(llmem.Overflow) as info:
            est.max(model, train, capacity=2**64 - 1)
        out = ctypes.c_int64()
        rc = LIB.llmem_estimate_max(est._handle, model._handle, train._handle, None,
                                    llmem.TRAIN_FIELDS["batch"].key, 3, 2**64 - 1,
                                    ctypes.byref(out))
        assert rc == errors.EOVERFLOW and info.value.value == out.value > 0
        assert "batch %d and below fit" % out.value in str(info.value)
        assert info.value.peaks is None
        assert est.max(model, train, capacity=2**40) > 0  # still usable
    with llmem.Model("llama") as unsized, llmem.Train() as train, llmem.Estimate() as est:
        with pytest.raises(llmem.Error) as info:
            est.max(unsized, train, capacity=2**40)
        assert info.value.value is None  # only Overflow and NotSupported carry one


def test_a_failed_sweep_keeps_the_peaks_before_the_failing_point():
    with llmem.Model.from_preset("gpt2") as model, llmem.Train() as train, \
            llmem.Estimate() as est:
        before = est.sweep(model, train, batch=[1, 2])
        with pytest.raises(llmem.OutOfRange, match=r"^sweep point 2 \(batch 0") as info:
            est.sweep(model, train, batch=[1, 2, 0, 4])
        assert info.value.peaks == before and len(before) == 2 and info.value.value is None
        with pytest.raises(llmem.OutOfRange) as info:
            est.sweep(model, train, seq=[0, 512])
        assert info.value.peaks == []
    with llmem.Model("llama") as unsized, llmem.Train() as train, llmem.Estimate() as est:
        with pytest.raises(llmem.Error) as info:
            est.sweep(unsized, train, batch=[1, 2])
        assert info.value.peaks == []  # refused before any point
    with pytest.raises(llmem.OutOfRange) as info:  # the one-call form too
        llmem.sweep("gpt2", batch=[1, 0])
    assert len(info.value.peaks) == 1


def test_the_statuses_llmem_h_documents_for_timeline_and_pack_job_u64():
    # llmem_estimate_timeline: ERANGE when the room (320 bytes a point) would
    # not fit a size_t, besides ENOMEM.
    with llmem.Estimate() as est:
        with pytest.raises(llmem.OutOfRange, match="timeline: 9223372036854775808 points is "
                                                   "too many"):
            est.record_timeline(capacity=2**63)
    # llmem_pack_job_u64: ENOTFOUND, with no message, for a key the job's
    # status has no value of (the GPU of a job that fits nowhere).
    with llmem.Pack() as pack:
        pack.add_gpu("A100-80GB", 1).add_job("big", 2**50).run()
        ctx = pack._context
        with ctx._lock:
            out = ctypes.c_uint64()
            before = LIB.llmem_ctx_error(ctx._handle)
            rc = LIB.llmem_pack_job_u64(pack._handle, 0, 2, ctypes.byref(out))  # JOB_GPU
            assert rc == errors.ENOTFOUND and LIB.llmem_ctx_error(ctx._handle) == before
