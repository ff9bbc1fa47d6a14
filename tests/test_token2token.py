"""The blocked token2token attention (modeling_disan/token2token.py) against the reference (DiSAN spec §1.2-1.4, §8)."""

from __future__ import annotations

import pytest
import torch

from modeling_disan.attention import token2token_attention_reference
from modeling_disan.token2token import token2token_attention

DIRS = ("fw", "bw", "diag", "all")


def make_inputs(B, n, d, *, dtype=torch.float32, seed=0, lengths=None, scale=1.5):
    gen = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(B, n, d, generator=gen, dtype=torch.float64).mul(scale).to(dtype) for _ in range(3))
    if lengths is None:
        lengths = torch.randint(1, n + 1, (B,), generator=gen)
        lengths[0] = n  # one all-real row
        if B > 1:
            lengths[1] = 1  # a length-1 row: no allowed key for fw/bw/diag
    mask = torch.arange(n)[None, :] < torch.as_tensor(lengths)[:, None]
    return q, k, v, mask


def run(fn, q, k, v, mask, direction, grad, **kw):
    q, k, v = (t.detach().clone().requires_grad_(True) for t in (q, k, v))
    out = fn(q, k, v, mask, direction, **kw)
    out.backward(grad)
    return out.detach(), q.grad, k.grad, v.grad


def assert_close_rel(actual, expected, rel=1e-5, name=""):
    """Max error within ``rel`` of the reference's largest magnitude (elementwise rtol is meaningless near 0)."""
    scale = expected.abs().max().clamp_min(1e-12)
    err = (actual.double() - expected.double()).abs().max()
    assert err <= rel * scale, f"{name}: max abs error {err:.3g} > {rel} x {scale:.3g}"


@pytest.mark.parametrize("direction", DIRS)
@pytest.mark.parametrize("block_size", [None, 300, 1])
def test_matches_reference_fp32(direction, block_size):
    B, n, d = 6, 11, 16
    q, k, v, mask = make_inputs(B, n, d, seed=1)
    grad = torch.randn(B, n, d, generator=torch.Generator().manual_seed(2))
    ref = run(token2token_attention_reference, q, k, v, mask, direction, grad)
    new = run(token2token_attention, q, k, v, mask, direction, grad, block_size=block_size)
    for name, a, b in zip(("out", "dq", "dk", "dv"), new, ref):
        assert a.dtype == b.dtype == torch.float32 and a.shape == b.shape
        assert_close_rel(a, b, 1e-5, f"{direction}/{block_size}/{name}")


@pytest.mark.parametrize("direction", DIRS)
def test_matches_reference_irregular_masks(direction):
    """Left padding, holes, an all-pad row, c != 5 and large logits (tanh saturated)."""
    B, n, d = 5, 9, 7
    q, k, v, _ = make_inputs(B, n, d, seed=3, scale=6.0)
    gen = torch.Generator().manual_seed(4)
    mask = torch.rand(B, n, generator=gen) > 0.4
    mask[0] = True
    mask[1] = False  # no real token at all
    mask[2] = torch.arange(n) >= 5  # left padding
    mask[3] = torch.arange(n) == 4  # a single real token in the middle
    grad = torch.randn(B, n, d, generator=gen)
    ref = run(token2token_attention_reference, q, k, v, mask, direction, grad, c=3.0)
    for block_size in (None, 7 * 4):
        new = run(token2token_attention, q, k, v, mask, direction, grad, c=3.0, block_size=block_size)
        for name, a, b in zip(("out", "dq", "dk", "dv"), new, ref):
            assert_close_rel(a, b, 1e-5, f"{direction}/{block_size}/{name}")


@pytest.mark.parametrize("direction", ["fw", "all"])
def test_huge_inputs_fallback_matches_reference(direction):
    """|2q/c| > 80 switches to the per-pair sigmoid path; results must not change."""
    B, n, d = 3, 6, 5
    q, k, v, mask = make_inputs(B, n, d, seed=5)
    q = q * 150.0  # |2q/c| > 80: per-pair sigmoid path
    k = k - k + torch.linspace(-300, 300, n)[None, :, None]
    assert q.abs().max() * 2 / 5.0 > 80
    grad = torch.randn(B, n, d, generator=torch.Generator().manual_seed(6))
    ref = run(token2token_attention_reference, q, k, v, mask, direction, grad)
    new = run(token2token_attention, q, k, v, mask, direction, grad)
    for name, a, b in zip(("out", "dq", "dk", "dv"), new, ref):
        assert torch.isfinite(a).all()
        assert_close_rel(a, b, 1e-5, f"{direction}/{name}")


@pytest.mark.parametrize("direction", ["fw", "bw", "diag"])
@pytest.mark.parametrize("block_size", [None, 6])
def test_gradcheck_float64(direction, block_size):
    q, k, v, mask = make_inputs(2, 5, 3, dtype=torch.float64, seed=7, lengths=[5, 3])
    inputs = tuple(t.detach().clone().requires_grad_(True) for t in (q, k, v))

    def fn(q, k, v):
        return token2token_attention(q, k, v, mask, direction, 5.0, block_size)

    assert torch.autograd.gradcheck(fn, inputs, eps=1e-6, atol=1e-8, rtol=1e-6)


def test_gradcheck_float64_fallback_path():
    q, k, v, mask = make_inputs(2, 4, 3, dtype=torch.float64, seed=8, lengths=[4, 3])
    q = q * 20.0
    q[0, 0, 0] = 250.0  # |2q/c| > 80 somewhere: per-pair sigmoid path
    inputs = tuple(t.detach().clone().requires_grad_(True) for t in (q, k, v))
    assert torch.autograd.gradcheck(lambda q, k, v: token2token_attention(q, k, v, mask, "fw"), inputs, eps=1e-6)


@pytest.mark.parametrize("direction", ["fw", "bw"])
def test_bfloat16_close_to_float32(direction):
    B, n, d = 4, 10, 12
    q, k, v, mask = make_inputs(B, n, d, seed=9)
    grad = torch.randn(B, n, d, generator=torch.Generator().manual_seed(10))
    f32 = run(token2token_attention, q, k, v, mask, direction, grad)
    bf = run(
        token2token_attention, q.bfloat16(), k.bfloat16(), v.bfloat16(), mask, direction, grad.bfloat16()
    )
    for name, a, b in zip(("out", "dq", "dk", "dv"), bf, f32):
        assert a.dtype == torch.bfloat16, name
        assert torch.isfinite(a.float()).all(), name
        assert_close_rel(a.float(), b, 5e-2, f"bf16/{direction}/{name}")


@pytest.mark.parametrize("direction", DIRS)
def test_rows_without_allowed_key_are_zero_and_nan_free(direction):
    B, n, d = 4, 6, 5
    q, k, v, mask = make_inputs(B, n, d, seed=11, lengths=[6, 1, 3, 0])
    grad = torch.randn(B, n, d, generator=torch.Generator().manual_seed(12))
    out, dq, dk, dv = run(token2token_attention, q, k, v, mask, direction, grad)
    for t in (out, dq, dk, dv):
        assert torch.isfinite(t).all()
    allowed = mask[:, None, :] & {
        "fw": torch.ones(n, n, dtype=torch.bool).tril(-1),
        "bw": torch.ones(n, n, dtype=torch.bool).triu(1),
        "diag": ~torch.eye(n, dtype=torch.bool),
        "all": torch.ones(n, n, dtype=torch.bool),
    }[direction]
    empty = ~allowed.any(-1)  # [B, n_q]
    assert empty[3].all()  # the all-pad sample
    assert torch.equal(out[empty], torch.zeros_like(out[empty]))
    assert torch.equal(dq[empty], torch.zeros_like(dq[empty]))  # no key, no logit, no gradient
    assert torch.equal(dv[~mask], torch.zeros_like(dv[~mask]))  # pad keys are never attended
    if direction in ("fw", "diag", "bw"):
        assert empty[1, 0]  # length-1 sentence
    ref = token2token_attention_reference(q, k, v, mask, direction)
    assert_close_rel(out, ref, 1e-5, direction)


def test_saved_tensors_are_linear_in_n():
    """Autograd keeps no tensor with B·n·n·d elements (the reference keeps several)."""
    B, n, d = 3, 16, 8
    q, k, v, mask = make_inputs(B, n, d, seed=13)

    def max_saved(fn):
        sizes = []

        def pack(t):
            sizes.append(t.numel())
            return t

        qq, kk, vv = (t.detach().clone().requires_grad_(True) for t in (q, k, v))
        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            out = fn(qq, kk, vv, mask, "fw")
        out.sum().backward()
        assert qq.grad is not None and kk.grad is not None and vv.grad is not None
        return max(sizes)

    assert max_saved(token2token_attention_reference) >= B * n * n * d  # the hook sees the reference's big tensors
    assert max_saved(token2token_attention) < B * n * n * d
    assert max_saved(token2token_attention) <= B * n * d


def test_partial_requires_grad_and_non_contiguous_inputs():
    B, n, d = 3, 7, 4
    q, k, v, mask = make_inputs(B, n, d, seed=14)
    qt = q.transpose(0, 1).contiguous().transpose(0, 1)  # non-contiguous view with the same values
    grad = torch.randn(B, n, d, generator=torch.Generator().manual_seed(15))
    ref = run(token2token_attention_reference, q, k, v, mask, "bw", grad)
    vv = v.detach().clone().requires_grad_(True)
    out = token2token_attention(qt, k, vv, mask, "bw")
    out.backward(grad)
    assert_close_rel(out.detach(), ref[0], 1e-5, "out")
    assert_close_rel(vv.grad, ref[3], 1e-5, "dv")
    qq = q.detach().clone().requires_grad_(True)
    token2token_attention(qq, k, v, mask, "bw").backward(grad)
    assert_close_rel(qq.grad, ref[1], 1e-5, "dq")


def test_rejects_bad_arguments():
    q, k, v, mask = make_inputs(2, 3, 4)
    with pytest.raises(ValueError, match="direction"):
        token2token_attention(q, k, v, mask, "up")
    with pytest.raises(ValueError, match="mask"):
        token2token_attention(q, k, v, mask[:, :2], "fw")
    with pytest.raises(ValueError):
        token2token_attention(q, k[:, :2], v, mask, "fw")
    with pytest.raises(ValueError, match="block_size"):
        token2token_attention(q, k, v, mask, "fw", block_size=0)


@pytest.mark.parametrize("lengths", [[7, 7, 7], [7, 2, 5]])
def test_output_can_be_modified_in_place(lengths):
    """Like the reference, the returned tensor is not needed by backward (it may be scaled or masked in place)."""
    q, k, v, mask = make_inputs(3, 7, 4, seed=16, lengths=lengths)
    grad = torch.randn(3, 7, 4, generator=torch.Generator().manual_seed(17))
    ref = run(token2token_attention_reference, q, k, v, mask, "fw", grad)
    qq, kk, vv = (t.detach().clone().requires_grad_(True) for t in (q, k, v))
    out = token2token_attention(qq, kk, vv, mask, "fw", block_size=4 * 4)
    out.mul_(2.0)
    out.backward(grad)
    assert_close_rel(out.detach(), 2 * ref[0], 1e-5, "out")
    for name, a, b in zip(("dq", "dk", "dv"), (qq.grad, kk.grad, vv.grad), ref[1:]):
        assert_close_rel(a, 2 * b, 1e-5, name)


@pytest.mark.parametrize("direction", DIRS)
def test_batch_reordering_by_length(direction):
    """With several rows per block and mixed lengths the batch is sorted by length internally; results unchanged."""
    from modeling_disan.token2token import _Plan

    B, n, d = 8, 12, 4
    lengths = [12, 1, 9, 2, 12, 3, 8, 1]
    q, k, v, mask = make_inputs(B, n, d, seed=18, lengths=lengths)
    # blocks of several batch rows: 3 (b, j) rows (fw/bw: Jb = 1, Bb = 3) or 2 full sentences (diag/all)
    block_size = 3 * 12 * d if direction in ("fw", "bw") else 2 * 12 * 12 * d
    plan = _Plan(mask, direction, d, block_size, torch.float32, "cpu")
    assert plan.perm is not None and plan.bb > 1
    grad = torch.randn(B, n, d, generator=torch.Generator().manual_seed(19))
    ref = run(token2token_attention_reference, q, k, v, mask, direction, grad)
    new = run(token2token_attention, q, k, v, mask, direction, grad, block_size=block_size)
    for name, a, b in zip(("out", "dq", "dk", "dv"), new, ref):
        assert_close_rel(a, b, 1e-5, f"{direction}/{name}")


@pytest.mark.parametrize("direction", DIRS)
def test_float32_error_against_float64_ground_truth(direction):
    """fp32 error vs the float64 reference is as small as the fp32 reference's own, on natural scales.

    (Rows with a single allowed key have an exactly-zero true dq/dk that both fp32 versions only reproduce up to
    rounding noise, so comparisons are made against |v| for s and |g|·|v| for dq, dk.)
    """
    B, n, d = 7, 13, 6
    q, k, v, _ = make_inputs(B, n, d, dtype=torch.float64, seed=20, scale=3.0)
    gen = torch.Generator().manual_seed(21)
    mask = torch.rand(B, n, generator=gen) > 0.3
    mask[0] = True
    grad = torch.randn(B, n, d, generator=gen, dtype=torch.float64)
    exact = run(token2token_attention_reference, q, k, v, mask, direction, grad)
    ours = run(token2token_attention, q.float(), k.float(), v.float(), mask, direction, grad.float())
    ref32 = run(token2token_attention_reference, q.float(), k.float(), v.float(), mask, direction, grad.float())
    scales = (v.abs().max(), grad.abs().max() * v.abs().max(), grad.abs().max() * v.abs().max(), grad.abs().max())
    for name, a, r, x, sc in zip(("out", "dq", "dk", "dv"), ours, ref32, exact, scales):
        err = (a.double() - x).abs().max() / sc
        ref_err = (r.double() - x).abs().max() / sc
        assert err < 1e-5 and err < 10 * ref_err + 1e-7, f"{name}: {err:.2e} (fp32 reference: {ref_err:.2e})"
