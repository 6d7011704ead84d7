# SPDX-License-Identifier: MIT
"""Hugging Face inputs from Python: config.json and safetensors headers."""
import json
import os
import struct

import pytest

import llmem


def safetensors(tensors):
    """The bytes of a safetensors file holding tensors [(name, dtype, shape, itemsize)]."""
    header, offset = {}, 0
    for name, dtype, shape, itemsize in tensors:
        size = itemsize
        for dim in shape:
            size *= dim
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + size]}
        offset += size
    text = json.dumps(header).encode()
    return struct.pack("<Q", len(text)) + text + bytes(offset)


SMALL = [("a.weight", "BF16", [2, 3], 2), ("b.weight", "F32", [4], 4),
         ("c.weight", "BF16", [5], 2)]


def test_config_equals_the_cli(hf_configs, cli):
    path = os.path.join(hf_configs, "Qwen2.5-0.5B.json")
    with llmem.Model.from_hf_config(path) as model:
        assert model.family == "llama"
        result = llmem.estimate(model, batch=2, seq=256)
    js = cli("--config", path, "--batch", 2, "--seq", 256)
    assert (result.params_total, result.peak_allocated, result.peak_device) == \
        (js["params_total"], js["peak_allocated_bytes"], js["peak_device_bytes"])


def test_config_text_equals_the_file(hf_configs):
    path = os.path.join(hf_configs, "gemma-2-2b.json")
    with open(path, encoding="utf-8") as f:
        text = f.read()
    with llmem.Model.from_hf_config(path) as a, llmem.Model.from_hf_json(text) as b, \
            llmem.Model.from_hf_json(text.encode(), layers=2) as c:
        assert a.to_dict() == b.to_dict()
        assert a.param_count == b.param_count > c.param_count
        assert c.layers == 2


def test_config_errors(hf_configs, tmp_path):
    with pytest.raises(llmem.ReadError) as info:
        llmem.Model.from_hf_config(tmp_path / "missing.json")
    assert "missing.json" in str(info.value) and isinstance(info.value, OSError)
    with pytest.raises(llmem.ParseError):
        llmem.Model.from_hf_json("{not json")
    with pytest.raises(llmem.ParseError, match="hidden_size"):
        llmem.Model.from_hf_json('{"model_type": "llama"}')
    with pytest.raises(llmem.NotSupported, match="mamba"):
        llmem.Model.from_hf_json('{"model_type": "mamba"}')


def test_weights_from_a_file_and_a_buffer(hf_configs, tmp_path):
    data = safetensors(SMALL)
    path = tmp_path / "model.safetensors"
    path.write_bytes(data)
    for weights in (llmem.Weights(path), llmem.Weights(str(tmp_path)),
                    llmem.Weights.from_buffer(data), llmem.Weights.from_buffer(bytearray(data)),
                    llmem.Weights.from_buffer(memoryview(data))):
        assert (weights.params, weights.bytes, weights.tensors, weights.files) == \
            (6 + 4 + 5, 12 + 16 + 10, 3, 1)
        assert weights.dtypes == {"BF16": llmem.DtypeTotal(11, 22),
                                  "F32": llmem.DtypeTotal(4, 16)}


def test_bnb_4bit_weights(hf_configs):
    # A 4 x 8 linear packed two 4-bit values a byte, with its bitsandbytes state.
    q = "model.layers.0.mlp.up_proj.weight"
    data = safetensors([("model.norm.weight", "BF16", [8], 2), (q, "U8", [16, 1], 1),
                        (q + ".absmax", "U8", [1], 1), (q + ".quant_map", "F32", [16], 4),
                        (q + ".nested_absmax", "F32", [1], 4),
                        (q + ".nested_quant_map", "F32", [256], 4),
                        (q + ".quant_state.bitsandbytes__nf4", "U8", [30], 1)])
    weights = llmem.Weights.from_buffer(data)
    state = 1 + 64 + 4 + 1024 + 30
    assert (weights.params, weights.bytes, weights.tensors) == (8 + 32, 16 + 16 + state, 7)
    assert (weights.quant_state_bytes, weights.quant_state_tensors) == (state, 5)
    assert weights.dtypes == {"BF16": llmem.DtypeTotal(8, 16),
                              "bnb-nf4": llmem.DtypeTotal(32, 16)}
    plain = llmem.Weights.from_buffer(safetensors(SMALL))
    assert (plain.quant_state_bytes, plain.quant_state_tensors) == (0, 0)


@pytest.mark.parametrize("data", [5, "abc", [1, 2], None])
def test_weights_from_a_buffer_takes_bytes_only(data):
    # bytes(5) was five NUL bytes, which the reader then refused as a malformed file.
    with pytest.raises(TypeError, match="Weights.from_buffer..: data: expected bytes, "
                                        "bytearray or memoryview, got %s" % type(data).__name__):
        llmem.Weights.from_buffer(data)


def test_malformed_weights(hf_configs, tmp_path):
    data = bytearray(safetensors(SMALL))
    with pytest.raises(llmem.ParseError):
        llmem.Weights.from_buffer(bytes(data[:-1]))  # data region one byte short
    with pytest.raises(llmem.ReadError):
        llmem.Weights(tmp_path / "none.safetensors")


def test_without_the_readers_hf_inputs_are_not_supported():
    if os.environ.get("LLMEM_TEST_HFCONFIG") != "0":
        pytest.skip("the library has its Hugging Face readers")
    with pytest.raises(llmem.NotSupported):
        llmem.Model.from_hf_json('{"model_type": "llama"}')
