# SPDX-License-Identifier: MIT
"""Handles are freed by close(), by `with`, and by the garbage collector; an
object keeps its context alive; closing a context closes its objects."""
import gc
import threading
import weakref

import pytest

import llmem
from conftest import run_python


def test_close_is_idempotent_and_a_closed_object_refuses_use():
    model = llmem.Model.from_preset("gpt2")
    assert not model.closed
    model.close()
    model.close()
    assert model.closed
    with pytest.raises(ValueError, match="closed model"):
        model.layers
    with pytest.raises(ValueError, match="closed"):
        llmem.estimate(model)
    assert "closed" in repr(model)


def test_with_blocks_close():
    with llmem.Train() as train, llmem.Estimate() as est:
        assert not train.closed and not est.closed
    assert train.closed and est.closed


def test_the_collector_frees_an_unreferenced_handle():
    model = llmem.Model.from_preset("gpt2")
    finalizer = model._finalizer
    ref = weakref.ref(model)
    assert finalizer.alive
    del model
    gc.collect()
    assert ref() is None
    assert not finalizer.alive  # llmem_model_free ran


def test_an_object_keeps_its_context_alive():
    ctx = llmem.Context()
    ctx_finalizer = ctx._finalizer
    model = llmem.Model.from_preset("gpt2", context=ctx)
    del ctx
    gc.collect()
    assert ctx_finalizer.alive  # the model still holds it
    assert model.param_count == 124439808
    with pytest.raises(llmem.NotFound):
        model.norm = "nonorm"  # the error message lives in that context
    del model
    gc.collect()
    assert not ctx_finalizer.alive


def test_closing_a_context_closes_its_objects_first():
    ctx = llmem.Context()
    model = llmem.Model.from_preset("gpt2", context=ctx)
    train = llmem.Train(context=ctx)
    other = llmem.Train()  # the thread's default context: untouched
    ctx.close()
    assert ctx.closed and model.closed and train.closed
    assert not other.closed and other.batch == 1
    with pytest.raises(ValueError):
        llmem.Train(context=ctx)


def test_a_closed_default_context_is_replaced():
    first = llmem.default_context()
    first.close()
    second = llmem.default_context()
    assert second is not first and not second.closed
    assert llmem.estimate("gpt2").params_total == 124439808


def test_many_objects_come_and_go():
    ctx = llmem.Context()
    for _ in range(2000):
        llmem.Model.from_preset("gpt2", context=ctx)
        llmem.Train(context=ctx, batch=2)
    gc.collect()
    assert len(ctx._children) == 0


def test_objects_alive_at_exit_are_freed_cleanly():
    code = ("import llmem\n"
            "ctx = llmem.Context()\n"
            "m = llmem.Model.from_preset('gpt2', context=ctx)\n"
            "t = llmem.Train(context=ctx)\n"
            "e = llmem.Estimate(context=ctx)\n"
            "r = e.run(m, t)\n"
            "cycle = [m, t, e]; cycle.append(cycle)\n"
            "print(r.peak_allocated > 0)\n")
    rc, out, err = run_python(code)
    assert (rc, out.strip(), err) == (0, "True", "")



def test_the_collector_never_waits_for_a_context_held_by_another_thread():
    ctx = llmem.Context()
    train = llmem.Train(context=ctx)
    finalizer = train._finalizer
    held, release = threading.Event(), threading.Event()

    def hold():
        with ctx._lock:
            held.set()
            release.wait(30)

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert held.wait(30)
        del train
        gc.collect()  # would hang here if the finalizer waited for the lock
        assert not finalizer.alive
        assert len(ctx._lock._pending) == 1  # queued, not freed under the holder
    finally:
        release.set()
        holder.join()
    assert len(ctx._lock._pending) == 0  # freed when the holder let go
    assert llmem.Train(context=ctx, batch=2).batch == 2
