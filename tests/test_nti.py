"""NTI (Munkhdalai & Yu, EACL 2017): parameter counts (spec §7), per-example trees, padding and batch-mate invariance,
finite fp32/bf16 gradients, save/load through the Auto classes, level-wise batching vs a node-by-node loop, the SNLI
attention variants (spec §1.5-1.6) and WikiQA answer selection with MAP/MRR (spec §4)."""

from __future__ import annotations

import gzip
import json
import os

import pytest
import torch
from torch import nn
from transformers import AutoConfig, AutoModel, AutoModelForSequenceClassification, pipeline
from transformers.dynamic_module_utils import get_class_from_dynamic_module

from modeling_disan import NTIConfig, NTIForSequenceClassification, NTIModel
from modeling_disan.modeling_nti import NTITree, TreeAttention, TreeLayout, compose_node_by_node

from conftest import tiny_config

@pytest.fixture(autouse=True)
def _one_thread():
    """Many small ops: on 2 shared, busy cores two intra-op threads spin-wait on each other (10x slower here)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


INTERACTIONS = ["node_by_node_global", "node_by_node_tree", "tree_matching_global", "tree_matching_tree",
                "full_tree_matching_global"]


def parameter_counts(model) -> tuple[int, int]:
    """(every parameter but the frozen embeddings, the same with PyTorch's redundant second LSTM bias b_hh left out).

    Spec §7 counts an LSTM as 4(k·d + k·k) + 4k (Chainer: one bias); ``nn.LSTMCell`` has b_ih and b_hh (+4k each)."""
    embedding = model.get_input_embeddings().weight
    total = sum(p.numel() for p in model.parameters() if p is not embedding)
    second_bias = sum(p.numel() for name, p in model.named_parameters() if name.endswith("bias_hh"))
    return total, total - second_bias


# paper-equation column: S-LSTM Eq. 1-6, MLP scoring (Eq. 11 form), Eq. 15/19 without biases, tree attention Eq. 16-19
PAPER = dict(slstm_type="paper", attention_score="mlp", attention_bias=False, tree_attention_impl="paper")
# code-style column: chainer S-LSTM, bilinear scoring with bias, W_c/W_q with biases, "fast" tree attention
CODE = dict(slstm_type="chainer", attention_score="bilinear", attention_bias=True, tree_attention_impl="fast")
SNLI_ROWS = [  # (model of Table 1, config, paper-equation count, code-style count) from spec §7
    ("NTI-SLSTM", {}, 2_764_399, 1_955_299),
    ("NTI-SLSTM-LSTM", dict(leaf_function="lstm"), 3_485_599, 2_676_499),
    ("NTI-SLSTM node-by-node global", dict(nli_interaction="node_by_node_global"), 3_124_699, 2_226_199),
    ("NTI-SLSTM node-by-node tree", dict(nli_interaction="node_by_node_tree"), 3_034_699, 2_226_199),
    ("NTI-SLSTM-LSTM node-by-node global", dict(leaf_function="lstm", nli_interaction="node_by_node_global"),
     3_845_899, 2_947_399),
    ("NTI-SLSTM-LSTM node-by-node tree", dict(leaf_function="lstm", nli_interaction="node_by_node_tree"),
     3_755_899, 2_947_399),
    ("Tree matching global", dict(leaf_function="lstm", nli_interaction="tree_matching_global"), 3_645_499, 2_746_999),
    ("Tree matching tree", dict(leaf_function="lstm", nli_interaction="tree_matching_tree"), 3_555_499, 2_746_999),
    # code-style: the released model has 3,054,500 including an unused 301-parameter layer w_we, not built here
    ("Full tree matching global", dict(leaf_function="lstm", nli_interaction="full_tree_matching_global"),
     3_952_699, 3_054_500 - 301),
]


@pytest.mark.parametrize("name,fields,paper,code", SNLI_ROWS, ids=[r[0] for r in SNLI_ROWS])
def test_snli_parameter_counts_match_spec_section_7(name, fields, paper, code):
    """k = d = 300, MLP 1024, C = 3, frozen embeddings excluded; LSTMs counted with one bias (spec §7), and with
    PyTorch's two biases +1,200 per LSTM."""
    lstms = (fields.get("leaf_function") == "lstm") + ("tree_matching" in fields.get("nli_interaction", ""))
    for column, expected in (({**PAPER}, paper), ({**CODE}, code)):
        model = NTIForSequenceClassification(NTIConfig(vocab_size=20, num_labels=3, **fields, **column))
        total, one_bias = parameter_counts(model)
        assert one_bias == expected, (name, column)
        assert total == expected + 1_200 * lstms


def test_derived_counts_sst_and_wikiqa():
    """Spec §7 'derived counts' (paper-equation form): SST heads on the root, WikiQA = two leaf LSTMs + S-LSTM + ANF
    + MLP(4k -> 1024 -> 1)."""
    def count(**fields):
        return parameter_counts(NTIForSequenceClassification(NTIConfig(vocab_size=20, **fields)))[1]

    assert count(pair_features=None, num_labels=2) == 1_841_774
    assert count(pair_features=None, num_labels=5) == 1_844_849
    assert count(pair_features=None, num_labels=2, leaf_function="lstm") == 2_562_974
    assert count(pair_features=None, num_labels=5, leaf_function="lstm") == 2_566_049
    assert count(leaf_function="lstm", pair_encoder="anf_question", num_labels=1,
                 problem_type="multi_label_classification") == 4_475_049


def test_building_blocks_have_the_spec_sizes():
    k = 300
    cfg = NTIConfig(vocab_size=20)
    size = lambda module: sum(p.numel() for p in module.parameters())  # noqa: E731
    assert size(NTITree(cfg).node) == 17 * k * k + 5 * k == 1_531_500  # Eq. 1-6
    assert size(NTITree(NTIConfig(vocab_size=20, slstm_type="chainer")).node) == 8 * k * k + 8 * k
    assert size(NTITree(cfg, node_function="anf").node) == 3 * k * k + k  # Eq. 7-11, MLP scoring
    assert size(TreeAttention(NTIConfig(vocab_size=20, **PAPER), "global")) == 4 * k * k + k  # Eq. 11 + Eq. 15
    assert size(TreeAttention(NTIConfig(vocab_size=20, **PAPER), "tree")) == 3 * k * k + k  # Eq. 16-19
    assert size(TreeAttention(NTIConfig(vocab_size=20, **CODE), "global")) == 3 * (k * k + k)  # w_ap, w_c, w_q


# -- trees, padding and batch-mates --------------------------------------------------------------------------------
def test_tree_layout_of_per_example_trees():
    layout = TreeLayout.from_lengths(torch.tensor([1, 3, 5, 8]), "per_example", 32)
    assert layout.num_leaves == 8 and layout.tree_leaves.tolist() == [1, 4, 8, 8]
    assert layout.offset.tolist() == [7, 4, 0, 0] and layout.word_start.tolist() == [7, 5, 3, 0]
    # level 1 of the 3-word sentence (own tree = leaves 4..7): nodes 0, 1 dead, 2, 3 in its tree
    assert layout.dead(1)[1].tolist() == [True, True, False, False]
    assert layout.in_tree(1)[1].tolist() == [False, False, True, True]
    assert layout.in_tree(3)[1].tolist() == [False]  # above its own root: a pass-through copy
    assert layout.passthrough(3)[1].tolist() == [True] and layout.passthrough(3)[2].tolist() == [False]
    assert layout.own_root_index().tolist() == [7, 13, 14, 14]
    fixed = TreeLayout.from_lengths(torch.tensor([1, 40]), "fixed", 32)
    assert fixed.full and fixed.lengths.tolist() == [1, 32] and fixed.num_nodes == 63


def test_leaves_are_left_justified_with_pads_first():
    model = NTIModel(tiny_config("nti", pad_leaf="random")).eval()
    ids = torch.tensor([[5, 6, 7, 0, 0], [9, 10, 11, 12, 13]])
    out = model(input_ids=ids)
    assert out.last_hidden_state.shape == (2, 8, 8) and out.tree_hidden_states.shape == (2, 15, 8)
    # row 0: 3 words -> own tree of 4 leaves at slots 4..7 of the batch's 8 (slot 4 a pad leaf, 0..3 dead)
    assert out.leaf_positions.tolist() == [[5, 6, 7, -1, -1], [3, 4, 5, 6, 7]]
    emb = model.embeddings.weight
    leaves = out.last_hidden_state  # NTI-SLSTM: the leaves are the word vectors (eval: no dropout)
    assert torch.equal(leaves[0, 5:8], emb[[5, 6, 7]]) and torch.equal(leaves[0, 4], model.pad_vector)
    assert torch.equal(leaves[1, :3], model.pad_vector.expand(3, -1))
    assert torch.equal(out.pooler_output, out.tree_hidden_states[:, -1])  # pass-through carries the own root up
    levels = [False] * 4 + [True] * 4, [False, False, True, True], [False, True], [False]
    assert out.tree_node_mask[0].tolist() == sum(levels, [])
    assert out.tree_node_mask[1].all()


@pytest.mark.parametrize("fields", [dict(), dict(leaf_function="lstm", embedding_dim=6),
                                    dict(slstm_type="chainer", leaf_function="lstm", pad_leaf="zero")])
def test_per_example_pooler_is_independent_of_padding_and_batch_mates(fields):
    model = NTIModel(tiny_config("nti", **fields)).eval()
    assert model.config.tree_padding == "per_example"
    sentence = torch.tensor([[4, 9, 13, 22, 7]])  # 5 words -> its own 8-leaf tree
    alone = model(input_ids=sentence)
    batch = torch.tensor([[30] * 11 + [31] * 6, [4, 9, 13, 22, 7] + [0] * 12, [11] + [0] * 16])  # L = 32 here
    out = model(input_ids=batch, attention_mask=(batch != 0).long())
    assert out.last_hidden_state.shape[1] == 32
    assert torch.allclose(out.pooler_output[1], alone.pooler_output[0], atol=1e-6)
    assert torch.allclose(out.pooler_output[2], model(input_ids=torch.tensor([[11]])).pooler_output[0], atol=1e-6)
    # the leaf states of the real words are the same too (found through leaf_positions)
    mine = out.last_hidden_state[1, out.leaf_positions[1, :5]]
    assert torch.allclose(mine, alone.last_hidden_state[0, alone.leaf_positions[0]], atol=1e-6)
    # and equal to the example's own power-of-two tree: fixed mode with max_leaves = 8
    own = NTIModel(model.config.__class__(**{**model.config.to_dict(), "padding_mode": "fixed", "max_leaves": 8}))
    own.load_state_dict(model.state_dict())
    assert torch.allclose(own.eval()(input_ids=sentence).pooler_output, alone.pooler_output, atol=1e-6)


def test_fixed_mode_truncates_and_ignores_batch_width():
    model = NTIModel(tiny_config("nti", padding_mode="fixed", max_leaves=4, leaf_function="lstm")).eval()
    first4 = model(input_ids=torch.tensor([[4, 9, 13, 22]])).pooler_output
    long = model(input_ids=torch.tensor([[4, 9, 13, 22, 7, 8], [5, 0, 0, 0, 0, 0]]),
                 attention_mask=torch.tensor([[1] * 6, [1, 0, 0, 0, 0, 0]]))
    assert torch.allclose(long.pooler_output[0], first4[0], atol=1e-6)  # code: the first L tokens
    assert long.leaf_positions[0].tolist() == [0, 1, 2, 3, -1, -1]
    assert torch.allclose(long.pooler_output[1], model(input_ids=torch.tensor([[5]])).pooler_output[0], atol=1e-6)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("mode", ["per_example", "fixed"])
@pytest.mark.parametrize("leaf", ["none", "lstm"])
def test_lengths_one_and_not_powers_of_two_are_finite_forward_and_backward(dtype, mode, leaf):
    model = NTIForSequenceClassification(tiny_config("nti", num_labels=3, padding_mode=mode, leaf_function=leaf,
                                                     max_leaves=8)).to(dtype)
    ids = torch.tensor([[5, 0, 0, 0, 0, 0], [6, 7, 8, 0, 0, 0], [6, 7, 8, 9, 10, 0], [5, 6, 7, 8, 9, 10]])
    out = model(input_ids=ids, attention_mask=(ids != 0).long(), labels=torch.tensor([0, 1, 2, 0]))
    out.loss.backward()
    assert torch.isfinite(out.logits.float()).all()
    grads = [p.grad for p in model.parameters() if p.grad is not None]
    assert grads and all(torch.isfinite(g.float()).all() for g in grads)
    alone = NTIModel(tiny_config("nti", leaf_function=leaf)).to(dtype)(input_ids=torch.tensor([[5]]))
    assert alone.tree_hidden_states.shape[1] == 1 and torch.isfinite(alone.pooler_output.float()).all()


# -- level-wise batching ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("fields", [dict(), dict(slstm_type="chainer", leaf_function="lstm", embedding_dim=6),
                                    dict(node_function="anf", leaf_function="lstm", mask_pad_nodes=True),
                                    dict(node_function="anf", anf_score="dot", padding_mode="fixed", max_leaves=16)])
def test_level_wise_batching_equals_node_by_node_loop(fields):
    model = NTIModel(tiny_config("nti", **fields)).eval()
    ids = torch.tensor([[4, 9, 13, 22, 7, 0, 0, 0, 0], [5, 0, 0, 0, 0, 0, 0, 0, 0], [3, 4, 5, 6, 7, 8, 9, 10, 11]])
    mask = ids != 0
    query = torch.randn(3, 8) if model.config.node_function == "anf" else None
    fast = model(input_ids=ids, anf_query=query).tree_hidden_states
    slots, layout, _ = model.leaf_inputs(model.embeddings(ids), mask)
    h0, c0, _ = model.encoder.leaves(slots, layout)
    slow = compose_node_by_node(model.encoder, h0, c0, layout, query)
    assert torch.allclose(fast, slow, atol=1e-6)


# -- save / load -----------------------------------------------------------------------------------------------------
def test_save_load_equality_through_auto_classes(tmp_path, tokenizer):
    cfg = tiny_config("nti", vocab_size=len(tokenizer), pair_features="concat_absdiff_mul", num_labels=3,
                      leaf_function="lstm", id2label={0: "entailment", 1: "neutral", 2: "contradiction"},
                      label2id={"entailment": 0, "neutral": 1, "contradiction": 2})
    model = AutoModelForSequenceClassification.from_config(cfg).eval()
    assert isinstance(model, NTIForSequenceClassification)
    model.save_pretrained(tmp_path)
    files = set(os.listdir(tmp_path))
    assert {"model.safetensors", "config.json", "configuration_nti.py", "modeling_nti.py", "configuration_common.py",
            "modeling_common.py", "attention.py", "heads.py"} <= files
    config = json.loads((tmp_path / "config.json").read_text())
    assert config["model_type"] == "nti" and config["auto_map"] == {
        "AutoConfig": "configuration_nti.NTIConfig",
        "AutoModel": "modeling_nti.NTIModel",
        "AutoModelForSequenceClassification": "modeling_nti.NTIForSequenceClassification",
    }
    enc = tokenizer(["Dogs run .", "A man ."], ["A man is playing a guitar on stage .", "Dogs ."], padding=True,
                    return_tensors="pt")
    reloaded = AutoModelForSequenceClassification.from_pretrained(tmp_path).eval()
    assert torch.equal(reloaded(**enc).logits, model(**enc).logits)
    single = tokenizer(["Dogs run .", "What is the capital of France ?"], padding=True, return_tensors="pt")
    encoder = AutoModel.from_pretrained(tmp_path).eval()
    assert isinstance(encoder, NTIModel) and torch.equal(encoder.pad_vector, model.nti.pad_vector)
    assert torch.equal(encoder(**single).pooler_output, model.nti(**single).pooler_output)
    # trust_remote_code path: the class built from the copied code files alone (what a machine without this package
    # runs), loaded in-process as a transformers dynamic module
    remote_cls = get_class_from_dynamic_module("modeling_nti.NTIModel", str(tmp_path))
    assert remote_cls is not NTIModel and remote_cls.__module__.startswith("transformers_modules")
    remote = remote_cls.from_pretrained(tmp_path).eval()
    assert torch.equal(remote(**single).pooler_output, model.nti(**single).pooler_output)


def test_base_checkpoint_has_full_auto_map_and_config_validation(tmp_path):
    AutoModel.from_config(tiny_config("nti")).save_pretrained(tmp_path)
    config = json.loads((tmp_path / "config.json").read_text())
    assert set(config["auto_map"]) == {"AutoConfig", "AutoModel", "AutoModelForSequenceClassification"}
    assert isinstance(AutoConfig.from_pretrained(tmp_path), NTIConfig)
    with pytest.raises(ValueError, match="max_leaves"):
        tiny_config("nti", max_leaves=12)
    with pytest.raises(ValueError, match="embedding_dim"):
        tiny_config("nti", embedding_dim=10)
    with pytest.raises(ValueError, match="slstm_type"):
        tiny_config("nti", slstm_type="tai")
    assert tiny_config("nti", pair_features="concat_absdiff_mul", num_labels=3).tree_padding == "fixed"


def test_uniform_init_frozen_embeddings_and_fixed_pad_vector():
    model = NTIForSequenceClassification(NTIConfig(vocab_size=100, num_labels=3, leaf_function="lstm"))
    for name, param in model.named_parameters():
        if "embeddings" in name:
            assert not param.requires_grad  # §4: embeddings fixed
            continue
        assert param.abs().max() <= 0.1, name  # code: every parameter U(-0.1, 0.1), biases included
        assert param.numel() < 100 or param.std() > 0.05, name  # U(-0.1, 0.1) has sd 0.058
    pad = model.nti.pad_vector
    assert pad.abs().max() <= 0.1 and pad.std() > 0.03 and "nti.pad_vector" in model.state_dict()
    assert not any(p is pad for p in model.parameters())  # a buffer: never trained


def test_dropout_placement():
    """Input dropout on the leaf LSTM input and on both children at every level (spec §3); output dropout once."""
    model = NTIForSequenceClassification(tiny_config("nti", num_labels=2, leaf_function="lstm")).train()
    calls = []
    for name, module in model.named_modules():
        if isinstance(module, nn.Dropout):
            module.register_forward_hook(lambda m, i, o, name=name: calls.append((name, tuple(i[0].shape))))
    model(input_ids=torch.tensor([[3, 4, 5, 6, 7]]))  # 8 leaves: 3 levels
    k = model.config.hidden_size
    encoder = [shape for name, shape in calls if name == "nti.encoder.drop"]
    # word vectors before the leaf LSTM, then per level both children at once ([h_l; h_r], never the cells)
    assert encoder == [(1, 8, model.config.embedding_dim), (1, 4, 2 * k), (1, 2, 2 * k), (1, 1, 2 * k)]
    assert [name for name, _ in calls if name != "nti.encoder.drop"] == ["classifier.layers.2"]  # output dropout


# -- SNLI attention variants (spec §1.5-1.6) ---------------------------------------------------------------------
def pair_batch():
    ids = torch.tensor([[5, 6, 7, 2, 8, 9, 0, 0, 0], [5, 2, 6, 0, 0, 0, 0, 0, 0], [5, 6, 7, 8, 9, 10, 2, 11, 12]])
    types = torch.tensor([[0, 0, 0, 0, 1, 1, 0, 0, 0], [0, 0, 1, 0, 0, 0, 0, 0, 0], [0, 0, 0, 0, 0, 0, 0, 1, 1]])
    return ids, (ids != 0).long(), types


@pytest.mark.parametrize("interaction", ["none"] + INTERACTIONS)
@pytest.mark.parametrize("mode", ["per_example", "fixed"])
def test_pair_models_are_independent_of_batch_mates(interaction, mode):
    cfg = tiny_config("nti", pair_features="concat_absdiff_mul", num_labels=3, leaf_function="lstm",
                      nli_interaction=interaction, padding_mode=mode, max_leaves=8)
    model = NTIForSequenceClassification(cfg).eval()
    ids, mask, types = pair_batch()
    batch = model(input_ids=ids, attention_mask=mask, token_type_ids=types).logits
    for row, width in ((0, 6), (1, 3)):
        alone = model(input_ids=ids[row:row + 1, :width], token_type_ids=types[row:row + 1, :width]).logits
        assert torch.allclose(batch[row], alone[0], atol=1e-5), (interaction, row)


ALTERNATIVES = dict(attention_score="mlp", tree_attention_impl="fast", mask_pad_nodes=True, nbn_mode="root",
                    matching_pooling="last", slstm_type="chainer")


@pytest.mark.parametrize("interaction", INTERACTIONS)
def test_attention_variants_finite_in_fp32_and_bf16(interaction):
    for dtype, extra in ((torch.float32, {}), (torch.bfloat16, {}), (torch.bfloat16, ALTERNATIVES)):
        cfg = tiny_config("nti", pair_features="concat_absdiff_mul", num_labels=3, leaf_function="lstm",
                          nli_interaction=interaction, padding_mode="per_example", **extra)
        model = NTIForSequenceClassification(cfg).to(dtype)
        ids, mask, types = pair_batch()
        out = model(input_ids=ids, attention_mask=mask, token_type_ids=types, labels=torch.tensor([0, 1, 2]))
        out.loss.backward()
        assert torch.isfinite(out.logits.float()).all()
        assert all(torch.isfinite(p.grad.float()).all() for p in model.parameters() if p.grad is not None)


@pytest.mark.parametrize("impl", ["paper", "fast"])
def test_tree_attention_equals_a_per_query_per_node_loop(impl):
    """Eq. 16-19 (``paper``: each parent re-scores [parent, left, right] against q, ReLU(W^TA z)) and the code's
    normalised blend (``fast``), written out node by node for one query at a time."""
    cfg = tiny_config("nti", attention_score="mlp", tree_attention_impl=impl, attention_bias=True)
    attn = TreeAttention(cfg, "tree").eval()
    layout = TreeLayout.from_lengths(torch.tensor([8, 8]), "fixed", 8)
    nodes, queries = torch.randn(2, 15, 8), torch.randn(2, 3, 8)
    out, _ = attn(nodes, queries, layout)
    for b in range(2):
        for j in range(3):
            q = queries[b, j]
            levels = [list(level[b]) for level in layout.split(nodes)]
            score = lambda v: attn.score(v[None, None], q[None])[0, 0]  # noqa: E731
            G = levels[0]
            for level in range(1, 4):
                new = []
                for i, parent in enumerate(levels[level]):
                    S = torch.stack([parent, G[2 * i], G[2 * i + 1]])
                    if impl == "paper":
                        e = torch.stack([score(s) for s in S])
                        new.append(torch.relu(attn.w_z(torch.softmax(e, 0) @ S)))
                    else:  # scores of the original nodes
                        e = torch.stack([score(parent), score(levels[level - 1][2 * i]),
                                         score(levels[level - 1][2 * i + 1])])
                        new.append(torch.softmax(e, 0) @ S)
                G = new
            expected = G[0] if impl == "paper" else torch.relu(attn.w_z(G[0]) + attn.w_q(q))
            assert torch.allclose(out[b, j], expected, atol=1e-5)


def test_global_attention_is_equations_12_to_15_and_pad_nodes_can_be_masked():
    cfg = tiny_config("nti", attention_score="dot", mask_pad_nodes=True)
    attn = TreeAttention(cfg, "global").eval()
    layout = TreeLayout.from_lengths(torch.tensor([3]), "per_example", 32)  # 4 leaves: one pad leaf on the left
    nodes, query = torch.randn(1, 7, 8), torch.randn(1, 1, 8)
    out, alpha = attn(nodes, query, layout, layout.node_allowed(False))
    expected = torch.relu(attn.w_z(torch.softmax(nodes[0] @ query[0, 0], 0) @ nodes[0]) + attn.w_q(query[0, 0]))
    assert torch.allclose(out[0, 0], expected, atol=1e-6)
    _, masked = attn(nodes, query, layout, layout.node_allowed(True))
    assert masked[0, 0, 0] == 0 and torch.allclose(masked.sum(), torch.tensor(1.0))  # the pad leaf gets nothing


def test_node_by_node_lstm_hypothesis_starts_from_the_premise_state():
    cfg = tiny_config("nti", pair_features="concat_absdiff_mul", num_labels=3, leaf_function="lstm",
                      nli_interaction="node_by_node_global", nbn_mode="root")
    model = NTIForSequenceClassification(cfg).eval()
    ids, mask, types = pair_batch()
    base = model(input_ids=ids[:1, :6], token_type_ids=types[:1, :6]).second_sentence_embeddings
    other = ids[:1, :6].clone()
    other[0, 0] = 20  # change the premise only
    changed = model(input_ids=other, token_type_ids=types[:1, :6]).second_sentence_embeddings
    assert not torch.allclose(base, changed)  # the attended hypothesis root sees the premise through the LSTM state


def test_answer_selection_model_and_pipeline_sigmoid(tokenizer):
    cfg = tiny_config("nti", vocab_size=len(tokenizer), leaf_function="lstm", pair_encoder="anf_question",
                      pair_features="concat_absdiff_mul", num_labels=1, problem_type="multi_label_classification",
                      id2label={0: "relevant"}, label2id={"relevant": 0})
    model = AutoModelForSequenceClassification.from_config(cfg).eval()
    assert model.config.tree_padding == "per_example" and model.question_encoder.node_function == "anf"
    enc = tokenizer(["What is the capital of France ?"], ["It's 3.5 miles away !"], return_tensors="pt")
    out = model(**enc, labels=torch.tensor([[1.0]]))
    assert out.logits.shape == (1, 1) and torch.isfinite(out.loss)
    pipe = pipeline("text-classification", model=model, tokenizer=tokenizer)
    result = pipe({"text": "What is the capital of France ?", "text_pair": "It's 3.5 miles away !"})
    assert result["label"] == "relevant"
    assert abs(result["score"] - torch.sigmoid(out.logits).item()) < 1e-5


# -- WikiQA answer selection: task, filtered protocol, MAP/MRR through train() (spec §4) -----------------------------
def write_tiny_wikiqa(root):
    """WikiQA-format splits; question qid k of a split is its k-th question. Dev/test mix questions with no correct,
    only correct, and mixed candidates; the filtered .ref files list the mixed ones, as the originals do."""
    import random

    rng = random.Random(0)
    words = "what who when where is the a capital river city king born year of in on france paris long".split()
    (root / "wikiqa").mkdir()
    for split, n_questions in (("train", 16), ("dev", 6), ("test", 8)):
        lines = ["QuestionID\tQuestion\tDocumentID\tDocumentTitle\tSentenceID\tSentence\tLabel"]
        full, filtered = [], []
        for q in range(n_questions):
            kind = q % 4  # 0: none correct, 1: all correct, 2 and 3: mixed
            n = rng.randint(2, 5)
            labels = [0] * n if kind == 0 else [1] * n if kind == 1 else [int(i == rng.randrange(n)) for i in range(n)]
            if kind >= 2 and not 0 < sum(labels) < n:
                labels = [1] + [0] * (n - 1)
            question = " ".join(rng.choice(words) for _ in range(rng.randint(2, 6))) + " ?"
            for i, label in enumerate(labels):
                sentence = " ".join(rng.choice(words) for _ in range(rng.randint(1, 11))) + " ."
                lines.append(f"{split}Q{q}\t{question}\tD{q}\tTitle\tD{q}-{i}\t{sentence}\t{label}")
                full.append(f"{q + 1} 0 {i} {label}")
                if 0 < sum(labels) < n:
                    filtered.append(f"{q + 1} 0 {i} {label}")
        with gzip.open(root / "wikiqa" / f"WikiQA-{split}.tsv.gz", "wt") as handle:
            handle.write("\n".join(lines) + "\n")
        (root / "wikiqa" / f"WikiQA-{split}.ref").write_text("\n".join(full) + "\n")
        if split != "train":
            (root / "wikiqa" / f"WikiQA-{split}-filtered.ref").write_text("\n".join(filtered) + "\n")


def brute_force_map_mrr(scores, labels, query_ids, only=None):
    aps, rrs = [], []
    for q in dict.fromkeys(query_ids):
        if only is not None and q not in only:
            continue
        ranked = [labels[i] for i in sorted((i for i, x in enumerate(query_ids) if x == q), key=lambda i: -scores[i])]
        if not any(ranked):
            continue
        hits = [r for r, rel in enumerate(ranked, 1) if rel]
        aps.append(sum((n + 1) / r for n, r in enumerate(hits)) / len(hits))
        rrs.append(1 / hits[0])
    return sum(aps) / len(aps), sum(rrs) / len(rrs), len(aps)


def test_wikiqa_task_reads_the_original_tsv(tmp_path):
    from modeling_disan.tasks import get_task, load_task

    write_tiny_wikiqa(tmp_path)
    splits = load_task("wikiqa", data_dir=str(tmp_path))
    assert set(splits) == {"train", "validation", "test"} and get_task("wikiqa").num_labels == 1
    row = splits["test"][0]
    assert set(row) == {"text", "text_pair", "label", "query_id"} and row["query_id"] == "testQ0"


def test_filtered_questions_follow_the_ref_files(tmp_path, shared_data):
    """The real qrels: 122 dev / 237 test questions (shared/data README), equal to the both-labels rule."""
    from modeling_disan.ranking import FILTERED_REFS, filtered_questions
    from modeling_disan.tasks import load_task

    splits = load_task("wikiqa", data_dir=shared_data)
    for split, expected in (("validation", 122), ("test", 237)):
        ids, labels = splits[split]["query_id"], splits[split]["label"]
        keep = filtered_questions(ids, labels, os.path.join(shared_data, FILTERED_REFS[split]))
        assert len(keep) == expected and keep == filtered_questions(ids, labels)


def test_wikiqa_training_reports_map_mrr_equal_to_brute_force(tmp_path):
    """train() on tiny WikiQA files with length-grouped batches: the reported MAP/MRR (filtered by the .ref files, and
    unfiltered) equal a brute-force computation over the saved model's scores in dataset order."""
    from transformers import AutoTokenizer

    from modeling_disan.tasks import load_task
    from modeling_disan.training import load_recipe, train

    write_tiny_wikiqa(tmp_path)
    recipe = load_recipe(os.path.join(os.path.dirname(os.path.dirname(__file__)), "configuration", "nti-wikiqa.json"))
    recipe["model"].update(embedding_dim=8, hidden_size=8, classifier_hidden_sizes=[8])
    recipe["training"].update(num_train_epochs=1, per_device_train_batch_size=8, per_device_eval_batch_size=4,
                              disable_tqdm=True)
    assert recipe["training"]["train_sampling_strategy"] == "group_by_length"  # eval batches are length-grouped too
    out = tmp_path / "run"
    results = train(recipe, str(out), data_dir=str(tmp_path), seed=1)
    model = AutoModelForSequenceClassification.from_pretrained(out).eval()
    tok = AutoTokenizer.from_pretrained(out)
    assert model.config.problem_type == "multi_label_classification" and model.config.num_labels == 1
    test = load_task("wikiqa", data_dir=str(tmp_path))["test"]
    with torch.no_grad():
        enc = tok(list(test["text"]), list(test["text_pair"]), padding=True, return_tensors="pt")
        scores = model(**enc).logits[:, 0].tolist()
    labels, ids = list(test["label"]), list(test["query_id"])
    mixed = {q for q in set(ids) if 0 < sum(l for l, x in zip(labels, ids) if x == q) < ids.count(q)}
    reported = results["metrics"]["test"]
    map_f, mrr_f, n_f = brute_force_map_mrr(scores, labels, ids, only=mixed)
    map_u, mrr_u, n_u = brute_force_map_mrr(scores, labels, ids)
    assert reported["test_num_queries"] == n_f == 4 and reported["test_num_queries_unfiltered"] == n_u == 6
    assert reported["test_map"] == pytest.approx(map_f, abs=1e-6)
    assert reported["test_mrr"] == pytest.approx(mrr_f, abs=1e-6)
    assert reported["test_map_unfiltered"] == pytest.approx(map_u, abs=1e-6)
    assert reported["test_mrr_unfiltered"] == pytest.approx(mrr_u, abs=1e-6)
    assert "eval_map" in [k for e in results["log_history"] for k in e]  # dev MAP selected the epoch
