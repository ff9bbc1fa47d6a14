"""Blocked, memory-lean masked multi-dimensional token2token attention (DiSAN Eq. 15 + Eq. 11).

Remote-code safe: imports torch only. Same semantics and signature as
:func:`modeling_disan.attention.token2token_attention_reference` (DiSAN spec §1.2-1.4), but written as a custom
``torch.autograd.Function`` that never materialises (or saves for backward) a ``[B, n, n, d]`` tensor: the
logits are recomputed in backward, block by block, and only ``O(B·n·d)`` tensors are kept.

Math (spec §1.4 and §8, "fused streaming kernel"). With ``x_ji = q_j + k_i`` the logit is
``l_ji = c·tanh(x_ji/c) = 2c·σ(2x_ji/c) − c ∈ (−c, c)``; bounded, so no running max is needed. Because
``exp(−2x/c) = exp(−2q_j/c)·exp(−2k_i/c)`` factorises, the per-pair sigmoid is one broadcast multiply-add and a
reciprocal on precomputed ``O(B·n·d)`` exponentials:

    σ'_ji = 2c·σ(2x_ji/c) = 1 / (1/(2c) + A_j·K_i),   A = exp(−2q/c)/(2c),  K = exp(−2k/c)
    e_ji  = exp(σ'_ji) · allowed_ji                     (= e^c · exp(l_ji); the constant e^c cancels below)
    Z_j   = Σ_i e_ji,   s_j = Σ_i e_ji v_i / Z_j        (s_j = 0 exactly when row j has no allowed key)

Backward, with ``G_j = g_j / Z_j`` (``g = dL/ds``), ``P_ji = e_ji/Z_j`` and ``dl/dx = 1 − (l/c)² = 4σ(1−σ)``:

    dv_i = Σ_j P_ji g_j = Σ_j e_ji G_j
    dx_ji = P_ji g_j (v_i − s_j) (1 − (l_ji/c)²) = (e_ji G_j) (v_i − s_j) σ'_ji (1 − σ'_ji/(2c)) · 2/c
    dq_j = Σ_i dx_ji,   dk_i = Σ_j dx_ji

If ``|2q/c|`` or ``|2k/c|`` exceeds 80 somewhere (the exponentials could overflow), the call falls back to the
equivalent ``σ' = 2c·sigmoid(2(q_j + k_i)/c)`` per pair (slower, same results).

Blocking: the batch is (optionally) reordered by key extent so that each batch group only visits keys that are
real for some member; a block is ``[Bb, Jb, Ib, d]`` (batch group × query rows × keys × features) with
``Bb·Jb·Ib·d ≤ block_size`` elements. ``fw`` query blocks only visit keys ``i < j`` and ``bw`` blocks keys
``i > j``; the direction mask is only applied to the thin band of key columns where it is partially false, and the
key-padding mask only to blocks that contain a pad key.
"""

from __future__ import annotations

import torch

from .attention import DIRECTIONS

#: Default working-block budget in elements (``Bb·Jb·Ib·d``): 2^18 fp32 elements = 1 MiB per buffer, two buffers in
#: backward, split over the OpenMP threads; about the size of one core's L2 cache. Measured on a 2-core EPYC
#: (see scripts/bench_token2token.py); 2^17 .. 2^19 are within a few percent of each other.
DEFAULT_BLOCK_SIZE = 1 << 18

_EXP_SAFE = 80.0  # |2q/c|, |2k/c| bound under which exp(−2q/c)·exp(−2k/c) can neither overflow nor hit inf·0


def _compute_dtype(dtype: torch.dtype) -> torch.dtype:
    return torch.float64 if dtype == torch.float64 else torch.float32


class _Plan:
    """Batch order, batch groups and block sizes for one call (depends only on mask, direction, shapes)."""

    __slots__ = ("perm", "inv_perm", "groups", "jb", "ib", "n", "direction", "dirmask")

    def __init__(self, mask: torch.Tensor, direction: str, d: int, block_size: int | None, dtype, device):
        B, n = mask.shape
        self.n, self.direction = n, direction
        budget = max(1, int(block_size or DEFAULT_BLOCK_SIZE) // max(1, d))  # (b, j, i) triples per block
        mcpu = mask.detach().to("cpu", torch.bool)
        idx = torch.arange(n)
        has = mcpu.any(1)
        lo = torch.where(mcpu, idx, n).amin(1).where(has, 0)  # first real key (0 when none)
        hi = torch.where(mcpu, idx + 1, 0).amax(1)  # one past the last real key (0 when none)
        span = int((hi - lo).clamp_min(0).max()) if B else 0
        span = max(span, 1)
        # Rows (b, j) per block if every row sees the full key span, and the split between Bb and Jb: small query
        # blocks waste little of the fw/bw triangle (≈ Jb/n), batch rows fill the rest of the block.
        rows = max(1, budget // span)
        jb = max(1, min(n, rows, max(1, n // 16) if direction in ("fw", "bw") else n))
        bb = max(1, min(B, rows // jb))
        if bb >= B:  # whole batch fits: give the leftover budget to the query axis
            jb = max(1, min(n, rows // max(B, 1)))
        self.jb = jb
        self.ib = max(1, budget // (bb * jb))  # key block (only < span for very long sequences)
        # Reorder the batch by key extent when grouping by it saves work.
        key = hi * (n + 1) - lo
        order = torch.argsort(key, descending=True, stable=True)
        if bb < B and not bool((order == torch.arange(B)).all()) and int((hi - lo).max()) != int((hi - lo).min()):
            self.perm = order.to(device)
            self.inv_perm = torch.argsort(order).to(device)
            lo, hi, mcpu = lo[order], hi[order], mcpu[order]
        else:
            self.perm = self.inv_perm = None
        self.groups = []
        for b0 in range(0, B, bb):
            b1 = min(B, b0 + bb)
            glo, ghi = int(lo[b0:b1].min()), int(hi[b0:b1].max())
            if ghi <= glo:
                continue  # no real key at all: every row is 0
            pads = (~mcpu[b0:b1, glo:ghi]).any(0).to(torch.int32).cumsum(0).tolist()
            self.groups.append((b0, b1, glo, ghi, [0] + pads))
        self.dirmask = None
        if direction != "all":
            j = torch.arange(n, device=device)[:, None]
            i = torch.arange(n, device=device)[None, :]
            dm = {"fw": i < j, "bw": i > j, "diag": i != j}[direction]
            self.dirmask = dm.to(dtype).unsqueeze(-1)  # [n_q, n_k, 1]

    def key_range(self, j0: int, j1: int, glo: int, ghi: int) -> tuple[int, int]:
        """Keys a query block [j0, j1) can see inside the group's key extent [glo, ghi)."""
        if self.direction == "fw":  # i < j
            return glo, min(ghi, j1 - 1)
        if self.direction == "bw":  # i > j
            return max(glo, j0 + 1), ghi
        return glo, ghi

    def band(self, j0: int, j1: int, i0: int, i1: int) -> tuple[int, int]:
        """Key columns of block [j0, j1) × [i0, i1) where the direction mask is partially false (may be empty)."""
        d = self.direction
        if d == "fw":
            return max(i0, j0), i1
        if d == "bw":
            return i0, min(i1, j1)
        if d == "diag":
            return max(i0, j0), min(i1, j1)
        return i0, i0

    def blocks(self):
        """Yield (b0, b1, j0, j1, i0, i1, band0, band1, has_pad) for every non-empty block."""
        n, jb, ib = self.n, self.jb, self.ib
        for b0, b1, glo, ghi, pads in self.groups:
            for j0 in range(0, n, jb):
                j1 = min(n, j0 + jb)
                k0, k1 = self.key_range(j0, j1, glo, ghi)
                for i0 in range(k0, k1, ib):
                    i1 = min(k1, i0 + ib)
                    c0, c1 = self.band(j0, j1, i0, i1)
                    yield b0, b1, j0, j1, i0, i1, c0, c1, pads[i1 - glo] > pads[i0 - glo]


def _logit_buffer(ctx_tensors, b0, b1, j0, j1, i0, i1, out):
    """σ' = 2c·σ(2(q_j + k_i)/c) for one block, written into ``out`` ([Bb, Jb, Ib, d])."""
    mode, a, kk, h, two_c = ctx_tensors
    if mode == 0:  # factorised exponentials: 1 / (1/(2c) + A_j K_i)
        torch.addcmul(h, a[b0:b1, j0:j1, None, :], kk[b0:b1, None, i0:i1, :], out=out)
        out.reciprocal_()
    else:  # fallback for huge |q|, |k|: a, kk hold 2q/c, 2k/c
        torch.add(a[b0:b1, j0:j1, None, :], kk[b0:b1, None, i0:i1, :], out=out)
        out.sigmoid_().mul_(two_c)
    return out


def _prepare(query, key, c, cdtype):
    q = query.detach().to(cdtype)
    k = key.detach().to(cdtype)
    qs = q * (-2.0 / c)
    ks = k * (-2.0 / c)
    big = max(float(qs.abs().amax()), float(ks.abs().amax())) if qs.numel() else 0.0
    h = torch.full((), 1.0 / (2.0 * c), dtype=cdtype, device=q.device)
    if big > _EXP_SAFE:  # fallback: σ' = 2c·sigmoid(2x/c) per pair
        return (1, qs.neg_(), ks.neg_(), h, 2.0 * c)
    a = qs.exp_().mul_(1.0 / (2.0 * c))
    kk = ks.exp_()
    return (0, a, kk, h, 2.0 * c)


class _Token2Token(torch.autograd.Function):
    @staticmethod
    def forward(ctx, query, key, value, mask, direction, c, block_size):
        B, n, d = query.shape
        in_dtype = query.dtype
        cdtype = _compute_dtype(in_dtype)
        dev = query.device
        plan = _Plan(mask, direction, d, block_size, cdtype, dev)
        lg = _prepare(query, key, c, cdtype)
        v = value.detach().to(cdtype)
        m = mask.to(dev, torch.bool).to(cdtype)
        if plan.perm is not None:
            p = plan.perm
            lg = (lg[0], lg[1].index_select(0, p), lg[2].index_select(0, p), lg[3], lg[4])
            v, m = v.index_select(0, p), m.index_select(0, p)
        m4 = m[:, None, :, None]  # [B, 1, n_k, 1]
        num = torch.zeros(B, n, d, dtype=cdtype, device=dev)
        den = torch.zeros(B, n, d, dtype=cdtype, device=dev)
        work = torch.empty(plan_max_block(plan, d), dtype=cdtype, device=dev)
        dm = plan.dirmask
        last = {}
        for b0, b1, j0, j1, i0, i1, c0, c1, has_pad in plan.blocks():
            e = work[: (b1 - b0) * (j1 - j0) * (i1 - i0) * d].view(b1 - b0, j1 - j0, i1 - i0, d)
            _logit_buffer(lg, b0, b1, j0, j1, i0, i1, e)
            e.exp_()  # e^c · exp(l)
            if c1 > c0:
                e[:, :, c0 - i0 : c1 - i0].mul_(dm[j0:j1, c0:c1])
            if has_pad:
                e.mul_(m4[b0:b1, :, i0:i1])
            first = last.get((b0, j0)) is None
            last[(b0, j0)] = True
            if first:
                torch.sum(e, 2, out=den[b0:b1, j0:j1])
                torch.sum(e.mul_(v[b0:b1, None, i0:i1]), 2, out=num[b0:b1, j0:j1])
            else:
                den[b0:b1, j0:j1] += e.sum(2)
                num[b0:b1, j0:j1] += e.mul_(v[b0:b1, None, i0:i1]).sum(2)
        zden = torch.where(den > 0, den, torch.ones((), dtype=cdtype, device=dev))
        s = num.div_(zden)  # rows without an allowed key: 0 / 1 = 0
        ctx.plan, ctx.mode, ctx.h, ctx.c, ctx.in_dtype = plan, lg[0], lg[3], c, in_dtype
        ctx.save_for_backward(lg[1], lg[2], v, m, s, zden)  # all [B, n, d] (m: [B, n]), in the plan's batch order
        out = s if plan.perm is None else s.index_select(0, plan.inv_perm)
        return out.to(in_dtype)

    @staticmethod
    def backward(ctx, grad_out):
        a, kk, v, m, s, zden = ctx.saved_tensors
        plan, c, in_dtype = ctx.plan, ctx.c, ctx.in_dtype
        lg = (ctx.mode, a, kk, ctx.h, 2.0 * c)
        need_q, need_k, need_v = ctx.needs_input_grad[:3]
        B, n, d = v.shape
        cdtype, dev = v.dtype, v.device
        g = grad_out.to(cdtype)
        if plan.perm is not None:
            g = g.index_select(0, plan.perm)
        G = g / zden  # G_j = g_j / Z_j (Z := 1 on empty rows, whose e are all 0)
        need_qk = need_q or need_k
        dq = torch.zeros(B, n, d, dtype=cdtype, device=dev) if need_qk else None
        dk = torch.zeros(B, n, d, dtype=cdtype, device=dev) if need_qk else None
        dv = torch.zeros(B, n, d, dtype=cdtype, device=dev) if need_v else None
        m4 = m[:, None, :, None]
        size = plan_max_block(plan, d)
        work_s = torch.empty(size, dtype=cdtype, device=dev)
        work_e = torch.empty(size, dtype=cdtype, device=dev)
        dm = plan.dirmask
        inv_2c = -1.0 / (2.0 * c)
        for b0, b1, j0, j1, i0, i1, c0, c1, has_pad in plan.blocks():
            shape = (b1 - b0, j1 - j0, i1 - i0, d)
            numel = shape[0] * shape[1] * shape[2] * d
            sp = _logit_buffer(lg, b0, b1, j0, j1, i0, i1, work_s[:numel].view(shape))  # σ'
            w = torch.exp(sp, out=work_e[:numel].view(shape))
            if c1 > c0:
                w[:, :, c0 - i0 : c1 - i0].mul_(dm[j0:j1, c0:c1])
            if has_pad:
                w.mul_(m4[b0:b1, :, i0:i1])
            w.mul_(G[b0:b1, j0:j1, None, :])  # P_ji g_j
            if need_v:
                dv[b0:b1, i0:i1] += w.sum(1)
            if not need_qk:
                continue
            w.mul_(sp.addcmul_(sp, sp, value=inv_2c))  # · σ'(1 − σ'/(2c)) = (c/2)(1 − (l/c)²)
            w.mul_(torch.sub(v[b0:b1, None, i0:i1], s[b0:b1, j0:j1, None], out=sp))  # · (v_i − s_j)
            dq[b0:b1, j0:j1] += w.sum(2)
            dk[b0:b1, i0:i1] += w.sum(1)
        grads = []
        for need, t, scale in ((need_q, dq, 2.0 / c), (need_k, dk, 2.0 / c), (need_v, dv, 1.0)):
            if not need:
                grads.append(None)
                continue
            if scale != 1.0:
                t.mul_(scale)
            if plan.perm is not None:
                t = t.index_select(0, plan.inv_perm)
            grads.append(t.to(in_dtype))
        return grads[0], grads[1], grads[2], None, None, None, None


def plan_max_block(plan: _Plan, d: int) -> int:
    """Upper bound on the elements of any block the plan visits; at least 1."""
    best = 1
    for b0, b1, glo, ghi, _ in plan.groups:
        best = max(best, (b1 - b0) * min(plan.jb, plan.n) * min(plan.ib, ghi - glo) * d)
    return best


def token2token_attention(
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    mask: torch.Tensor,
    direction: str,
    c: float = 5.0,
    block_size: int | None = None,
) -> torch.Tensor:
    """Masked multi-dimensional token2token attention (DiSAN Eq. 15 + Eq. 11), blocked and memory-lean.

    Same inputs and outputs as ``token2token_attention_reference``: ``query`` = W2 h_j + b1, ``key`` = W1 h_i,
    ``value`` = h_i, all ``[B, n, d]``; ``mask`` bool ``[B, n]`` (True = real token); ``direction`` one of
    ``"fw"`` (keys i < j), ``"bw"`` (i > j), ``"diag"`` (i ≠ j), ``"all"``. Returns s ``[B, n, d]`` in the input
    dtype; rows with no allowed key (and only those) are exactly 0, pad query rows are computed like the reference.

    ``block_size``: upper bound on the elements (batch rows × query rows × keys × d) of one working block; ``None``
    uses :data:`DEFAULT_BLOCK_SIZE`. Autograd saves only ``[B, n, d]``-sized tensors; the logits are recomputed
    blockwise in backward. float32 and float64 are computed in their own precision, bfloat16/float16 in float32.
    """
    if direction not in DIRECTIONS:
        raise ValueError(f"unknown attention direction {direction!r}; expected one of {DIRECTIONS}")
    if query.dim() != 3 or key.shape != query.shape or value.shape != query.shape:
        raise ValueError(
            f"query, key and value must all be [B, n, d]; got {tuple(query.shape)}, {tuple(key.shape)}, "
            f"{tuple(value.shape)}"
        )
    if tuple(mask.shape) != tuple(query.shape[:2]):
        raise ValueError(f"mask must be [B, n] = {tuple(query.shape[:2])}; got {tuple(mask.shape)}")
    if block_size is not None and int(block_size) < 1:
        raise ValueError(f"block_size must be a positive number of elements; got {block_size!r}")
    return _Token2Token.apply(query, key, value, mask, direction, float(c), block_size)


__all__ = ["token2token_attention", "DEFAULT_BLOCK_SIZE"]
