# SPDX-License-Identifier: MIT
"""The timeline from Python: the C API's points (`llmem --json --timeline`),
whose largest total is the peak, in the order of the step."""
import dataclasses

import pytest

import llmem

LLAMA_8B = "meta-llama/Llama-3.1-8B"
TERMS = ("parameters", "optimizer", "data", "temporary")
PARTS = {"embedding", "norm", "attention", "mlp", "head", "loss", "recompute", "layer",
         "optimizer"}
PHASE_ORDER = [name for _, name in llmem.PHASES]
# Setups on one GPU, (keywords, layers of the model)
SETUPS = [
    (dict(model=LLAMA_8B, batch=4, seq=2048), 32),
    (dict(model=LLAMA_8B, batch=4, seq=2048, grad_ckpt="full"), 32),
    (dict(model=LLAMA_8B, batch=2, seq=1024, grad_ckpt="reentrant", attention="eager",
          optimizer_impl="foreach"), 32),
    (dict(model="meta-llama/Llama-3.2-1B", method="qlora", lora_rank=16, grad_ckpt="full",
          optimizer="paged-adamw-8bit"), 16),
    (dict(model="openai-community/gpt2", precision="fp32", batch=8, seq=1024, loss="chunked",
          dropout=0.1), 12),
    (dict(model="Qwen2.5-0.5B", method="freeze", freeze_layers=10, grad_accum=4), 24),
]
IDS = ["8b", "8b-ckpt", "8b-reentrant-eager", "1b-qlora", "gpt2-fp32", "qwen-freeze"]


def run(keywords, expand=False):
    keywords = dict(keywords)
    return llmem.estimate(keywords.pop("model"), timeline=not expand, expand_timeline=expand,
                          **keywords)


def content(point):
    """A point as `llmem --json --timeline` writes it: all but its index."""
    fields = dataclasses.asdict(point)
    del fields["index"]
    return fields


@pytest.mark.parametrize("expand", [False, True], ids=["folded", "expanded"])
@pytest.mark.parametrize("keywords,layers", SETUPS, ids=IDS)
def test_largest_total_is_the_allocated_peak(keywords, layers, expand):
    result = run(keywords, expand)
    timeline = result.timeline
    totals = [p.total for p in timeline]
    assert [p.index for p in timeline] == list(range(len(timeline)))
    assert max(totals) == result.peak_allocated
    assert timeline.peak == totals.index(max(totals))  # the first point at the peak
    assert timeline[timeline.peak].phase == result.peak_phase
    assert all(p.total == sum(getattr(p, t) for t in TERMS) for p in timeline)


@pytest.mark.parametrize("keywords,layers", SETUPS, ids=IDS)
def test_points_follow_the_step(keywords, layers):
    timeline = run(keywords).timeline
    phases = [PHASE_ORDER.index(p.phase) for p in timeline]
    assert phases == sorted(phases)
    assert timeline[0].phase == "forward" and timeline[0].part == "embedding"
    assert (timeline[-1].phase, timeline[-1].part, timeline[-1].layer) == \
        ("optimizer", "optimizer", -1)
    assert {p.part for p in timeline} <= PARTS
    forward = [p.layer for p in timeline if p.phase == "forward" and p.layer >= 0]
    backward = [p.layer for p in timeline if p.phase == "backward" and p.layer >= 0]
    assert forward == sorted(forward) and set(forward) == set(range(layers))
    assert backward == sorted(backward, reverse=True)
    # The weights and the batch stay; what the step makes comes and goes.
    assert len({(p.parameters, p.data) for p in timeline}) == 1
    assert timeline[0].temporary == 0 and timeline[-1].temporary >= 0


@pytest.mark.parametrize("keywords,layers", SETUPS[:2] + SETUPS[3:4], ids=IDS[:2] + IDS[3:4])
def test_the_points_are_the_clis(cli, keywords, layers):
    keywords = dict(keywords)
    flags = ["--model", keywords.pop("model"), "--timeline"]
    for name, value in keywords.items():
        flags += ["--" + name.replace("_", "-"), value]
    js = cli(*flags)
    timeline = run(dict(keywords, model=flags[1])).timeline
    assert [content(p) for p in timeline] == js["timeline"]
    assert timeline.peak == js["timeline_peak"]


@pytest.mark.parametrize("keywords,layers", SETUPS, ids=IDS)
def test_folded_and_expanded_agree(keywords, layers):
    folded, expanded = run(keywords).timeline, run(keywords, expand=True).timeline
    assert len(expanded) > len(folded)
    # Outside the layers (embedding, head, loss, optimizer) the points are the same.
    assert [content(p) for p in folded if p.layer < 0] == \
        [content(p) for p in expanded if p.layer < 0]
    # The folded timeline shows the layer holding the peak op by op: the same point.
    assert content(folded[folded.peak]) == content(expanded[expanded.peak])
    # Expanded, every layer is op by op; folded, one layer of each run of
    # identical layers is (one run, or frozen and trainable ones), the others
    # one point each.
    def forward_points(timeline):
        return [sum(1 for p in timeline if p.phase == "forward" and p.layer == n)
                for n in range(layers)]
    assert min(forward_points(expanded)) > 1
    shown = [n for n, count in enumerate(forward_points(folded)) if count > 1]
    assert min(forward_points(folded)) == 1
    assert (len(shown) == 1) if keywords.get("method") != "freeze" else (1 < len(shown) <= 3)


def test_each_rank_has_its_timeline():
    result = llmem.estimate(LLAMA_8B, seq=2048, dp=8, sharding="fsdp-full", pp=2, micro_batches=4,
                            timeline=True)
    assert len(result.ranks) == 2
    assert result.timeline == result.ranks[result.peak_rank].timeline
    for rank in result.ranks:
        timeline = rank.timeline
        assert max(p.total for p in timeline) == rank.peak_allocated
        assert timeline[timeline.peak].total == rank.peak_allocated
        layers = {p.layer for p in timeline if p.layer >= 0}
        assert layers == set(range(rank.layer_first, rank.layer_first + rank.layers))
    first, last = (r.timeline for r in result.ranks)
    assert any(p.part == "embedding" for p in first) and not any(p.part == "loss" for p in first)
    assert any(p.part == "loss" for p in last) and not any(p.part == "embedding" for p in last)


def test_no_timeline_unless_asked_or_with_the_article_formula():
    assert llmem.estimate("gpt2").timeline is None
    result = llmem.estimate("Llama-2-7b-hf", formula="article", timeline=True)
    assert result.timeline is None and result.ranks[0].timeline is None


def test_capacity_keeps_the_first_points():
    with llmem.Model.from_preset(LLAMA_8B) as model, llmem.Train(batch=2, seq=1024) as train, \
            llmem.Estimate() as est:
        est.record_timeline(expand=True)  # grows from its first room of 1024 points
        whole = est.run(model, train).timeline
        assert len(whole) > 1024
        est.record_timeline(expand=True, capacity=1 << 16)
        assert est.run(model, train).timeline == whole
        est.record_timeline(expand=True, capacity=10)
        assert est.run(model, train).timeline.points == whole.points[:10]
        est.record_timeline(capacity=0)
        assert est.run(model, train).timeline is None
        with pytest.raises(ValueError):
            est.record_timeline(capacity=-1)


def test_a_handle_records_every_run():
    with llmem.Model.from_preset("meta-llama/Llama-3.2-1B") as model, llmem.Train() as train, \
            llmem.Estimate() as est:
        est.record_timeline()
        peaks = []
        for batch in (1, 4):
            train.batch = batch
            result = est.run(model, train)
            assert result.timeline[result.timeline.peak].total == result.peak_allocated
            peaks.append(result.peak_allocated)
        assert peaks[1] > peaks[0]


@pytest.mark.parametrize("keywords", [dict(model="meta-llama/Llama-3.2-1B", batch=2, seq=1024),
                                      dict(model=LLAMA_8B, seq=2048, dp=2, pp=2,
                                           micro_batches=4)], ids=["1b", "8b-pp2"])
def test_a_capacity_short_of_the_peak_has_no_peak(keywords):
    # The library's peak index is the largest of the points kept: with a
    # capacity short of the step's peak, timeline[timeline.peak] was some
    # earlier point, not the rank's peak_allocated.
    keywords = dict(keywords)
    with llmem.Model.from_preset(keywords.pop("model")) as model, \
            llmem.Train(**{k: v for k, v in keywords.items() if k in llmem.TRAIN_FIELDS}) \
            as train, llmem.Parallel(**{k: v for k, v in keywords.items()
                                        if k in llmem.PARALLEL_FIELDS}) as layout, \
            llmem.Estimate() as est:
        est.record_timeline()
        whole = est.run(model, train, layout)
        peaks = [r.timeline.peak for r in whole.ranks]
        lengths = [len(r.timeline) for r in whole.ranks]
        capacities = {1, 5, min(peaks), max(peaks), min(peaks) + 1, max(peaks) + 1,
                      min(lengths), max(lengths), max(lengths) + 1, 1 << 16}
        for capacity in sorted(capacities):
            est.record_timeline(capacity=capacity)
            result = est.run(model, train, layout)
            for rank, kept in zip(result.ranks, whole.ranks):
                timeline = rank.timeline
                assert timeline.points == kept.timeline.points[:capacity]
                if capacity > kept.timeline.peak:
                    assert timeline.peak == kept.timeline.peak, capacity
                    assert timeline[timeline.peak].total == rank.peak_allocated
                else:
                    assert timeline.peak is None, capacity
        est.record_timeline(capacity=0)
        assert est.run(model, train, layout).timeline is None
