"""Blocked, memory-lean masked multi-dimensional token2token attention (DiSAN Eq. 15 + Eq. 11).

Remote-code safe: imports torch only. Same semantics and signature as
:func:`modeling_disan.attention.token2token_attention_reference` (DiSAN spec §1.2-1.4), but written as a custom
``torch.autograd.Function`` that never materialises (or saves for backward) a ``[B, n, n, d]`` tensor: the
logits are recomputed in backward, block by block, and only ``O(B·n·d)`` tensors are kept.

Math (spec §1.4 and §8, "fused streaming kernel"). With ``x_ji = q_j + k_i`` the logit is
``l_ji = c·tanh(x_ji/c) = 2c·σ(2x_ji/c) − c ∈ (−c, c)``: bounded, so no running max is needed. Because
``exp(−2x/c) = exp(−2q_j/c)·exp(−2k_i/c)`` factorises, the per-pair sigmoid is one broadcast multiply-add and a
reciprocal on precomputed ``O(B·n·d)`` exponentials (with ``L = log2 e`` folded in, so that the per-pair
exponential is an ``exp2``, about 1.5x cheaper than ``exp`` on CPU):

    u_ji  = 1 / (h + A_j·K_i) = 2cL·σ(2x_ji/c),   A = exp(−2q/c)/(2cL),  K = exp(−2k/c),  h = 1/(2cL)
    e_ji  = 2^u_ji · allowed_ji = e^c · exp(l_ji) · allowed_ji      (e ≥ 1; the constant e^c cancels below)
    Z_j   = Σ_i e_ji,   s_j = Σ_i e_ji v_i / Z_j                    (s_j = 0 exactly when row j has no allowed key)

Backward, with ``g = dL/ds``, ``G_j = g_j / Z_j``, ``P_ji = e_ji / Z_j`` and ``dl/dx = 1 − (l/c)² = 4σ(1−σ)``:

    dv_i  = Σ_j P_ji g_j = Σ_j e_ji G_j
    dx_ji = P_ji g_j (v_i − s_j) (1 − (l_ji/c)²) = (e_ji G_j) · u_ji (1 − u_ji/(2cL)) · (v_i − s_j) · 4/(2cL)
    dq_j  = Σ_i dx_ji,   dk_i = Σ_j dx_ji

If ``|2q/c|`` or ``|2k/c|`` exceeds 80 somewhere (the exponentials could overflow), the call falls back to the
equivalent ``u = 2cL·sigmoid(2(q_j + k_i)/c)`` per pair (slower, same results).

Blocking: the batch is (when it saves work) reordered by key extent, so that each batch group only visits keys that
are real for one of its members; a block is ``[Bb, Jb, Ib, d]`` (batch rows × query rows × keys × features) with
``Bb·Jb·Ib·d ≤ block_size`` elements (at least one ``(b, j, i)`` triple). ``fw`` query blocks only visit keys
``i < j`` and ``bw`` blocks keys ``i > j``; the direction mask is only applied to the thin band of key columns where
it is partially false, and the key-padding mask is folded into the reductions (``Σ_i m_i e_ji`` as a GEMV, values
``m_i v_i``).
"""

from __future__ import annotations

import torch

from .attention import DIRECTIONS

#: Default working-block budget in elements (``Bb·Jb·Ib·d``): 2^20 fp32 elements = 4 MiB per block buffer (one
#: buffer in forward, two in backward), i.e. L3-resident, while the per-block Python/dispatch overhead (~30 torch
#: calls per block) stays below ~10%. Single-thread sweep on a 2-core EPYC (B=64, n=64, d=300, fw, fwd+bwd):
#: 2^18 is ~35% slower (per-block overhead), 2^22 ~15% slower (cache misses); 2^20 and 2^21 are within noise.
#: L2-sized blocks (2^16-2^18) lose: every block costs ~30 dispatches of a few µs each.
DEFAULT_BLOCK_SIZE = 1 << 20

_EXP_SAFE = 80.0  # bound on |2q/c|, |2k/c| under which exp(−2q/c)·exp(−2k/c) can neither overflow nor be inf·0
_LOG2E = 1.4426950408889634


class _Plan:
    """Batch order, batch groups and the list of blocks for one call (depends only on mask, direction, shapes)."""

    __slots__ = ("perm", "inv_perm", "bb", "jb", "ib", "n", "blocks", "empty", "max_block", "any_pad", "dirmask")

    def __init__(self, mask: torch.Tensor, direction: str, d: int, block_size: int | None, dtype, device):
        B, n = mask.shape
        self.n = n
        budget = max(1, int(block_size or DEFAULT_BLOCK_SIZE) // max(1, d))  # (b, j, i) triples per block
        mcpu = mask.detach().to("cpu", torch.bool)
        self.any_pad = not bool(mcpu.all())
        idx = torch.arange(n)
        lo = torch.where(mcpu, idx, n).amin(1) if n else torch.zeros(B, dtype=torch.long)  # first real key
        hi = torch.where(mcpu, idx + 1, 0).amax(1) if n else torch.zeros(B, dtype=torch.long)  # last real key + 1
        lo = torch.minimum(lo, hi)  # rows without any real key: empty range
        span = max(1, int((hi - lo).max())) if B else 1
        # Rows (b, j) per block when each row sees the whole key span; split between Bb and Jb. For fw/bw a small
        # query block wastes little of the triangle (≈ Jb/n of the work); batch rows fill the rest of the budget.
        rows = max(1, budget // span)
        jb = max(1, min(n, rows, max(1, n // 16) if direction in ("fw", "bw") else n))
        bb = max(1, min(B, rows // jb))
        if bb >= B:  # the whole batch fits: give the leftover budget to the query axis
            jb = max(1, min(n, rows // max(B, 1)))
        jb = -(-n // -(-n // jb)) if n else 1  # balance: same number of blocks, sizes as equal as possible
        bb = -(-B // -(-B // bb)) if B else 1
        ib = max(1, budget // (bb * jb))  # key block: < span only for very long sequences
        ib = -(-span // -(-span // ib))
        self.bb, self.jb, self.ib = bb, jb, ib
        self.perm = self.inv_perm = None
        plan = self._make_blocks(lo, hi, mcpu, direction, d)
        if bb < B and int((hi - lo).max()) != int((hi - lo).min()):
            # Reorder the batch by key extent when the groups then visit clearly fewer keys (the reordering costs
            # a few [B, n, d] gathers).
            order = torch.argsort(hi * (n + 1) - lo, descending=True, stable=True)
            if not bool((order == torch.arange(B)).all()):
                sorted_plan = self._make_blocks(lo[order], hi[order], mcpu[order], direction, d)
                if sorted_plan[3] < 0.95 * plan[3]:
                    plan = sorted_plan
                    self.perm = order.to(device)
                    self.inv_perm = torch.argsort(order).to(device)
        self.blocks, self.empty, self.max_block, _ = plan
        self.dirmask = None
        if direction != "all":
            j = torch.arange(n, device=device)[:, None]
            i = torch.arange(n, device=device)[None, :]
            dm = {"fw": i < j, "bw": i > j, "diag": i != j}[direction]
            self.dirmask = dm.to(dtype).unsqueeze(-1)  # [n_q, n_k, 1]

    def _make_blocks(self, lo, hi, mcpu, direction, d):
        """(blocks, never-visited row blocks, largest block in elements, total work) for this batch order."""
        B, n = mcpu.shape
        bb, jb, ib = self.bb, self.jb, self.ib
        blocks, empty, max_block, work = [], [], 1, 0
        for b0 in range(0, B, bb):
            b1 = min(B, b0 + bb)
            glo, ghi = int(lo[b0:b1].min()), int(hi[b0:b1].max())
            if ghi <= glo:  # no real key in the group: all its rows are 0
                empty.extend((b0, b1 - b0, j0, min(n, j0 + jb) - j0) for j0 in range(0, n, jb))
                continue
            pads = [0] + (~mcpu[b0:b1, glo:ghi]).any(0).to(torch.int32).cumsum(0).tolist()
            for j0 in range(0, n, jb):
                j1 = min(n, j0 + jb)
                if direction == "fw":  # keys i < j
                    k0, k1 = glo, min(ghi, j1 - 1)
                elif direction == "bw":  # keys i > j
                    k0, k1 = max(glo, j0 + 1), ghi
                else:
                    k0, k1 = glo, ghi
                if k1 <= k0:
                    empty.append((b0, b1 - b0, j0, j1 - j0))
                for i0 in range(k0, k1, ib):
                    i1 = min(k1, i0 + ib)
                    # key columns where the direction mask is partially false inside this block
                    if direction == "fw":
                        c0, c1 = max(i0, j0), i1
                    elif direction == "bw":
                        c0, c1 = i0, min(i1, j1)
                    elif direction == "diag":
                        c0, c1 = max(i0, j0), min(i1, j1)
                    else:
                        c0, c1 = i0, i0
                    has_pad = pads[i1 - glo] > pads[i0 - glo]
                    blocks.append((b0, b1 - b0, j0, j1 - j0, i0, i1 - i0, c0, c1, has_pad, i0 == k0))
                    size = (b1 - b0) * (j1 - j0) * (i1 - i0) * d
                    max_block = max(max_block, size)
                    work += size
        return blocks, empty, max_block, work


def _rows(t: torch.Tensor, b0: int, bb: int, r0: int, rr: int, axis: int) -> torch.Tensor:
    """View of rows [b0, b0+bb) × [r0, r0+rr) of a contiguous [B, n, d] tensor, as a 4-D block operand.

    axis 1: ``[bb, rr, 1, d]`` (query side), axis 2: ``[bb, 1, rr, d]`` (key side), axis 0: ``[bb, rr, d]``.
    ``as_strided`` is used instead of indexing because it is several times cheaper per call, and blocks are many.
    """
    n, d = t.shape[1], t.shape[2]
    off = t.storage_offset() + (b0 * n + r0) * d
    if axis == 1:
        return t.as_strided((bb, rr, 1, d), (n * d, d, d, 1), off)
    if axis == 2:
        return t.as_strided((bb, 1, rr, d), (n * d, d, d, 1), off)
    return t.as_strided((bb, rr, d), (n * d, d, 1), off)


def _logits(lg, b0, bb, j0, jb, i0, ib, out):
    """u = 2c·log2(e)·σ(2(q_j + k_i)/c) for one block, written into ``out`` ([bb, jb, ib, d])."""
    mode, a, kk, h, scale = lg
    if mode == 0:  # factorised exponentials: 1 / (h + A_j K_i)
        torch.addcmul(h, _rows(a, b0, bb, j0, jb, 1), _rows(kk, b0, bb, i0, ib, 2), out=out)
        out.reciprocal_()
    else:  # fallback for huge |q|, |k|: a, kk hold 2q/c, 2k/c
        torch.add(_rows(a, b0, bb, j0, jb, 1), _rows(kk, b0, bb, i0, ib, 2), out=out)
        out.sigmoid_().mul_(scale)
    return out


def _prepare(query, key, c, cdtype):
    """Per-token factors of the logits: (mode, a, kk, h, scale) for :func:`_logits` (see the module docstring)."""
    q = query.detach().to(cdtype).contiguous()
    k = key.detach().to(cdtype).contiguous()
    big = 0.0
    for t in (q, k):
        if t.numel():
            lo, hi = torch.aminmax(t)
            big = max(big, -float(lo), float(hi))
    big *= 2.0 / c
    scale = 2.0 * c * _LOG2E
    h = torch.full((), 1.0 / scale, dtype=cdtype, device=q.device)
    if not big <= _EXP_SAFE:  # fallback (also taken for NaN inputs, which then propagate like the reference)
        return (1, q.mul(2.0 / c), k.mul(2.0 / c), h, scale)
    # A = exp(−2q/c)/scale = 2^(−2qL/c)/scale,  K = exp(−2k/c) = 2^(−2kL/c)
    a = torch.mul(q, -2.0 * _LOG2E / c).exp2_().mul_(1.0 / scale)
    kk = torch.mul(k, -2.0 * _LOG2E / c).exp2_()
    return (0, a, kk, h, scale)


class _Token2Token(torch.autograd.Function):
    @staticmethod
    def forward(ctx, query, key, value, mask, direction, c, block_size):
        B, n, d = query.shape
        out_dtype = torch.promote_types(torch.promote_types(query.dtype, key.dtype), value.dtype)
        cdtype = torch.float64 if out_dtype == torch.float64 else torch.float32
        dev = query.device
        plan = _Plan(mask, direction, d, block_size, cdtype, dev)
        lg = _prepare(query, key, c, cdtype)
        v = value.detach().to(cdtype).contiguous()
        m = mask.detach().to(dev, torch.bool).to(cdtype)
        if plan.perm is not None:
            p = plan.perm
            lg = (lg[0], lg[1].index_select(0, p), lg[2].index_select(0, p), lg[3], lg[4])
            v, m = v.index_select(0, p), m.index_select(0, p)
        vm = v * m[:, :, None]  # pad keys' values zeroed: padding is handled in the reductions, not per pair
        m_row = m.view(B, 1, 1, n)  # den = m_row @ e sums the real keys only (a GEMV per row block)
        num = torch.empty(B, n, d, dtype=cdtype, device=dev)
        den = torch.empty(B, n, d, dtype=cdtype, device=dev)
        for b0, bb, j0, jb in plan.empty:  # rows no block visits (every other row is first written with out=)
            _rows(num, b0, bb, j0, jb, 0).zero_()
            _rows(den, b0, bb, j0, jb, 0).zero_()
        work = torch.empty(plan.max_block, dtype=cdtype, device=dev)
        dm = plan.dirmask
        for b0, bb, j0, jb, i0, ib, c0, c1, has_pad, first in plan.blocks:
            e = work[: bb * jb * ib * d].view(bb, jb, ib, d)
            _logits(lg, b0, bb, j0, jb, i0, ib, e)
            torch.exp2(e, out=e)  # e^c · exp(l_ji) ≥ 1
            if c1 > c0:  # direction mask, only on the key columns where it is partially false
                e[:, :, c0 - i0 : c1 - i0].mul_(dm[j0 : j0 + jb, c0:c1])
            den_blk, num_blk = _rows(den, b0, bb, j0, jb, 0), _rows(num, b0, bb, j0, jb, 0)
            if has_pad:
                zpart = torch.matmul(m_row[b0 : b0 + bb, :, :, i0 : i0 + ib], e).squeeze(2)
                den_blk.copy_(zpart) if first else den_blk.add_(zpart)
                e.mul_(_rows(vm, b0, bb, i0, ib, 2))
            else:
                torch.sum(e, 2, out=den_blk) if first else den_blk.add_(e.sum(2))
                e.mul_(_rows(v, b0, bb, i0, ib, 2))
            torch.sum(e, 2, out=num_blk) if first else num_blk.add_(e.sum(2))
        zden = den.clamp_min_(1.0)  # Z ≥ 1 on rows with an allowed key; Z = 0 → 1 on empty rows
        s = num.div_(zden)  # empty rows: 0 / 1 = 0 exactly
        ctx.plan, ctx.mode, ctx.h, ctx.scale, ctx.out_dtype = plan, lg[0], lg[3], lg[4], out_dtype
        ctx.save_for_backward(lg[1], lg[2], v, m, s, zden)  # [B, n, d] each (m: [B, n]), in the plan's batch order
        if plan.perm is not None:
            out = s.index_select(0, plan.inv_perm)
        else:  # never hand out the saved s itself: callers may modify the output in place (as with the reference)
            out = s.clone() if out_dtype == cdtype else s
        return out.to(out_dtype)

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, grad_out):
        a, kk, v, m, s, zden = ctx.saved_tensors
        plan = ctx.plan
        lg = (ctx.mode, a, kk, ctx.h, ctx.scale)
        need_q, need_k, need_v = ctx.needs_input_grad[:3]
        need_qk = need_q or need_k
        B, n, d = v.shape
        cdtype, dev = v.dtype, v.device
        g = grad_out.to(cdtype)
        if plan.perm is not None:
            g = g.index_select(0, plan.perm)
        G = torch.div(g, zden, out=torch.empty_like(zden))  # G_j = g_j / Z_j, so that P_ji g_j = e_ji G_j
        dq = torch.empty(B, n, d, dtype=cdtype, device=dev) if need_qk else None
        if need_qk:
            for b0, bb, j0, jb in plan.empty:
                _rows(dq, b0, bb, j0, jb, 0).zero_()
        dk = torch.zeros(B, n, d, dtype=cdtype, device=dev) if need_qk else None
        dv = torch.zeros(B, n, d, dtype=cdtype, device=dev) if need_v else None
        vm = v * m[:, :, None]
        m4 = m.view(B, 1, n, 1)
        work_u = torch.empty(plan.max_block, dtype=cdtype, device=dev)
        work_w = torch.empty(plan.max_block, dtype=cdtype, device=dev)
        ones = torch.ones(plan.bb, 1, plan.jb, dtype=cdtype, device=dev)
        jsum = torch.empty(plan.bb * plan.ib * d, dtype=cdtype, device=dev)
        dm = plan.dirmask
        neg_inv_scale = -1.0 / ctx.scale
        for b0, bb, j0, jb, i0, ib, c0, c1, has_pad, first in plan.blocks:
            numel = bb * jb * ib * d
            u = _logits(lg, b0, bb, j0, jb, i0, ib, work_u[:numel].view(bb, jb, ib, d))
            w = torch.exp2(u, out=work_w[:numel].view(bb, jb, ib, d))  # e, pad keys not masked (see below)
            if c1 > c0:
                w[:, :, c0 - i0 : c1 - i0].mul_(dm[j0 : j0 + jb, c0:c1])
            w.mul_(_rows(G, b0, bb, j0, jb, 1))  # e_ji G_j = P_ji g_j (up to the pad-key factor m_i)
            w3 = w.view(bb, jb, ib * d)
            ones_j = ones[:bb, :, :jb]
            js = jsum[: bb * ib * d].view(bb, 1, ib * d)
            if need_v:  # dv_i += Σ_j e_ji G_j (× m_i at the end); the j-sum as a batched GEMV
                _rows(dv, b0, bb, i0, ib, 0).add_(torch.bmm(ones_j, w3, out=js).view(bb, ib, d))
            if not need_qk:
                continue
            w.mul_(u.addcmul_(u, u, value=neg_inv_scale))  # · u(1 − u/(2cL)) ∝ 1 − (l/c)²
            if has_pad:  # · m_i (v_i − s_j)
                dvs = torch.addcmul(
                    _rows(vm, b0, bb, i0, ib, 2), m4[b0 : b0 + bb, :, i0 : i0 + ib], _rows(s, b0, bb, j0, jb, 1),
                    value=-1.0, out=u,
                )
            else:  # · (v_i − s_j)
                dvs = torch.sub(_rows(v, b0, bb, i0, ib, 2), _rows(s, b0, bb, j0, jb, 1), out=u)
            w.mul_(dvs)
            dq_blk = _rows(dq, b0, bb, j0, jb, 0)
            torch.sum(w, 2, out=dq_blk) if first else dq_blk.add_(w.sum(2))
            _rows(dk, b0, bb, i0, ib, 0).add_(torch.bmm(ones_j, w3, out=js).view(bb, ib, d))
        grads = []
        for need, t, factor in ((need_q, dq, 4.0 / ctx.scale), (need_k, dk, 4.0 / ctx.scale), (need_v, dv, None)):
            if not need:
                grads.append(None)
                continue
            if factor is None:
                if plan.any_pad:
                    t.mul_(m[:, :, None])  # pad keys are never attended: no value gradient
            else:
                t.mul_(factor)  # 1 − (l/c)² = (4/(2cL))·u(1 − u/(2cL))
            if plan.perm is not None:
                t = t.index_select(0, plan.inv_perm)
            grads.append(t.to(ctx.out_dtype))
        return grads[0], grads[1], grads[2], None, None, None, None


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
    dtype; rows with no allowed key are exactly 0, pad query rows are computed like the reference.

    ``block_size``: upper bound on the elements (batch rows × query rows × keys × d) of one working block; ``None``
    uses :data:`DEFAULT_BLOCK_SIZE`. Autograd saves only ``[B, n, d]``-sized tensors; the logits are recomputed
    blockwise in backward. float64 is computed in float64, everything else (float32, bfloat16, float16) in float32.
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
