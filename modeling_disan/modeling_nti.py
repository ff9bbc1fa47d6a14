"""NTI: Neural Tree Indexers (Munkhdalai & Yu, EACL 2017), as a transformers model.

A sentence becomes the leaves of a full binary tree (pads inserted on the left up to a power of two), a leaf function
maps the word vectors to leaf states, and a node function composes the tree bottom-up, one level per step: every node
of a level is computed by one batched tensor op (spec §2). The root is the sentence vector. Equation numbers refer to
the paper; "spec" is ``shared/specs/nti.md``; "code" is the authors' released Chainer code as the spec reports it.

Node storage: leaves first, level by level, left to right, root last (``nodes[:, 0:L]`` leaves, ``nodes[:, -1]`` root).

Variable lengths (spec §2). HF inputs are right-padded; a gather turns them into left-justified leaves (pads first,
words last, as in the code). ``padding_mode="fixed"``: every tree has ``max_leaves`` leaves. ``"per_example"``:
sentence i gets its own tree of L_i = 2^⌈log2 n_i⌉ leaves, placed at the right end of the batch's L leaves; nodes
left of it are *dead*, a parent whose left child is dead copies its right child (pass-through, so the own root
reaches the top), the leaf LSTM starts at the own tree's first leaf, and attention only sees own-tree nodes. The result
equals running the sentence alone, whatever its batch-mates.

Remote-code safe: imports torch, transformers and sibling modeling files only.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn
from transformers import initialization as init
from transformers.modeling_outputs import BaseModelOutputWithPooling

from .attention import masked_softmax
from .configuration_nti import NTIConfig
from .heads import MLPHead, SentenceClassifierMixin, SentenceClassifierOutput, split_pair
from .modeling_common import SentenceEncoderModel, SentenceEncoderPreTrainedModel, WordEmbedding


# -- tree layout ---------------------------------------------------------------------------------------------------
def next_power_of_two(n: torch.Tensor) -> torch.Tensor:
    """2^⌈log2 n⌉ per entry (n ≥ 1), in exact integer arithmetic."""
    p = torch.ones_like(n)
    while bool((p < n).any()):
        p = torch.where(p < n, p * 2, p)
    return p


class TreeLayout:
    """Where every example's own tree sits inside the batch's tree of ``num_leaves`` leaves (spec §2).

    ``lengths`` [B]: words placed in the tree (after truncation in fixed mode); ``tree_leaves`` [B]: L_i. Leaf slot t of
    example i is dead for t < L − L_i, a pad leaf for L − L_i ≤ t < L − n_i and a word after that.
    """

    def __init__(self, num_leaves: int, lengths: torch.Tensor, tree_leaves: torch.Tensor):
        self.num_leaves = num_leaves
        self.depth = num_leaves.bit_length() - 1  # D = log2 L composition levels
        self.lengths, self.tree_leaves = lengths, tree_leaves
        self.offset = num_leaves - tree_leaves  # [B] first slot of the own tree
        self.word_start = num_leaves - lengths  # [B] first word slot
        self.tree_depth = torch.log2(tree_leaves.float()).round().long()  # [B] D_i
        self.full = bool((tree_leaves == num_leaves).all())  # no dead nodes anywhere (fixed mode, or equal L_i)
        self.device = lengths.device

    @classmethod
    def from_lengths(cls, lengths: torch.Tensor, mode: str, max_leaves: int) -> "TreeLayout":
        if mode == "fixed":  # code: truncate to the first L tokens, pad to L
            return cls(max_leaves, lengths.clamp(max=max_leaves), torch.full_like(lengths, max_leaves))
        tree_leaves = next_power_of_two(lengths)
        return cls(int(tree_leaves.max()), lengths, tree_leaves)

    @property
    def num_nodes(self) -> int:
        return 2 * self.num_leaves - 1

    def size(self, level: int) -> int:
        return self.num_leaves >> level

    def _span_start(self, level: int) -> torch.Tensor:
        return torch.arange(self.size(level), device=self.device) << level  # [m]

    def dead(self, level: int) -> torch.Tensor:
        """[B, m]: the node's whole span lies left of the own tree."""
        return ((self._span_start(level) + (1 << level))[None, :]) <= self.offset[:, None]

    def passthrough(self, level: int) -> torch.Tensor:
        """[B, m] (level ≥ 1): the left child is dead, so the node copies its right child."""
        return self.dead(level - 1)[:, 0::2]

    def in_tree(self, level: int) -> torch.Tensor:
        """[B, m]: the node is a node of the example's own tree."""
        inside = self._span_start(level)[None, :] >= self.offset[:, None]
        return inside & (self.tree_depth[:, None] >= level)

    def pad_only(self, level: int) -> torch.Tensor:
        """[B, m]: the node's span holds pad leaves only (``pad[l+1] = pad[l][0::2] & pad[l][1::2]``)."""
        return ((self._span_start(level) + (1 << level))[None, :]) <= self.word_start[:, None]

    def allowed(self, level: int, mask_pad_nodes: bool) -> torch.Tensor:
        """[B, m]: nodes an attention softmax may use (own tree; minus pad-only spans with ``mask_pad_nodes``)."""
        allowed = self.in_tree(level)
        return allowed & ~self.pad_only(level) if mask_pad_nodes else allowed

    def node_allowed(self, mask_pad_nodes: bool) -> torch.Tensor:
        return torch.cat([self.allowed(l, mask_pad_nodes) for l in range(self.depth + 1)], dim=1)  # [B, N]

    def split(self, nodes: torch.Tensor) -> list[torch.Tensor]:
        """``[B, N, ...]`` in storage order -> one ``[B, L/2^l, ...]`` tensor per level."""
        return list(torch.split(nodes, [self.size(l) for l in range(self.depth + 1)], dim=1))

    def own_root_index(self) -> torch.Tensor:
        """[B] storage index of each own root: level D_i, last node = 2L − L/L_i − 1."""
        return 2 * self.num_leaves - self.num_leaves // self.tree_leaves - 1

    def active_leaves(self) -> torch.Tensor:
        """[B, L]: leaf slots of the own tree (where the leaf LSTM runs)."""
        return torch.arange(self.num_leaves, device=self.device)[None, :] >= self.offset[:, None]


def place_leaves(x: torch.Tensor, mask: torch.Tensor, layout: TreeLayout, pad_vector: torch.Tensor):
    """Right-padded ``x [B, n, d]`` -> left-justified leaf inputs ``[B, L, d]`` (pads first, words last; one gather),
    and ``leaf_positions [B, n]``: the leaf slot of each input token (−1 for padding and truncated tokens)."""
    B, n, d = x.shape
    L = layout.num_leaves
    rank = mask.long().cumsum(1) - 1  # rank of each real token among the real tokens
    order = torch.argsort((~mask).to(torch.int8), dim=1, stable=True)  # real tokens first, in order
    token = torch.arange(L, device=x.device)[None, :] - layout.word_start[:, None]  # [B, L] token rank in slot t
    is_word = token >= 0
    source = order.gather(1, token.clamp(0, n - 1))
    words = x.gather(1, source.unsqueeze(-1).expand(B, L, d))
    slots = torch.where(is_word.unsqueeze(-1), words, pad_vector.to(x.dtype))
    placed = mask & (rank < layout.lengths[:, None])
    positions = torch.where(placed, layout.word_start[:, None] + rank, torch.full_like(rank, -1))
    return slots, positions


def lstm_scan(cell: nn.LSTMCell, x: torch.Tensor, active: torch.Tensor | None = None, state=None):
    """Run an LSTM cell over ``x [B, T, d]`` and return every step's h and c (``nn.LSTM`` returns no per-step c, which
    the S-LSTM leaves need). Steps where ``active [B, T]`` is False leave the state unchanged. The input projection of
    all steps is one matmul; PyTorch gate order (i, f, g, o)."""
    B, T, _ = x.shape
    # unbind, not gates_x[:, t]: the backward of T slices would zero-fill and add T full-size gradients
    gates_x = F.linear(x, cell.weight_ih, cell.bias_ih + cell.bias_hh).unbind(1)  # T x [B, 4k]
    keeps = active.unsqueeze(-1).unbind(1) if active is not None else None
    if state is None:
        h = x.new_zeros(B, cell.hidden_size)
        c = x.new_zeros(B, cell.hidden_size)
    else:
        h, c = state
    hs, cs = [], []
    for t in range(T):
        i, f, g, o = (gates_x[t] + F.linear(h, cell.weight_hh)).chunk(4, dim=-1)
        c_new = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
        h_new = torch.sigmoid(o) * torch.tanh(c_new)
        if keeps is None:
            h, c = h_new, c_new
        else:
            h, c = torch.where(keeps[t], h_new, h), torch.where(keeps[t], c_new, c)
        hs.append(h)
        cs.append(c)
    return torch.stack(hs, 1), torch.stack(cs, 1), (h, c)


# -- node functions ------------------------------------------------------------------------------------------------
class SLSTMPaper(nn.Module):
    """S-LSTM as printed (Eq. 1-6, Zhu et al. 2015): peepholes on both child cells, the output gate reads the new cell.
    17 k×k matrices (W1…W16, W18; W17 does not occur) and 5 biases = 17k² + 5k."""

    def __init__(self, k: int):
        super().__init__()
        # rows (i, f_l, f_r, u, o) x columns (h_l, h_r): W1,W2 | W5,W6 | W9,W10 | W13,W14 | W15,W16; biases b_i..b_o
        self.w_h = nn.Linear(2 * k, 5 * k)
        # rows (i, f_l, f_r) x columns (c_l, c_r): W3,W4 | W7,W8 | W11,W12
        self.w_c = nn.Linear(2 * k, 3 * k, bias=False)
        self.w_o = nn.Linear(k, k, bias=False)  # W18 on c_p (Eq. 5)

    def forward(self, hl, hr, cl, cr, h_pair=None, c_pair=None):  # [B, m, k] each -> (h_p, c_p)
        """``h_pair``/``c_pair`` [B, m, 2k] = [h_l; h_r] / [c_l; c_r] when the caller has them (a free view)."""
        h_pair = torch.cat([hl, hr], -1) if h_pair is None else h_pair
        c_pair = torch.cat([cl, cr], -1) if c_pair is None else c_pair
        i, f_l, f_r, u, o = self.w_h(h_pair).chunk(5, dim=-1)
        ci, cf_l, cf_r = self.w_c(c_pair).chunk(3, dim=-1)
        c = (
            torch.sigmoid(f_l + cf_l) * cl  # Eq. 2
            + torch.sigmoid(f_r + cf_r) * cr  # Eq. 3
            + torch.sigmoid(i + ci) * torch.tanh(u)  # Eq. 1, Eq. 4
        )
        h = torch.sigmoid(o + self.w_o(c)) * torch.tanh(c)  # Eq. 5, Eq. 6
        return h, c


class SLSTMChainer(nn.Module):
    """S-LSTM of the released code (``chainer.functions.slstm``): z_l = W_L h_l + b_L, z_r = W_R h_r + b_R, each split
    into (a, i, f, o); c = σ(i_l)tanh(a_l) + σ(i_r)tanh(a_r) + σ(f_l)c_l + σ(f_r)c_r, h = σ(o_l + o_r)tanh(c).
    No peepholes: 8k² + 8k. Gates are stored in blocks (a, i, f, o); Chainer interleaves them per unit."""

    def __init__(self, k: int):
        super().__init__()
        self.w_left = nn.Linear(k, 4 * k)
        self.w_right = nn.Linear(k, 4 * k)

    def forward(self, hl, hr, cl, cr):
        a_l, i_l, f_l, o_l = self.w_left(hl).chunk(4, dim=-1)
        a_r, i_r, f_r, o_r = self.w_right(hr).chunk(4, dim=-1)
        c = (torch.sigmoid(i_l) * torch.tanh(a_l) + torch.sigmoid(i_r) * torch.tanh(a_r)
             + torch.sigmoid(f_l) * cl + torch.sigmoid(f_r) * cr)
        return torch.sigmoid(o_l + o_r) * torch.tanh(c), c


class AttentiveNodeFunction(nn.Module):
    """ANF (Eq. 7-11): attend over the two children with a query q, h_p = ReLU(W1^ANF z). No cell state.
    MLP scoring: 3k² + k parameters (W1^score, W2^score, w, W1^ANF; no biases are written)."""

    def __init__(self, k: int, score: str):
        super().__init__()
        self.score_kind = score
        if score == "mlp":
            self.w_children = nn.Linear(k, k, bias=False)  # W1^score
            self.w_query = nn.Linear(k, k, bias=False)  # W2^score
            self.w_score = nn.Linear(k, 1, bias=False)  # w
        self.w_out = nn.Linear(k, k, bias=False)  # W1^ANF (Eq. 10)

    def forward(self, hl, hr, query, allowed=None):  # children [B, m, k], query [B, 1|m, k], allowed [B, m, 2]
        S = torch.stack([hl, hr], dim=-2)  # S^ANF [B, m, 2, k] (q is not part of S: spec §8 #21)
        if self.score_kind == "mlp":  # Eq. 11
            m = self.w_score(torch.relu(self.w_children(S) + self.w_query(query).unsqueeze(-2))).squeeze(-1)
        else:  # m = qᵀ S
            m = (S @ query.unsqueeze(-1)).squeeze(-1)
        alpha = torch.softmax(m, -1) if allowed is None else masked_softmax(m, allowed, -1)  # Eq. 7-8, [B, m, 2]
        z = (alpha.unsqueeze(-1) * S).sum(-2)  # Eq. 9
        return torch.relu(self.w_out(z)), alpha  # Eq. 10


class NTITree(nn.Module):
    """f^leaf + f^node over a full binary tree, one batched op per level (spec §1.4, §2).

    ``node_function`` overrides the config's (the WikiQA question tree is an NTI-ANF next to an S-LSTM answer tree).
    """

    def __init__(self, config: NTIConfig, node_function: str | None = None):
        super().__init__()
        k = config.hidden_size
        self.node_function = node_function or config.node_function
        self.mask_pad_nodes = config.mask_pad_nodes
        self.leaf_lstm = nn.LSTMCell(config.embedding_dim, k) if config.leaf_function == "lstm" else None
        if self.node_function == "anf":
            self.node = AttentiveNodeFunction(k, config.anf_score)
        elif config.slstm_type == "paper":
            self.node = SLSTMPaper(k)
        else:
            self.node = SLSTMChainer(k)
        self.drop = nn.Dropout(config.input_dropout)

    def leaves(self, x: torch.Tensor, layout: TreeLayout, state=None):
        """Level 0: (h [B, L, k], c [B, L, k], final LSTM (h, c) or None). ``x`` are the leaf inputs [B, L, d]."""
        if self.leaf_lstm is None:  # NTI-SLSTM: h = x after input dropout, c = 0 (spec §8 #3)
            h = self.drop(x)
            return h, torch.zeros_like(h), None
        active = None if layout.full else layout.active_leaves()  # per_example: start at the own tree's first leaf
        return lstm_scan(self.leaf_lstm, self.drop(x), active, state)  # outputs and memory cells (§4.1)

    def compose(self, level: int, h: torch.Tensor, c: torch.Tensor, layout: TreeLayout, query=None):
        """Level ``level`` (≥ 1) from the level below: ``h, c [B, 2m, k]`` -> (h, c [B, m, k], ANF α or None)."""
        B, m2, k = h.shape
        m = m2 // 2
        # siblings are adjacent: [B, 2m, k] -> [B, m, 2k] = [h_l; h_r] is a view (unbind/view backward is cheap,
        # strided slices h[:, 0::2] would zero-fill a full-size gradient each)
        h_pair, c_pair = h.reshape(B, m, 2 * k), c.reshape(B, m, 2 * k)
        if not (level == 1 and self.leaf_lstm is None):  # input dropout on each child h; identity leaves: once
            h_pair = self.drop(h_pair)
        hl, hr = h_pair.reshape(B, m, 2, k).unbind(2)
        cl, cr = c_pair.reshape(B, m, 2, k).unbind(2)
        alpha = None
        if self.node_function == "anf":
            allowed = None
            if self.mask_pad_nodes:
                keep = ~layout.pad_only(level - 1)
                allowed = torch.stack([keep[:, 0::2], keep[:, 1::2]], dim=-1)
            h_p, alpha = self.node(hl, hr, query, allowed)
            c_p = torch.zeros_like(h_p)  # ANF carries no memory
        elif isinstance(self.node, SLSTMPaper):
            h_p, c_p = self.node(hl, hr, cl, cr, h_pair=h_pair, c_pair=c_pair)  # Eq. 1-6
        else:
            h_p, c_p = self.node(hl, hr, cl, cr)
        if not layout.full:  # pass-through: a parent whose left child is dead copies its right child
            through = layout.passthrough(level).unsqueeze(-1)
            h_right = h.reshape(B, m, 2, k)[:, :, 1]  # un-dropped
            h_p, c_p = torch.where(through, h_right, h_p), torch.where(through, cr, c_p)
        return h_p, c_p, alpha

    def forward(self, x: torch.Tensor, layout: TreeLayout, query=None, state=None):
        """Bottom-up construction. Returns (per-level h list, per-level c list, final leaf-LSTM state, ANF α list)."""
        if query is not None:
            query = query.unsqueeze(1)  # [B, 1, k], shared by every node
        h, c, final = self.leaves(x, layout, state)
        hs, cs, alphas = [h], [c], []
        for level in range(1, layout.depth + 1):  # D sequential steps, each one batched op over the level
            h, c, alpha = self.compose(level, h, c, layout, query)
            hs.append(h)
            cs.append(c)
            alphas.append(alpha)
        return hs, cs, final, alphas


def compose_node_by_node(tree: NTITree, h0: torch.Tensor, c0: torch.Tensor, layout: TreeLayout, query=None):
    """Reference: the same tree, composed one node at a time (L − 1 node-function calls instead of log2 L).

    Used by the tests (level-wise batching must give the same nodes) and by ``scripts/bench_nti_levelwise.py``.
    Apply to leaf states ``h0, c0 [B, L, k]`` from ``tree.leaves``; returns nodes ``[B, 2L−1, k]``. In train mode the
    dropout masks differ from the batched version, so compare in eval mode.
    """
    if query is not None:
        query = query.unsqueeze(1)
    levels, h, c = [h0], h0, c0
    for level in range(1, layout.depth + 1):
        through = None if layout.full else layout.passthrough(level)
        keep = ~layout.pad_only(level - 1) if tree.mask_pad_nodes else None
        hs, cs = [], []
        for j in range(h.shape[1] // 2):
            left, right = slice(2 * j, 2 * j + 1), slice(2 * j + 1, 2 * j + 2)
            hl, hr, cl, cr = h[:, left], h[:, right], c[:, left], c[:, right]
            if not (level == 1 and tree.leaf_lstm is None):
                hl, hr = tree.drop(hl), tree.drop(hr)
            if tree.node_function == "anf":
                allowed = None if keep is None else torch.stack([keep[:, 2 * j], keep[:, 2 * j + 1]], -1)[:, None]
                h_p, _ = tree.node(hl, hr, query, allowed)
                c_p = torch.zeros_like(h_p)
            else:
                h_p, c_p = tree.node(hl, hr, cl, cr)
            if through is not None:
                t = through[:, j, None, None]
                h_p, c_p = torch.where(t, h[:, right], h_p), torch.where(t, cr, c_p)
            hs.append(h_p)
            cs.append(c_p)
        h, c = torch.cat(hs, 1), torch.cat(cs, 1)
        levels.append(h)
    return torch.cat(levels, 1)


# -- attention over a tree (§3.2) ----------------------------------------------------------------------------------
class AttentionScore(nn.Module):
    """f^score(keys, q): ``"bilinear"`` kᵀ(W q + b) (code), ``"mlp"`` wᵀReLU(W1 k + W2 q) (Eq. 11 form) or ``"dot"``.

    ``keys [..., n, k]`` and ``query [..., k]`` share (broadcastable) leading dims; returns scores ``[..., n]``.
    """

    def __init__(self, kind: str, k: int):
        super().__init__()
        self.kind = kind
        if kind == "bilinear":
            self.w_query = nn.Linear(k, k)  # W_ap, b_ap
        elif kind == "mlp":
            self.w_key = nn.Linear(k, k, bias=False)  # W1^score
            self.w_query = nn.Linear(k, k, bias=False)  # W2^score
            self.w_score = nn.Linear(k, 1, bias=False)  # w

    def forward(self, keys: torch.Tensor, query: torch.Tensor) -> torch.Tensor:
        if self.kind == "mlp":
            return self.w_score(torch.relu(self.w_key(keys) + self.w_query(query).unsqueeze(-2))).squeeze(-1)
        q = self.w_query(query) if self.kind == "bilinear" else query
        return (keys @ q.unsqueeze(-1)).squeeze(-1)


class TreeAttention(nn.Module):
    """Attention of queries over the nodes of a tree: global (Eq. 12-15) or tree attention (Eq. 16-19, or the
    code's "fast" form). Global / fast: score + W1^GA z + W2^GA q (code: W_c, W_q); tree (paper): score + W1^TA."""

    def __init__(self, config: NTIConfig, kind: str):
        super().__init__()
        k, bias = config.hidden_size, config.attention_bias
        self.kind = kind
        self.impl = config.tree_attention_impl if kind == "tree" else "global"
        self.score = AttentionScore(config.attention_score, k)
        self.w_z = nn.Linear(k, k, bias=bias)  # W1^GA (Eq. 15) / W1^TA (Eq. 19) / code W_c
        self.w_q = None if self.impl == "paper" else nn.Linear(k, k, bias=bias)  # W2^GA (Eq. 15) / code W_q

    def output(self, z: torch.Tensor, query: torch.Tensor) -> torch.Tensor:
        out = self.w_z(z)
        return torch.relu(out if self.w_q is None else out + self.w_q(query))  # Eq. 15 (Eq. 19 without W_q)

    def forward(self, nodes, queries, layout: TreeLayout, allowed=None):
        """``nodes [B, N, k]`` (storage order), ``queries [B, m, k]``, ``allowed [B, N]`` -> (h^tree [B, m, k], α)."""
        if self.impl == "global":
            e = self.score(nodes.unsqueeze(1), queries)  # Eq. 12, [B, m, N]
            alpha = torch.softmax(e, -1) if allowed is None else masked_softmax(e, allowed[:, None, :], -1)  # Eq. 13
            return self.output(alpha @ nodes, queries), alpha  # Eq. 14-15
        return self._tree(nodes, queries, layout, allowed)

    def _tree(self, nodes, queries, layout: TreeLayout, allowed):
        """Bottom-up: every parent blends itself with its two (already updated) children (local softmax over 3)."""
        levels = layout.split(nodes)
        allowed_levels = None if allowed is None else layout.split(allowed)
        fast = self.impl == "fast"
        if fast:  # code: scores of the original nodes, computed once
            e_levels = layout.split(self.score(nodes.unsqueeze(1), queries).transpose(1, 2))  # [B, n_l, m] per level
        q = queries.unsqueeze(-2)  # [B, m, 1, k]
        G = levels[0].unsqueeze(1)  # leaves are not updated; [B, 1, L, k] broadcasts over queries
        for level in range(1, layout.depth + 1):
            parent = levels[level].unsqueeze(1)  # [B, 1, M, k]
            left, right = G[:, :, 0::2], G[:, :, 1::2]
            S = torch.stack(torch.broadcast_tensors(parent, left, right), dim=-2)  # S^TA [B, m, M, 3, k]
            if fast:
                e_p, e_c = e_levels[level].transpose(1, 2), e_levels[level - 1].transpose(1, 2)
                e = torch.stack([e_p, e_c[..., 0::2], e_c[..., 1::2]], dim=-1)  # [B, m, M, 3]
            else:
                e = self.score(S, q)  # Eq. 16, [B, m, M, 3]
            if allowed_levels is None:
                alpha = torch.softmax(e, -1)  # Eq. 17: local normalisation
            else:
                a_p, a_c = allowed_levels[level], allowed_levels[level - 1]
                alpha = masked_softmax(e, torch.stack([a_p, a_c[:, 0::2], a_c[:, 1::2]], -1).unsqueeze(1), -1)
            z = (alpha.unsqueeze(-1) * S).sum(-2)  # Eq. 18
            G_new = z if fast else torch.relu(self.w_z(z))  # Eq. 19 (fast: plain normalised blend)
            if not layout.full:
                G_new = torch.where(layout.passthrough(level)[:, None, :, None], right, G_new)
            G = G_new
        root = G[:, :, 0].expand(queries.shape)  # updated root, [B, m, k]
        return (self.output(root, queries) if fast else root), None

    def pool(self, keys, key_mask, query):
        """Global attention of ``query [B, k]`` over ``keys [B, T, k]`` (tree matching's code-style pooling)."""
        e = self.score(keys.unsqueeze(1), query.unsqueeze(1))  # [B, 1, T]
        alpha = masked_softmax(e, key_mask[:, None, :], -1)  # [B, 1, T]
        return self.output((alpha @ keys).squeeze(1), query)


# -- outputs -------------------------------------------------------------------------------------------------------
@dataclass
class NTIModelOutput(BaseModelOutputWithPooling):
    """``last_hidden_state``: leaf states ``[B, L, k]`` in tree order (pads first, words last; leaf LSTM outputs, or the
    word vectors for NTI-SLSTM); ``leaf_positions [B, n]`` maps every input token to its leaf (−1: padding or
    truncated). ``pooler_output``: the root h_{2n−1} ``[B, k]``. ``tree_hidden_states``: every node ``[B, 2L−1, k]``,
    leaves first, root last; ``tree_node_mask [B, 2L−1]``: nodes of each sentence's own tree. ``attentions``: ANF α per
    level ``[B, L/2^l, 2]``."""

    tree_hidden_states: torch.FloatTensor | None = None
    tree_node_mask: torch.BoolTensor | None = None
    leaf_positions: torch.LongTensor | None = None


@dataclass
class TreeEncoding:
    """Internal result of one batch of trees."""

    levels: list  # h per level
    cells: list  # c per level
    layout: TreeLayout
    final_state: tuple | None  # leaf LSTM (h, c) after the last leaf
    leaf_positions: torch.Tensor
    alphas: list

    @property
    def nodes(self) -> torch.Tensor:
        return torch.cat(self.levels, dim=1)  # [B, 2L−1, k]

    @property
    def root(self) -> torch.Tensor:
        return self.levels[-1][:, 0]  # the own root (pass-through carries it to the top)


# -- models --------------------------------------------------------------------------------------------------------
class NTIPreTrainedModel(SentenceEncoderPreTrainedModel):
    config_class = NTIConfig
    base_model_prefix = "nti"
    _auto_class_names = {"AutoModel": "NTIModel", "AutoModelForSequenceClassification": "NTIForSequenceClassification"}
    _keys_to_ignore_on_load_unexpected = [
        r"classifier\..*", r"relatedness\..*", r"question_encoder\..*", r"interaction\..*", r"match_lstm\..*",
    ]

    @torch.no_grad()
    def _init_weights(self, module: nn.Module) -> None:
        if isinstance(module, NTIModel):  # code EMPTY: one fixed random pad vector, never trained
            if self.config.pad_leaf == "random":
                init.uniform_(module.pad_vector, -self.config.init_range, self.config.init_range)
            else:
                init.zeros_(module.pad_vector)
        super()._init_weights(module)


class NTIModel(NTIPreTrainedModel, SentenceEncoderModel):
    """NTI sentence encoder. ``pooler_output`` = root ``[B, k]``; ``last_hidden_state`` = leaf states ``[B, L, k]``
    (see :class:`NTIModelOutput`). ``node_function="anf"`` needs ``anf_query [B, k]``."""

    def __init__(self, config: NTIConfig):
        super().__init__(config)
        self.embeddings = WordEmbedding(config)
        self.register_buffer("pad_vector", torch.zeros(config.embedding_dim), persistent=True)
        self.encoder = NTITree(config)
        self.post_init()

    def leaf_inputs(self, x: torch.Tensor, mask: torch.Tensor):
        """Embedded right-padded input -> (leaf inputs [B, L, d], layout, leaf_positions)."""
        layout = TreeLayout.from_lengths(mask.sum(1), self.config.tree_padding, self.config.max_leaves)
        slots, positions = place_leaves(x, mask, layout, self.pad_vector)
        return slots, layout, positions

    def build(self, input_ids, mask, query=None, state=None, tree: NTITree | None = None) -> TreeEncoding:
        """Encode a validated batch (``mask`` bool) with ``tree`` (default: this model's encoder)."""
        tree = self.encoder if tree is None else tree
        if tree.node_function == "anf" and query is None:
            raise ValueError("node_function='anf' composes nodes attentively and needs anf_query [batch, hidden_size]")
        slots, layout, positions = self.leaf_inputs(self.embeddings(input_ids), mask)
        levels, cells, final, alphas = tree(slots, layout, query=query, state=state)
        return TreeEncoding(levels, cells, layout, final, positions, alphas)

    def encode(self, x: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        slots, layout, _ = self.leaf_inputs(x, mask)
        levels, _, _, _ = self.encoder(slots, layout)
        return levels[0], levels[-1][:, 0]

    def forward(self, input_ids=None, attention_mask=None, token_type_ids=None, anf_query=None, return_dict=None,
                **kwargs) -> NTIModelOutput | tuple:
        input_ids, mask = self.check_inputs(input_ids, attention_mask)
        enc = self.build(input_ids, mask, query=anf_query)
        out = NTIModelOutput(
            last_hidden_state=enc.levels[0], pooler_output=enc.root, tree_hidden_states=enc.nodes,
            tree_node_mask=enc.layout.node_allowed(False), leaf_positions=enc.leaf_positions,
            attentions=tuple(enc.alphas) if enc.alphas and enc.alphas[0] is not None else None,
        )
        return out if (return_dict if return_dict is not None else self.config.return_dict) else out.to_tuple()


def _pad_width(ids, mask, width: int, pad_id: int):
    extra = width - ids.shape[1]
    if extra <= 0:
        return ids, mask
    return F.pad(ids, (0, extra), value=pad_id), F.pad(mask, (0, extra), value=False)


class NTIForSequenceClassification(SentenceClassifierMixin, NTIPreTrainedModel):
    """NTI + MLP. Single sentences: root -> MLP (§4.3). Pairs (§4.1): Siamese trees and
    [h^p; h^h; |h^p − h^h|; h^p ⊙ h^h] -> 1024 ReLU -> classes, or an ``nli_interaction`` of Table 1, or answer
    selection (``pair_encoder="anf_question"``, §4.2; one sigmoid logit: ``num_labels=1`` with
    ``problem_type="multi_label_classification"``). ``problem_type="regression"``: the shared relatedness head."""

    def __init__(self, config: NTIConfig):
        super().__init__(config)
        k = config.hidden_size
        self.nti = NTIModel(config)
        if config.pair_encoder == "anf_question":  # NTI-ANF-LSTM question encoder with its own leaf LSTM (§8 #17)
            self.question_encoder = NTITree(config, node_function="anf")
        if config.nli_interaction != "none":
            kind = "tree" if config.nli_interaction.endswith("_tree") else "global"
            self.interaction = TreeAttention(config, kind)
        if config.uses_tree_matching:
            self.match_lstm = nn.LSTMCell(k, k)  # the matching LSTM, shared by both directions
            self.drop = nn.Dropout(config.input_dropout)
            width = 2 * k if config.nli_interaction.startswith("full") else k
            self.classifier = MLPHead(width, config.num_labels, config)
        else:
            self.build_head(config.sentence_dim)
        self.post_init()

    # -- pairs -----------------------------------------------------------------------------------------------------
    def _split(self, input_ids, attention_mask, token_type_ids):
        input_ids, mask = self.nti.check_inputs(input_ids, attention_mask)
        return split_pair(input_ids, mask, token_type_ids, self.config)

    def _build_both(self, first, second) -> tuple[TreeEncoding, int]:
        """Both sentences as one batch of 2B (shared weights, independent trees; spec §2)."""
        (ids_a, mask_a), (ids_b, mask_b) = first, second
        width = max(ids_a.shape[1], ids_b.shape[1])
        pad = self.config.pad_token_id if self.config.pad_token_id is not None else 0
        ids_a, mask_a = _pad_width(ids_a, mask_a, width, pad)
        ids_b, mask_b = _pad_width(ids_b, mask_b, width, pad)
        return self.nti.build(torch.cat([ids_a, ids_b]), torch.cat([mask_a, mask_b])), ids_a.shape[0]

    def encode_sentences(self, input_ids, attention_mask, token_type_ids):
        cfg = self.config
        if not cfg.is_pair_model:
            return super().encode_sentences(input_ids, attention_mask, token_type_ids)
        first, second = self._split(input_ids, attention_mask, token_type_ids)
        if cfg.pair_encoder == "anf_question":  # §4.2: q of the question's ANF is the answer root
            answer = self.nti.build(*second).root
            question = self.nti.build(*first, query=answer, tree=self.question_encoder).root
            return question, answer
        if cfg.nli_interaction.startswith("node_by_node"):
            return self._node_by_node(first, second)
        both, B = self._build_both(first, second)
        return both.root[:B], both.root[B:]

    def _node_by_node(self, first, second):
        """Every hypothesis node attends over the premise tree while the hypothesis tree is built (spec §1.6)."""
        cfg, tree = self.config, self.nti.encoder
        premise = self.nti.build(*first)
        P, allowed_p = premise.nodes, premise.layout.node_allowed(cfg.mask_pad_nodes)
        ids_h, mask_h = second
        slots, layout, _ = self.nti.leaf_inputs(self.nti.embeddings(ids_h), mask_h)
        # NTI-SLSTM-LSTM node-by-node: the hypothesis LSTM starts from the premise LSTM's final (h, c) (§4.1)
        h, c, _ = tree.leaves(slots, layout, premise.final_state)
        if cfg.nbn_mode == "root":
            for level in range(1, layout.depth + 1):
                h, c, _ = tree.compose(level, h, c, layout)
            return premise.root, self.interaction(P, h[:, :1], premise.layout, allowed_p)[0][:, 0]
        attended = self.interaction(P, h, premise.layout, allowed_p)[0]  # level 0
        for level in range(1, layout.depth + 1):
            h, c, _ = tree.compose(level, attended, c, layout)
            new = self.interaction(P, h, premise.layout, allowed_p)[0]
            if not layout.full:  # a pass-through node is its right child, already attended
                new = torch.where(layout.passthrough(level).unsqueeze(-1), attended[:, 1::2], new)
            attended = new
        return premise.root, attended[:, 0]

    def _match(self, keys: TreeEncoding, key_rows: slice, queries: TreeEncoding, query_rows: slice):
        """Queries: every node of the query tree but its root, bottom-up, left to right (code; spec §8 #10)."""
        cfg = self.config
        layout = queries.layout
        in_tree = layout.node_allowed(False)[query_rows]
        rows = torch.arange(in_tree.shape[0], device=in_tree.device)
        single = layout.tree_leaves[query_rows] == 1  # a one-word sentence: its root is its only node
        in_tree[rows, layout.own_root_index()[query_rows]] = single
        order = torch.argsort((~in_tree).to(torch.int8), dim=1, stable=True)
        lengths = in_tree.sum(1)
        order = order[:, : int(lengths.max())]
        nodes = queries.nodes[query_rows]
        Q = nodes.gather(1, order.unsqueeze(-1).expand(-1, -1, nodes.shape[-1]))  # [B, T, k]
        key_layout = keys.layout
        allowed = key_layout.node_allowed(cfg.mask_pad_nodes)[key_rows]
        sub = TreeLayout(key_layout.num_leaves, key_layout.lengths[key_rows], key_layout.tree_leaves[key_rows])
        A, _ = self.interaction(keys.nodes[key_rows], Q, sub, None if sub.full and not cfg.mask_pad_nodes else allowed)
        steps = torch.arange(Q.shape[1], device=Q.device)[None, :]
        M, _, _ = lstm_scan(self.match_lstm, self.drop(A), steps < lengths[:, None])  # matching LSTM, zero state
        last = M.gather(1, (lengths - 1).view(-1, 1, 1).expand(-1, 1, M.shape[-1])).squeeze(1)
        if cfg.matching_pooling == "last":  # paper: "the last hidden state"
            return last
        return self.interaction.pool(M, steps < (lengths - 1)[:, None], last)  # code: attend with the last state

    def tree_matching_features(self, input_ids, attention_mask, token_type_ids) -> torch.Tensor:
        first, second = self._split(input_ids, attention_mask, token_type_ids)
        both, B = self._build_both(first, second)  # premise rows [:B], hypothesis rows [B:]
        prem, hyp = slice(0, B), slice(B, 2 * B)
        v1 = self._match(both, prem, both, hyp)  # hypothesis nodes attend over the premise tree
        if not self.config.nli_interaction.startswith("full"):
            return v1
        v2 = self._match(both, hyp, both, prem)  # full tree matching: premise nodes over the hypothesis tree
        return torch.cat([v1, v2], dim=-1)

    def forward(self, input_ids=None, attention_mask=None, token_type_ids=None, labels=None, return_dict=None,
                **kwargs):
        cfg = self.config
        if not cfg.uses_tree_matching:
            return super().forward(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids,
                                   labels=labels, return_dict=return_dict, **kwargs)
        features = self.tree_matching_features(input_ids, attention_mask, token_type_ids)  # matching vector(s)
        logits = self.classifier(features)
        loss = self._classification_loss(logits, labels) if labels is not None else None
        out = SentenceClassifierOutput(loss=loss, logits=logits, sentence_embeddings=features)
        return out if (return_dict if return_dict is not None else cfg.return_dict) else out.to_tuple()


__all__ = [
    "NTIPreTrainedModel",
    "NTIModel",
    "NTIForSequenceClassification",
    "NTIModelOutput",
    "NTITree",
    "TreeLayout",
    "TreeAttention",
    "SLSTMPaper",
    "SLSTMChainer",
    "AttentiveNodeFunction",
    "compose_node_by_node",
    "lstm_scan",
    "place_leaves",
]
