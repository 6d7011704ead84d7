"""A tensor-parallel Llama over gloo: rank r of a Megatron-LM style split.

The model is ../models.py's LlamaForCausalLM (the Hugging Face eager code
path, op for op) with its tensors split as Megatron-LM's tensor parallelism
splits them (megatron/core/tensor_parallel/layers.py, the layout llmem's
``--tp`` models, docs/partitioning.md):

* q, k, v, gate and up are column-parallel: each rank holds heads/tp query
  heads, kv_heads/tp key/value heads and intermediate/tp rows of gate and up;
  its input goes through Megatron's "copy to the tensor-parallel region"
  (identity forward, all-reduce of the input's gradient in backward), one per
  linear, as ColumnParallelLinear applies it;
* o and down are row-parallel: each rank holds the matching input columns;
  the output goes through "reduce from the region" (all-reduce in place
  forward, identity backward);
* the embedding is vocabulary-parallel (VocabParallelEmbedding: ids outside
  the rank's range masked, looked up in the local rows, their rows zeroed,
  all-reduce); the output layer is column-parallel over the vocabulary
  (logits stay split, ``parallel_output=True``);
* norms and the rotary table are replicated.

The loss, two ways (``opts['loss']``):

``megatron``  Megatron's vocab-parallel cross entropy
              (tensor_parallel/cross_entropy.py, _VocabParallelCrossEntropy):
              the logits' max, the target logit and the sum of exponentials
              are all-reduced; the logits are shifted, exponentiated and
              normalised in place, and that one tensor is what backward keeps
              (with the target mask and the local targets); backward turns it
              into the gradient in place.  Labels are taken as already
              shifted (Megatron's data loader shifts them).
``hf-shard``  the Hugging Face loss (models.causal_lm_loss) run on the rank's
              vocabulary shard, labels mapped into it: not a cross entropy
              over the whole vocabulary, but exactly the ops llmem's walk runs
              on each rank under --tp (the HF loss with vocab / tp).  It
              checks the rest of the rank's walk (layers, parameters, states).

Each rank's tensors are copied from one full model built with the same seed,
so the split model computes the full model's function: ``build_rank`` checks
the ``megatron`` loss against the full model's cross entropy on the same
batch (``tp_loss_check``).  fp32 only (the parameters the optimizer updates
are the rank's shards; no data parallelism: world = tp).
"""

from __future__ import annotations

import os
import sys

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import measure as ms  # noqa: E402
import models as M  # noqa: E402


class _CopyToRegion(torch.autograd.Function):
    """Identity forward; all-reduce of the gradient in backward."""

    @staticmethod
    def forward(ctx, x):
        return x

    @staticmethod
    def backward(ctx, grad):
        dist.all_reduce(grad)
        return grad


class _ReduceFromRegion(torch.autograd.Function):
    """All-reduce in place forward; identity backward."""

    @staticmethod
    def forward(ctx, x):
        dist.all_reduce(x)
        return x

    @staticmethod
    def backward(ctx, grad):
        return grad


class _VocabParallelCE(torch.autograd.Function):
    """Cross entropy over vocabulary shards; per-token losses."""

    @staticmethod
    def forward(ctx, logits, target, start, end):
        logits_max = torch.max(logits, dim=-1)[0]
        dist.all_reduce(logits_max, op=dist.ReduceOp.MAX)
        logits.sub_(logits_max.unsqueeze(-1))
        outside = (target < start) | (target >= end)
        local_target = target.clone() - start
        local_target[outside] = 0
        vp = logits.size(-1)
        logits_2d = logits.view(-1, vp)
        local_target_1d = local_target.view(-1)
        rows = torch.arange(logits_2d.size(0), device=logits.device)
        picked = logits_2d[rows, local_target_1d].clone().contiguous().view_as(target)
        picked[outside] = 0.0
        dist.all_reduce(picked)
        torch.exp(logits, out=logits)
        sum_exp = logits.sum(dim=-1)
        dist.all_reduce(sum_exp)
        loss = torch.log(sum_exp) - picked
        logits.div_(sum_exp.unsqueeze(-1))
        ctx.save_for_backward(logits, outside, local_target_1d)
        return loss

    @staticmethod
    def backward(ctx, grad_loss):
        softmax, outside, local_target_1d = ctx.saved_tensors
        vp = softmax.size(-1)
        grad_2d = softmax.view(-1, vp)
        rows = torch.arange(grad_2d.size(0), device=softmax.device)
        grad_2d[rows, local_target_1d] -= 1.0 - outside.view(-1).float()
        softmax.mul_(grad_loss.unsqueeze(-1))
        return softmax, None, None, None


class VocabParallelEmbedding(nn.Module):
    def __init__(self, rows, hidden, start):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(rows, hidden))
        self.start, self.end = start, start + rows

    def forward(self, ids):
        outside = (ids < self.start) | (ids >= self.end)
        local = ids.clone() - self.start
        local[outside] = 0
        out = F.embedding(local, self.weight)
        out[outside, :] = 0.0
        return _ReduceFromRegion.apply(out)


class TPLlama(M.LlamaForCausalLM):
    """Rank ``rank`` of a tp-way split of a Llama; ``cfg`` has the rank's
    head counts, inner size and vocabulary rows."""

    def __init__(self, cfg, rank, tp, loss):
        super().__init__(cfg)
        self.rank, self.tp, self.loss_kind = rank, tp, loss
        self.vocab_start = rank * cfg.vocab
        self.embed_tokens = VocabParallelEmbedding(cfg.vocab, cfg.hidden, self.vocab_start)
        for layer in self.layers:
            a, m = layer.self_attn, layer.mlp
            for lin in (a.q_proj, a.k_proj, a.v_proj, m.gate_proj, m.up_proj):
                lin.register_forward_pre_hook(lambda mod, inp: (_CopyToRegion.apply(inp[0]),))
            for lin in (a.o_proj, m.down_proj):
                lin.register_forward_hook(lambda mod, inp, out: _ReduceFromRegion.apply(out))

    def forward(self, input_ids, attention_mask=None, labels=None):
        hidden = self.model(input_ids, attention_mask)[0]
        logits = M.linear(self.amp, _CopyToRegion.apply(hidden), self.lm_head.weight)
        loss = None
        if labels is not None:
            vp = self.cfg.vocab
            if self.loss_kind == "megatron":
                start = self.vocab_start
                loss = _VocabParallelCE.apply(logits, labels, start, start + vp).mean()
            elif self.loss_kind == "hf-shard":
                loss = M.causal_lm_loss(logits, labels.remainder(vp), vp)
            else:
                raise ValueError("unknown loss %r" % self.loss_kind)
        return {"loss": loss, "logits": logits}


def _split(full, part, rank, tp):
    """Copy the rank's share of every tensor of ``full`` into ``part``."""
    cfg = full.cfg
    d = cfg.head_dim

    def rows(w, n):
        return w.detach()[rank * n:(rank + 1) * n]

    def cols(w, n):
        return w.detach()[:, rank * n:(rank + 1) * n]

    with torch.no_grad():
        vp = part.cfg.vocab
        part.embed_tokens.weight.copy_(rows(full.embed_tokens.weight, vp))
        part.lm_head.weight.copy_(rows(full.lm_head.weight, vp))
        part.norm.weight.copy_(full.norm.weight)
        for lf, lp in zip(full.layers, part.layers):
            af, ap_ = lf.self_attn, lp.self_attn
            ap_.q_proj.weight.copy_(rows(af.q_proj.weight, cfg.heads // tp * d))
            ap_.k_proj.weight.copy_(rows(af.k_proj.weight, cfg.kv_heads // tp * d))
            ap_.v_proj.weight.copy_(rows(af.v_proj.weight, cfg.kv_heads // tp * d))
            ap_.o_proj.weight.copy_(cols(af.o_proj.weight, cfg.heads // tp * d))
            mf, mp_ = lf.mlp, lp.mlp
            n = cfg.intermediate // tp
            mp_.gate_proj.weight.copy_(rows(mf.gate_proj.weight, n))
            mp_.up_proj.weight.copy_(rows(mf.up_proj.weight, n))
            mp_.down_proj.weight.copy_(cols(mf.down_proj.weight, n))
            lp.input_layernorm.weight.copy_(lf.input_layernorm.weight)
            lp.post_attention_layernorm.weight.copy_(lf.post_attention_layernorm.weight)


def build_rank(rc, rank, tp, opts):
    """The rank's model, optimizer and batch (the same batch on every rank),
    and a check that the split computes the full model's loss."""
    if rc.family != "llama" or rc.precision != "fp32" or rc.method != "full" \
            or rc.tie_embeddings or rc.attn_bias or rc.grad_ckpt != "none":
        raise ValueError("tp.py: Llama, fp32, full fine-tuning, untied, no bias, "
                         "no checkpointing only")
    if rc.heads % tp or rc.kv_heads % tp or rc.intermediate % tp or rc.vocab % tp:
        raise ValueError("tp.py: tp must divide heads, kv_heads, intermediate and vocab")
    loss = opts.get("loss", "megatron")
    full = M.build_model(rc.arch(), seed=rc.seed)
    arch = rc.arch()
    arch.heads //= tp
    arch.kv_heads //= tp
    arch.intermediate //= tp
    arch.vocab //= tp
    torch.manual_seed(rc.seed)
    model = TPLlama(arch, rank, tp, loss)
    _split(full, model, rank, tp)
    model.train()
    batch = ms.make_batch(rc, rc.device)
    with torch.no_grad():
        ref = F.cross_entropy(full(**{k: batch[k] for k in ("input_ids", "attention_mask")}
                                   )["logits"].view(-1, rc.vocab), batch["labels"].view(-1))
        mine = _VocabParallelCE.apply(
            model(batch["input_ids"], batch["attention_mask"])["logits"], batch["labels"],
            model.vocab_start, model.vocab_start + arch.vocab).mean()
    del full
    opt = ms.make_optimizer(rc.optimizer, ms.trainer_param_groups(model))
    info = {"tp_loss": loss, "tp_loss_check": [float(ref), float(mine)],
            "tp_rank_params": sum(p.numel() for p in model.parameters())}
    return model, opt, batch, info
