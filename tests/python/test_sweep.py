# SPDX-License-Identifier: MIT
"""A sweep from Python: each point is the peak a run of its own gives, in
every regime of batch and seq and laid out; bad points and arguments raise
with the point and the field."""
import pytest

import llmem

LLAMA_1B = "meta-llama/Llama-3.2-1B"
BATCH = [1, 2, 3, 1, 4, 8, 2]
SEQ = [1, 2, 3, 512, 256, 1024, 2048]


@pytest.mark.parametrize("settings", [
    dict(),
    dict(method="lora", grad_ckpt="full", loss="chunked"),
    dict(attention="flash", dp=4, tp=2, sharding="zero3"),
])
@pytest.mark.parametrize("level", ["allocated", "reserved", "device"])
def test_each_point_is_its_own_estimate(settings, level):
    peaks = llmem.sweep(LLAMA_1B, BATCH, SEQ, level=level, **settings)
    assert len(peaks) == len(BATCH)
    for b, s, peak in zip(BATCH, SEQ, peaks):
        result = llmem.estimate(LLAMA_1B, batch=b, seq=s, **settings)
        assert peak == getattr(result, "peak_" + level), (b, s)


def test_none_keeps_the_train_value_and_the_train_is_unchanged():
    with llmem.Model.from_preset(LLAMA_1B) as model, llmem.Train(batch=6, seq=128) as train, \
            llmem.Estimate() as est:
        by_batch = est.sweep(model, train, batch=[1, 6, 9])
        by_seq = est.sweep(model, train, seq=[64, 128])
        assert est.sweep(model, train) == []
        assert train.batch == 6 and train.seq == 128
        own = est.run(model, train).peak_device
        assert by_batch[1] == own and by_seq[1] == own
        assert by_batch[0] < by_batch[1] < by_batch[2]
        assert est.sweep(model, train, [2, 3], level="device")[1] == \
            llmem.estimate(model, batch=3, seq=128).peak_device


def test_a_bad_point_names_the_point_and_the_field():
    with pytest.raises(llmem.OutOfRange) as info:
        llmem.sweep(LLAMA_1B, [2, 0, 4], [64, 64, 64])
    assert str(info.value).startswith("sweep point 1 (batch 0, seq 64): ")
    assert info.value.field == "batch" and info.value.object == "train"
    with pytest.raises(llmem.Inconsistent) as info:
        llmem.sweep("openai-community/gpt2", seq=[1024, 1025])
    assert str(info.value).startswith("sweep point 1 (batch ")
    assert info.value.field == "seq"


def test_bad_arguments():
    with pytest.raises(ValueError, match="differ in length"):
        llmem.sweep(LLAMA_1B, [1, 2], [64])
    with pytest.raises(TypeError, match=r"batch\[1\]"):
        llmem.sweep(LLAMA_1B, [1, 2.5])
    with pytest.raises(TypeError, match=r"seq\[1\]"):
        llmem.sweep(LLAMA_1B, seq=[64, "128"])
    with pytest.raises(ValueError, match=r"batch\[0\]: .* 64 bits"):
        llmem.sweep(LLAMA_1B, [1 << 64])
    with pytest.raises(ValueError, match="level"):
        llmem.sweep(LLAMA_1B, [1], level="nvidia-smi")
    with pytest.raises(TypeError, match="sweep"):
        llmem.sweep(LLAMA_1B, [1], no_such_field=1)


@pytest.mark.parametrize("batch,seq,message", [
    ([True, 2], None, r"batch\[0\]: expected an int, got bool"),
    ([1, 2], [64, False], r"seq\[1\]: expected an int, got bool"),
    ([1, 2.0], None, r"batch\[1\]: expected an int, got float"),
    (None, [64, "128"], r"seq\[1\]: expected an int, got str"),
    (4, None, r"batch: expected a sequence of ints, got int"),
    ("12", None, r"batch: expected a sequence of ints, got str"),
    (bytes(8), None, r"batch: expected a sequence of ints, got bytes"),
], ids=["bool", "bool-in-seq", "float", "str-in-seq", "int", "str", "bytes"])
def test_points_are_ints_as_the_fields_take_them(batch, seq, message):
    # True was batch 1 (Train(batch=True) is refused); bytes were read as raw int64s.
    with pytest.raises(TypeError, match="^sweep\\(\\): " + message):
        llmem.sweep(LLAMA_1B, batch, seq)
    with pytest.raises(TypeError, match="batch: expected an int, got bool"):
        llmem.Train(batch=True)
    # any iterable of ints is a column
    assert llmem.sweep(LLAMA_1B, iter([1, 2]), range(64, 66)) == \
        llmem.sweep(LLAMA_1B, [1, 2], [64, 65])
