# SPDX-License-Identifier: MIT
"""Bad input raises the exception of the library's status, with its message
and the field; the object stays usable."""
import math

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


def test_non_finite_reals_are_refused():
    with llmem.Train() as train:
        for value in (math.nan, math.inf):
            with pytest.raises(llmem.Error) as info:
                train.dropout = value
            assert info.value.field == "dropout"
        assert train.dropout == 0.0


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
