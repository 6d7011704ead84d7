# SPDX-License-Identifier: MIT
"""Fields, bounds and value names come from the library, spelled like the CLI."""
import ctypes
import os
import re
import subprocess

import pytest

import llmem
from llmem._library import LIB

# Flags of `llmem` that are not fields: the inputs, the output, what to solve
# (--max) or print (--top), and the command's shorthands for the sharding
# field (--zero 3, --fsdp full).
NOT_FIELDS = {"model", "config", "weights", "json", "help", "zero", "fsdp", "max", "top",
              "svg", "timeline"}  # outputs of the command, not estimate inputs
# The command's own spellings of library fields (--margin is in percent, the
# field in thousandths).
CLI_SPELLING = {"attn_bias": "qkv_bias", "capacity": "gpu_bytes",
                "allow_offload": "plan_offload", "margin": "margin_permille"}


def test_every_cli_field_flag_is_a_keyword():
    path = os.environ.get("LLMEM_TEST_CLI")
    if not path:
        pytest.skip("the llmem command is not built")
    usage = subprocess.run([path, "--help"], stdout=subprocess.PIPE,
                           universal_newlines=True, check=True).stdout
    flags = {f.replace("-", "_") for f in re.findall(r"^  --([a-z0-9-]+)", usage, re.M)}
    assert len(flags) > 40
    keywords = set(llmem.MODEL_FIELDS) | set(llmem.TRAIN_FIELDS) | set(llmem.PARALLEL_FIELDS) \
        | set(llmem.PLAN_FIELDS)
    missing = {CLI_SPELLING.get(f, f) for f in flags - NOT_FIELDS} - keywords
    assert not missing


def test_fields_are_the_librarys():
    for table, info in ((llmem.MODEL_FIELDS, LIB.llmem_model_field_info),
                        (llmem.TRAIN_FIELDS, LIB.llmem_train_field_info),
                        (llmem.PARALLEL_FIELDS, LIB.llmem_parallel_field_info),
                        (llmem.PLAN_FIELDS, LIB.llmem_plan_field_info)):
        for keyword, field in table.items():
            name = ctypes.c_char_p()
            args = [field.key, ctypes.byref(name), None, None] + \
                ([None] if table is llmem.TRAIN_FIELDS else [])
            assert info(*args) == 0
            assert name.value.decode().replace("-", "_") == keyword
    assert llmem.TRAIN_FIELDS["lora_rank"].name == "lora-rank"
    assert llmem.MODEL_FIELDS["kv_heads"].key == 5


def test_no_keyword_names_two_fields():
    tables = [set(llmem.MODEL_FIELDS), set(llmem.TRAIN_FIELDS), set(llmem.PARALLEL_FIELDS),
              set(llmem.PLAN_FIELDS)]
    assert sum(len(t) for t in tables) == len(set.union(*tables))
    assert llmem.PARALLEL_FIELDS["sharding"].value_name(4) == "zero3"


def test_enumerated_values_round_trip_by_name():
    with llmem.Train() as train:
        for keyword, field in llmem.TRAIN_FIELDS.items():
            if not field.is_enum:
                continue
            # 0 of an enumeration from 0 is no value chosen (the GPU): None.
            first = max(field.minimum, 1)
            names = [field.value_name(v) for v in range(first, field.maximum + 1)]
            assert all(names), keyword
            for name in names:
                train.set(**{keyword: name})
                assert train.get(keyword) == name
            if field.minimum == 0:
                train.set(**{keyword: None})
                assert train.get(keyword) is None
    assert llmem.TRAIN_FIELDS["attention"].value_name(2) == "flash"


@pytest.mark.parametrize("keyword", [k for k, f in llmem.TRAIN_FIELDS.items()
                                     if not f.is_enum and not f.is_mask and not f.is_real])
def test_integer_bounds_are_the_librarys(keyword):
    field = llmem.TRAIN_FIELDS[keyword]
    with llmem.Train() as train:
        for value in (field.minimum, field.maximum):
            setattr(train, keyword, value)
            assert getattr(train, keyword) == value
        for value in (field.minimum - 1, field.maximum + 1):
            with pytest.raises(llmem.OutOfRange) as info:
                setattr(train, keyword, value)
            assert info.value.field == keyword
            assert field.name in str(info.value)
        assert getattr(train, keyword) == field.maximum  # unchanged by the failures


def test_model_fields_are_attributes():
    with llmem.Model.from_preset("gpt2") as model:
        assert model.family == "gpt2" and model.norm == "layernorm"
        model.layers = 6
        model.set(hidden=1024, heads=16)
        assert (model.layers, model.hidden, model.head_dim) == (6, 1024, 64)
        model.tie_embeddings = False
        assert model.tie_embeddings == 0
        assert set(model.to_dict()) == set(llmem.MODEL_FIELDS)


def test_the_family_resets_the_layout():
    with llmem.Model("gpt2") as model:
        assert model.norm == "layernorm"
        model.family = "llama"
        assert (model.norm, model.mlp, model.positions) == ("rmsnorm", "gated", "rotary")


def test_real_fields_take_numbers_and_strings():
    with llmem.Train(dropout=0.25) as train:
        assert train.dropout == 0.25
        train.dropout = "0.5"
        assert train.dropout == 0.5
        train.dropout = 0
        assert train.dropout == 0.0


def test_the_models_dropouts_are_real_fields():
    for keyword in ("attention_dropout", "hidden_dropout", "embedding_dropout"):
        field = llmem.MODEL_FIELDS[keyword]
        assert field.is_real and not field.is_enum, keyword
    with llmem.Model.from_preset("gpt2") as gpt2:
        assert (gpt2.attention_dropout, gpt2.hidden_dropout, gpt2.embedding_dropout) == \
            (0.1, 0.1, 0.1)
        gpt2.hidden_dropout = 0
        assert gpt2.to_dict()["hidden_dropout"] == 0.0
    with llmem.Model.from_preset("facebook/opt-1.3b") as opt:
        assert (opt.attention_dropout, opt.hidden_dropout) == (0.0, 0.1)
    with pytest.raises(llmem.OutOfRange):
        llmem.Model("gpt2", attention_dropout=1.0)
    # a site the family's code lacks takes only 0: the estimate says so
    with llmem.Model.from_preset("meta-llama/Llama-3.2-1B", hidden_dropout=0.1) as llama:
        with pytest.raises(llmem.Inconsistent, match="^hidden-dropout: 0.1, but llama models"):
            llama.validate()


def test_unset_dropout_is_the_models_own():
    with llmem.Train() as train:
        assert train.dropout == -1.0
        own = llmem.estimate("gpt2", batch=2, seq=256).peak_allocated
        assert llmem.estimate("gpt2", batch=2, seq=256, dropout=0.1).peak_allocated == own
        assert llmem.estimate("gpt2", batch=2, seq=256, dropout="model").peak_allocated == own
        assert llmem.estimate("gpt2", batch=2, seq=256, dropout=0).peak_allocated < own
        train.dropout = 0.3
        train.dropout = "model"
        assert train.dropout == -1.0


def test_lora_targets_read_back_as_set():
    # Names resolve in the model's family when an estimate runs, role bits in
    # every family: what was read, set again, changes nothing (GPT-2 has no
    # q_proj; the default, role bits q | v, is its c_attn).
    field = llmem.TRAIN_FIELDS["lora_targets"]
    assert field.is_mask
    names = dict(field.choices)
    assert {"q_proj", "v_proj", "c_attn"} <= set(names)
    assert names["c_attn"] == names["q_proj"] | names["k_proj"] | names["v_proj"]
    with llmem.Train(lora_targets=["c_attn", "o_proj"]) as train:
        assert train.lora_targets == "c_attn,o_proj"
        train.lora_targets = "v_proj"
        assert train.lora_targets == "v_proj"
        train.lora_targets = names["q_proj"] | names["v_proj"]
        assert train.lora_targets == names["q_proj"] | names["v_proj"]
    with llmem.Train(method="lora") as train:
        default = train.lora_targets
        assert default == names["q_proj"] | names["v_proj"]
        again = llmem.Train(**train.to_dict())
        gpt2 = llmem.Model.from_preset("gpt2")
        assert (llmem.Estimate().run(gpt2, again).peak_allocated ==
                llmem.Estimate().run(gpt2, train).peak_allocated)
        # the full method with the default read back is still accepted
        llmem.estimate("gpt2", lora_targets=llmem.Train().lora_targets)


def test_a_misspelt_field_is_an_error():
    with llmem.Train() as train:
        with pytest.raises(AttributeError, match="did you mean 'batch'"):
            train.bacth = 64
        assert train.batch == 1


def test_the_gpu_is_a_field_named_by_the_catalog():
    field = llmem.TRAIN_FIELDS["gpu"]
    assert field.is_enum and not field.is_mask and field.minimum == 0
    names = [name for name, _ in field.choices]
    assert "H100-SXM" in names and "A100-80GB" in names and len(names) == field.maximum
    with llmem.Train() as train:
        assert train.gpu is None  # no GPU chosen
        train.gpu = "NVIDIA H100 80GB HBM3"  # any name llmem gpus accepts
        assert train.gpu == "H100-SXM"
        train.set(gpu="a100-80gb")
        assert train.get("gpu") == "A100-80GB"
        with pytest.raises(llmem.NotFound) as info:
            train.gpu = "A100"
        assert info.value.field == "gpu" and "A100-40GB" in str(info.value)
        assert train.gpu == "A100-80GB"  # unchanged by the failure
        train.gpu = None
        assert train.gpu is None and train.to_dict()["gpu"] is None


def test_the_gpu_changes_the_estimate():
    hopper = llmem.estimate("gpt2", batch=2)
    ampere = llmem.estimate("gpt2", batch=2, gpu="A100-80GB")
    assert llmem.estimate("gpt2", batch=2, gpu="H100").peak_device == hopper.peak_device
    # two cuBLAS workspaces each (32 MiB, 8,519,680 B) and the context (777 MiB
    # measured on Hopper, the 287 MiB default on Ampere)
    assert hopper.peak_device - ampere.peak_device == \
        2 * (32 * 2**20 - 8519680) + (777 - 287) * 2**20


def test_a_field_the_setup_does_not_read_is_refused():
    # the article's sum reads no dropout: set, it is an error naming it
    with pytest.raises(llmem.Inconsistent, match=r"^dropout: 0\.1 is not read.*formula phased"):
        llmem.estimate("meta-llama/Llama-3.2-1B", formula="article", dropout=0.1)
    with pytest.raises(llmem.Inconsistent, match=r"^lora-rank: 16 .*method lora or qlora"):
        llmem.estimate("meta-llama/Llama-3.2-1B", method="full", lora_rank=16)
    # at its default it changes nothing: accepted; the default is the model's own
    # dropouts, so a probability, 0 included, is refused
    llmem.estimate("meta-llama/Llama-3.2-1B", formula="article", dropout="model")
    with pytest.raises(llmem.Inconsistent, match=r"^dropout: 0 is not read"):
        llmem.estimate("meta-llama/Llama-3.2-1B", formula="article", dropout=0.0)
    with llmem.Train(method="full") as t:
        assert "method lora or qlora" in t.unread("lora_rank")
        assert t.unread("batch") is None
        t.method = "lora"
        assert t.unread("lora_rank") is None
        with pytest.raises(TypeError, match="no_such_field"):
            t.unread("no_such_field")
    # a layout's fields: the same question, and the same refusal
    with llmem.Parallel(dp=4, sharding="fsdp-full") as p:
        assert "zero1, zero2 or zero3" in p.unread("bucket_elements")
        assert p.unread("dp") is None
        p.sharding = "zero2"
        assert p.unread("bucket_elements") is None
    with pytest.raises(llmem.Inconsistent, match=r"^bucket-elements: 1000 is not read"):
        llmem.estimate("meta-llama/Llama-3.2-1B", dp=4, sharding="fsdp-full",
                       bucket_elements=1000)


@pytest.mark.parametrize("make,keyword", [
    (llmem.Train, "precision"), (llmem.Train, "optimizer"), (llmem.Train, "batch"),
    (llmem.Train, "dropout"), (llmem.Train, "lora_targets"), (llmem.Parallel, "sharding"),
    (llmem.Parallel, "dp"), (llmem.Plan, "gpus"),
    (lambda **kw: llmem.Model("llama", **kw), "norm"),
])
def test_none_is_a_value_only_of_the_gpu(make, keyword):
    # precision=None was "value 0 out of range [1, 5]": a value never given.
    name = keyword.replace("_", "-")
    with pytest.raises(TypeError, match="^%s: None is not a value of this field" % name):
        make(**{keyword: None})
    obj = make()
    before = obj.get(keyword)
    with pytest.raises(TypeError, match="^%s: None" % name):
        setattr(obj, keyword, None)
    assert obj.get(keyword) == before
    assert llmem.Train(gpu=None).gpu is None


def test_lora_modules_names_the_targets_in_the_models_family():
    # Role bits read back as an int (a Train has no family to name them in);
    # lora_modules(model) names them, and those names set again give the
    # same estimate.
    for preset, names in (("gpt2", "c_attn"), ("meta-llama/Llama-3.2-1B", "q_proj,v_proj"),
                          ("microsoft/Phi-3-mini-4k-instruct", "qkv_proj")):
        model = llmem.Model.from_preset(preset)
        with llmem.Train(method="lora") as train:
            assert train.lora_modules(model) == names
            again = llmem.Train(method="lora", lora_targets=train.lora_modules(model))
            assert (llmem.Estimate().run(model, again).peak_allocated ==
                    llmem.Estimate().run(model, train).peak_allocated)
    with llmem.Train(method="lora", lora_targets="all-linear") as train:
        assert train.lora_targets == "all-linear"
        assert train.lora_modules(llmem.Model.from_preset("gpt2")) == "c_attn,c_proj,c_fc"
        result = llmem.Estimate().run(llmem.Model.from_preset("meta-llama/Llama-3.1-8B"), train)
        assert result.params_trainable == 20971520  # PEFT's count, r = 8
    o_role = dict(llmem.TRAIN_FIELDS["lora_targets"].choices)["o_proj"]
    with llmem.Train(method="lora", lora_targets=o_role) as train:
        with pytest.raises(llmem.Error, match="c_proj"):
            train.lora_modules(llmem.Model.from_preset("gpt2"))
    with pytest.raises(TypeError):
        llmem.Train().lora_modules("gpt2")


def test_messages_keep_every_choice_and_suggest_a_near_name():
    with pytest.raises(llmem.Error) as info:
        llmem.Train(optimizer="adamw8")
    assert "did you mean 'adamw-8bit'?" in str(info.value)
    assert str(info.value).endswith("paged_lion_8bit|paged_lion_32bit)")
    with pytest.raises(llmem.Error, match="did you mean 'meta-llama/Llama-3.1-8B'"):
        llmem.Model.from_preset("Llama-3.1-8")
    assert (llmem.Model.from_preset("LLAMA-3.2-1b").param_count ==
            llmem.Model.from_preset("meta-llama/Llama-3.2-1B").param_count)
