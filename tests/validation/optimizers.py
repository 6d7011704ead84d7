"""Optimizers whose step() allocates what PyTorch 2.x allocates on CUDA.

torch 1.13's own CPU foreach AdamW keeps more temporaries alive than the
torch 2.x implementation the estimator models, so the measured step uses
these re-implementations.  Each one runs the same sequence of foreach /
per-tensor ops as the torch 2.x code path named in its docstring; the
transient (bytes alive during step() beyond params + grads + states) is:

=============  ===========================================================
optimizer      transient during step()
=============  ===========================================================
adamw, adam    one tensor per trainable parameter, allocated at once by
               ``torch._foreach_sqrt(exp_avg_sqs)``: the size of all
               trainable parameters *of one (param group, dtype) bucket*
               (the HF Trainer makes two groups, decay / no-decay, so the
               temporary is the larger group: everything but biases and
               norm weights).  ``fused=True`` would hold none.
sgd            none (``_foreach_add_(params, grads, alpha=-lr)``).
sgd-momentum   none in steady state (``_foreach_mul_`` / ``_foreach_add_`` on
               the momentum buffers); the first step clones the gradients
               into the buffers (that is the warm-up step here).
lion           per parameter, sequentially: ``exp_avg.clone()`` and the
               ``.add(grad)`` result coexist for an instant, so 2 x the
               largest trainable parameter, then 1 x until the update is
               applied (lion-pytorch reference ``update_fn``).
=============  ===========================================================

Step counters are Python numbers: torch 2.x keeps ``state['step']`` as a
0-dim CPU tensor unless ``capturable``/``fused``, i.e. host memory, not GPU
memory.  ``zero_grad`` sets gradients to None (torch 2.x default).

AdamW and Adam also come in torch 2.x's two other implementations
(``make_optimizer(name, impl, groups)``; foreach is the one above):

=============  ===========================================================
implementation transient during step() (AdamW, Adam)
=============  ===========================================================
fused          none: ``torch._fused_adamw_`` is one multi-tensor kernel
               that updates in registers.  torch 1.13 has no fused Adam on
               the CPU, so ``AdamWFused`` does the same arithmetic in place
               inside ``kernel_internal()`` (live_tracker.py), which the
               tracker does not see, standing for the kernel's registers.
               ``state['step']`` is a 0-dim fp32 tensor on the parameter's
               device (``_get_scalar_dtype(is_fused=True)``): 4 GPU bytes a
               parameter, counted as state here too, and incremented in
               place by ``_foreach_add_``.
forloop        ``_single_tensor_adam`` (foreach=False), op for op: per
               parameter ``denom = (exp_avg_sq.sqrt() / bc2_sqrt).add_(eps)``
               while ``denom`` still holds the previous parameter's: the
               largest previous + 2 x current of a group.  Same ops in
               torch 1.13 (lerp_ included), so nothing is substituted.
=============  ===========================================================
"""

from __future__ import annotations

import math

import torch

from live_tracker import kernel_internal


class _Foreach:
    """``torch._foreach_*`` with a per-tensor fallback for the meta device
    (torch 1.13 has no meta kernels for foreach ops).  The fallback keeps the
    same outputs alive (a list built one tensor at a time reaches the same
    total, at the last element, as the single foreach allocation), so the
    peak is unchanged; selftest.py checks meta against CPU."""

    def __getattr__(self, name):
        real = getattr(torch, "_foreach_" + name)

        def call(tensors, *args, **kw):
            if not tensors or not tensors[0].is_meta:
                return real(tensors, *args, **kw)
            outs = []
            for i, t in enumerate(tensors):
                a = [x[i] if isinstance(x, (list, tuple)) else x for x in args]
                k = dict(kw)
                if name.startswith(("addcmul", "addcdiv")) and len(a) == 3:
                    k["value"] = a.pop()
                outs.append(getattr(t, name)(*a, **k))
            return None if name.endswith("_") else outs
        return call


_fe = _Foreach()


def _group_by_dtype(params):
    """torch.optim.Optimizer._group_tensors_by_device_and_dtype (one device)."""
    buckets = {}
    for i, p in enumerate(params):
        buckets.setdefault((p.device, p.dtype), []).append(i)
    return list(buckets.values())


class _Base:
    name = "base"

    def __init__(self, param_groups, **defaults):
        if isinstance(param_groups, (list, tuple)) and param_groups and isinstance(
                param_groups[0], dict):
            groups = param_groups
        else:
            groups = [{"params": list(param_groups)}]
        self.param_groups = []
        for g in groups:
            g = dict(g)
            g["params"] = list(g["params"])
            for k, v in defaults.items():
                g.setdefault(k, v)
            self.param_groups.append(g)
        self.state = {}

    def zero_grad(self, set_to_none=True):
        for g in self.param_groups:
            for p in g["params"]:
                if set_to_none:
                    p.grad = None
                elif p.grad is not None:
                    p.grad.zero_()

    def state_tensors(self):
        out = []
        for st in self.state.values():
            for v in st.values():
                if isinstance(v, torch.Tensor):
                    out.append(v)
        return out


class AdamW(_Base):
    """torch.optim.AdamW(foreach=True), torch 2.x ``_multi_tensor_adamw``
    (capturable=False, amsgrad=False, maximize=False).

    Per (group, dtype) bucket: ``_foreach_mul_(params, 1 - lr*wd)``;
    ``_foreach_lerp_(exp_avgs, grads, 1-beta1)`` (done here as in-place
    ``_foreach_mul_`` + ``_foreach_add_``: torch 1.13 has no foreach lerp; no
    temporary either way); ``_foreach_mul_(exp_avg_sqs, beta2)``;
    ``_foreach_addcmul_(exp_avg_sqs, grads, grads, 1-beta2)``;
    ``exp_avg_sq_sqrt = _foreach_sqrt(exp_avg_sqs)`` (THE temporary);
    ``_foreach_div_`` / ``_foreach_add_`` on it in place;
    ``_foreach_addcdiv_(params, exp_avgs, exp_avg_sq_sqrt, step_size)``.
    """

    name = "adamw"
    decoupled = True

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0):
        super().__init__(params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay)

    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            params_all = [p for p in group["params"] if p.grad is not None]
            if not params_all:
                continue
            lr, wd, eps = group["lr"], group["weight_decay"], group["eps"]
            beta1, beta2 = group["betas"]
            for p in params_all:
                st = self.state.setdefault(p, {})
                if not st:
                    st["step"] = 0
                    st["exp_avg"] = torch.zeros_like(p, memory_format=torch.preserve_format)
                    st["exp_avg_sq"] = torch.zeros_like(p, memory_format=torch.preserve_format)
            for idx in _group_by_dtype(params_all):
                params = [params_all[i] for i in idx]
                grads = [p.grad for p in params]
                exp_avgs = [self.state[p]["exp_avg"] for p in params]
                exp_avg_sqs = [self.state[p]["exp_avg_sq"] for p in params]
                for p in params:
                    self.state[p]["step"] += 1
                steps = [self.state[p]["step"] for p in params]
                if self.decoupled:
                    if wd != 0:
                        _fe.mul_(params, 1 - lr * wd)
                elif wd != 0:
                    grads = _fe.add(grads, params, alpha=wd)
                _fe.mul_(exp_avgs, beta1)
                _fe.add_(exp_avgs, grads, alpha=1 - beta1)
                _fe.mul_(exp_avg_sqs, beta2)
                _fe.addcmul_(exp_avg_sqs, grads, grads, 1 - beta2)
                del grads
                bias_correction1 = [1 - beta1 ** s for s in steps]
                bias_correction2 = [1 - beta2 ** s for s in steps]
                step_size = [(lr / bc) * -1 for bc in bias_correction1]
                bias_correction2_sqrt = [math.sqrt(bc) for bc in bias_correction2]
                exp_avg_sq_sqrt = _fe.sqrt(exp_avg_sqs)
                _fe.div_(exp_avg_sq_sqrt, bias_correction2_sqrt)
                _fe.add_(exp_avg_sq_sqrt, eps)
                _fe.addcdiv_(params, exp_avgs, exp_avg_sq_sqrt, step_size)
                del exp_avg_sq_sqrt


class Adam(AdamW):
    """torch.optim.Adam(foreach=True), torch 2.x ``_multi_tensor_adam``
    (weight_decay=0: same op sequence and temporary as AdamW; with L2 weight
    decay ``grads = _foreach_add(grads, params, alpha=wd)`` adds a temporary
    the size of the bucket, released before the sqrt temporary)."""

    name = "adam"
    decoupled = False

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0):
        super().__init__(params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay)


class AdamWForloop(AdamW):
    """torch.optim.AdamW(foreach=False): torch 2.x ``_single_tensor_adam``
    (decoupled weight decay ``param.mul_(1 - lr*wd)``, ``exp_avg.lerp_``,
    ``exp_avg_sq.mul_().addcmul_()``, then ``denom = (exp_avg_sq.sqrt() /
    bias_correction2_sqrt).add_(eps)`` and ``param.addcdiv_``), one call per
    parameter group, parameters in the group's order."""

    name = "adamw"

    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            params = [p for p in group["params"] if p.grad is not None]
            if params:
                self._single_tensor(group, params)

    def _single_tensor(self, group, params):
        lr, wd, eps = group["lr"], group["weight_decay"], group["eps"]
        beta1, beta2 = group["betas"]
        for param in params:
            grad = param.grad
            st = self.state.setdefault(param, {})
            if not st:
                st["step"] = 0
                st["exp_avg"] = torch.zeros_like(param, memory_format=torch.preserve_format)
                st["exp_avg_sq"] = torch.zeros_like(param, memory_format=torch.preserve_format)
            exp_avg, exp_avg_sq = st["exp_avg"], st["exp_avg_sq"]
            st["step"] += 1
            step = st["step"]
            if wd != 0:
                if self.decoupled:
                    param.mul_(1 - lr * wd)
                else:
                    grad = grad.add(param, alpha=wd)
            exp_avg.lerp_(grad, 1 - beta1)
            exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
            bias_correction1 = 1 - beta1 ** step
            bias_correction2 = 1 - beta2 ** step
            step_size = lr / bias_correction1
            bias_correction2_sqrt = math.sqrt(bias_correction2)
            denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(eps)
            param.addcdiv_(exp_avg, denom, value=-step_size)


class AdamForloop(AdamWForloop):
    """torch.optim.Adam(foreach=False): as AdamWForloop with L2 weight decay."""

    name = "adam"
    decoupled = False


class AdamWFused(AdamW):
    """torch.optim.AdamW(fused=True): ``_fused_adam``: per (device, dtype)
    bucket ``torch._foreach_add_(state_steps, 1)`` then one
    ``torch._fused_adamw_`` kernel.  The kernel's arithmetic is done in place
    per tensor inside ``kernel_internal()`` (see the module docstring)."""

    name = "adamw"

    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            params_all = [p for p in group["params"] if p.grad is not None]
            if not params_all:
                continue
            lr, wd, eps = group["lr"], group["weight_decay"], group["eps"]
            beta1, beta2 = group["betas"]
            for p in params_all:
                st = self.state.setdefault(p, {})
                if not st:
                    st["step"] = torch.zeros((), dtype=torch.float32, device=p.device)
                    st["exp_avg"] = torch.zeros_like(p, memory_format=torch.preserve_format)
                    st["exp_avg_sq"] = torch.zeros_like(p, memory_format=torch.preserve_format)
            for idx in _group_by_dtype(params_all):
                params = [params_all[i] for i in idx]
                steps = [self.state[p]["step"] for p in params]
                _fe.add_(steps, 1)
                with kernel_internal():
                    for p, step_t in zip(params, steps):
                        st = self.state[p]
                        grad = p.grad
                        step = float(step_t)
                        if self.decoupled:
                            p.mul_(1 - lr * wd)
                        elif wd != 0:
                            grad = grad.add(p, alpha=wd)
                        st["exp_avg"].lerp_(grad, 1 - beta1)
                        st["exp_avg_sq"].mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
                        bc1 = 1 - beta1 ** step
                        bc2_sqrt = math.sqrt(1 - beta2 ** step)
                        denom = (st["exp_avg_sq"].sqrt() / bc2_sqrt).add_(eps)
                        p.addcdiv_(st["exp_avg"], denom, value=-lr / bc1)
                        del denom, grad


class AdamFused(AdamWFused):
    """torch.optim.Adam(fused=True): as AdamWFused with L2 weight decay."""

    name = "adam"
    decoupled = False


class SGD(_Base):
    """torch.optim.SGD(foreach=True), torch 2.x ``_multi_tensor_sgd``
    (dampening=0, nesterov=False, weight_decay=0)."""

    name = "sgd"

    def __init__(self, params, lr=1e-3, momentum=0.0):
        super().__init__(params, lr=lr, momentum=momentum)

    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            params_all = [p for p in group["params"] if p.grad is not None]
            if not params_all:
                continue
            lr, momentum = group["lr"], group["momentum"]
            for idx in _group_by_dtype(params_all):
                params = [params_all[i] for i in idx]
                grads = [p.grad for p in params]
                if momentum != 0:
                    if all("momentum_buffer" in self.state.get(p, {}) for p in params):
                        bufs = [self.state[p]["momentum_buffer"] for p in params]
                        _fe.mul_(bufs, momentum)
                        _fe.add_(bufs, grads, alpha=1.0)
                    else:
                        bufs = []
                        for p, g in zip(params, grads):
                            st = self.state.setdefault(p, {})
                            if "momentum_buffer" not in st:
                                st["momentum_buffer"] = torch.clone(g).detach()
                            else:
                                st["momentum_buffer"].mul_(momentum).add_(g, alpha=1.0)
                            bufs.append(st["momentum_buffer"])
                    grads = bufs
                _fe.add_(params, grads, alpha=-lr)


class Lion(_Base):
    """lion-pytorch ``Lion`` (reference ``update_fn``, use_triton=False):
    per parameter ``p.mul_(1 - lr*wd)``;
    ``update = exp_avg.clone().mul_(beta1).add(grad, alpha=1-beta1).sign_()``;
    ``p.add_(update, alpha=-lr)``; ``exp_avg.mul_(beta2).add_(grad, alpha=1-beta2)``.
    """

    name = "lion"

    def __init__(self, params, lr=1e-4, betas=(0.9, 0.99), weight_decay=0.0):
        super().__init__(params, lr=lr, betas=betas, weight_decay=weight_decay)

    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            lr, wd = group["lr"], group["weight_decay"]
            beta1, beta2 = group["betas"]
            for p in [p for p in group["params"] if p.grad is not None]:
                grad = p.grad
                st = self.state.setdefault(p, {})
                if not st:
                    st["exp_avg"] = torch.zeros_like(p)
                exp_avg = st["exp_avg"]
                p.data.mul_(1.0 - lr * wd)
                update = exp_avg.clone().mul_(beta1).add(grad, alpha=1.0 - beta1).sign_()
                p.add_(update, alpha=-lr)
                exp_avg.mul_(beta2).add_(grad, alpha=1.0 - beta2)
                del update


# (name, implementation) -> constructor.  SGD updates in place in all three
# implementations of torch 2.x (_fused_sgd_, _foreach_add_, param.add_), and
# Lion (lion-pytorch) has one: they run the same code whatever is asked.
OPTIMIZERS = {
    ("adamw", "foreach"): lambda groups: AdamW(groups, lr=1e-4, weight_decay=0.0),
    ("adamw", "fused"): lambda groups: AdamWFused(groups, lr=1e-4, weight_decay=0.0),
    ("adamw", "forloop"): lambda groups: AdamWForloop(groups, lr=1e-4, weight_decay=0.0),
    ("adam", "foreach"): lambda groups: Adam(groups, lr=1e-4),
    ("adam", "fused"): lambda groups: AdamFused(groups, lr=1e-4),
    ("adam", "forloop"): lambda groups: AdamForloop(groups, lr=1e-4),
}
for _impl in ("foreach", "fused", "forloop"):
    OPTIMIZERS[("sgd", _impl)] = lambda groups: SGD(groups, lr=1e-3, momentum=0.0)
    OPTIMIZERS[("sgd-momentum", _impl)] = lambda groups: SGD(groups, lr=1e-3, momentum=0.9)
    OPTIMIZERS[("lion", _impl)] = lambda groups: Lion(groups, lr=1e-4)


def make_optimizer(name, impl, groups):
    try:
        return OPTIMIZERS[(name, impl)](groups)
    except KeyError:
        raise ValueError("unknown optimizer %r with implementation %r (have %s)" % (
            name, impl, ", ".join(sorted({"%s/%s" % k for k in OPTIMIZERS}))))
