# SPDX-License-Identifier: MIT
"""Threads: one context per thread (the default), or a shared one that the
package serializes; results equal those computed in one thread."""
import threading
from concurrent.futures import ThreadPoolExecutor

import llmem

MODELS = ["meta-llama/Llama-3.2-1B", "openai-community/gpt2", "Qwen/Qwen2.5-0.5B",
          "microsoft/Phi-3-mini-4k-instruct"]
JOBS = [(m, b, s) for m in MODELS for b in (1, 2, 4) for s in (256, 1024)]


def sequential():
    return {job: llmem.estimate(job[0], batch=job[1], seq=job[2]) for job in JOBS}


def test_each_thread_gets_its_own_default_context():
    seen = []
    barrier = threading.Barrier(4)

    def work():
        barrier.wait()
        seen.append(llmem.default_context())
        barrier.wait()  # all alive at once: no reuse of a freed one

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len({id(c) for c in seen}) == 4
    assert llmem.default_context() not in seen


def test_threads_with_their_own_contexts_agree_with_one_thread():
    expected = sequential()

    def work(job):
        model, batch, seq = job
        with llmem.Model.from_preset(model) as m, llmem.Train(batch=batch, seq=seq) as t, \
                llmem.Estimate() as e:
            results = [e.run(m, t) for _ in range(5)]
        assert all(r == results[0] for r in results)
        return job, results[0]

    with ThreadPoolExecutor(max_workers=8) as pool:
        got = dict(pool.map(work, JOBS * 3))
    assert got == expected


def test_a_shared_context_is_serialized():
    expected = sequential()
    ctx = llmem.Context()
    model = llmem.Model.from_preset(MODELS[0], context=ctx)

    def work(job):
        name, batch, seq = job
        if name == MODELS[0]:
            with llmem.Train(context=ctx, batch=batch, seq=seq) as t, \
                    llmem.Estimate(context=ctx) as e:
                return job, e.run(model, t)
        return job, llmem.estimate(name, context=ctx, batch=batch, seq=seq)

    with ThreadPoolExecutor(max_workers=6) as pool:
        got = dict(pool.map(work, JOBS * 2))
    assert got == expected


def test_a_shared_context_keeps_each_error_with_its_call():
    ctx = llmem.Context()
    failures = []

    def work(i):
        for _ in range(200):
            try:
                llmem.Train(context=ctx, batch=0 if i % 2 else 1, lora_rank=1 if i % 2 else 0)
            except llmem.OutOfRange as exc:
                failures.append((i % 2, exc.field, str(exc).split(":")[0]))

    threads = [threading.Thread(target=work, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(failures) == 1200
    assert all((field, name) == (("batch", "batch") if odd else ("lora_rank", "lora-rank"))
               for odd, field, name in failures)
