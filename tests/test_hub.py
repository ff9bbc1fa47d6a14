"""Publishing and loading like any hub model, with no network (../shared/notes/hf-v5.md: intercepted hub client,
seeded offline cache, a fresh process that never imports modeling_disan)."""

from __future__ import annotations

import fnmatch
import json
import os
import subprocess
import sys
import textwrap
from types import SimpleNamespace

import pytest
import torch
from huggingface_hub import ModelCard
from huggingface_hub.errors import EntryNotFoundError
from transformers import AutoConfig, AutoModel, AutoModelForSequenceClassification, AutoTokenizer, pipeline

import modeling_disan
from modeling_disan.cards import render_card
from modeling_disan.hub import push_checkpoint

from conftest import tiny_config

FAMILIES = sorted(modeling_disan.FAMILIES)
COMMIT = "0123456789abcdef0123456789abcdef01234567"


class FakeHubApi:
    """Stands in for transformers.utils.hub._hf_api: records every file each commit would send."""

    def __init__(self):
        self.commits: list[tuple[str, dict[str, bytes]]] = []
        self.repos, self.branches = [], []

    def create_repo(self, repo_id, **kwargs):
        self.repos.append((repo_id, kwargs.get("private")))
        return SimpleNamespace(repo_id=repo_id)

    def create_branch(self, repo_id, branch, **kwargs):
        self.branches.append(branch)

    def create_commit(self, repo_id, operations, commit_message=None, **kwargs):
        files = {}
        for op in operations:
            source = op.path_or_fileobj
            files[op.path_in_repo] = open(source, "rb").read() if isinstance(source, (str, os.PathLike)) else source
        self.commits.append((commit_message, files))
        return SimpleNamespace(oid=COMMIT, commit_url=f"https://example.invalid/{repo_id}")

    def upload_folder(self, repo_id, folder_path, commit_message=None, ignore_patterns=None, **kwargs):
        files = {}
        for root, _, names in os.walk(folder_path):
            for name in names:
                rel = os.path.relpath(os.path.join(root, name), folder_path)
                if any(fnmatch.fnmatch(rel, p) or fnmatch.fnmatch(rel.split(os.sep)[0], p)
                       for p in (ignore_patterns or [])):
                    continue
                files[rel] = open(os.path.join(root, name), "rb").read()
        self.commits.append((commit_message, files))
        return SimpleNamespace(oid=COMMIT, commit_url="https://example.invalid")

    def sent(self) -> dict[str, bytes]:
        """Files of the repo after all commits (later commits overwrite earlier ones)."""
        repo = {}
        for _, files in self.commits:
            repo.update(files)
        return repo


@pytest.fixture
def fake_hub(monkeypatch):
    from transformers.utils import hub as transformers_hub

    api = FakeHubApi()
    monkeypatch.setattr(transformers_hub, "_hf_api", api)

    def no_card(*args, **kwargs):
        raise EntryNotFoundError("no card in the fake hub")

    monkeypatch.setattr(ModelCard, "load", no_card)
    return api


def checkpoint(tmp_path, tokenizer, family: str, pair: bool = True):
    fields = dict(vocab_size=len(tokenizer), num_labels=3, id2label={0: "entailment", 1: "neutral", 2: "contradiction"},
                  label2id={"entailment": 0, "neutral": 1, "contradiction": 2})
    if pair:
        fields["pair_features"] = "concat_absdiff_mul"
    model = AutoModelForSequenceClassification.from_config(tiny_config(family, **fields)).eval()
    path = tmp_path / f"{family}-ckpt"
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    results = {"name": f"{family}-tiny", "task": "snli", "seed": 1, "recipe": {"task": "snli", "model": {"model_type": family}},
               "metrics": {"test": {"test_accuracy": 0.5}}, "parameters": {"total": 1, "without_embeddings": 1},
               "paper_reference": {"metric": "accuracy", "value": 85.62, "unit": "%", "source": "Table 1"},
               "command": "scripts/train.py", "wall_time_seconds": 1.0}
    (path / "results.json").write_text(json.dumps(results))
    return model, path, results


def expected_code_files(family: str) -> set:
    return {f"configuration_{family}.py", f"modeling_{family}.py", "configuration_common.py", "modeling_common.py",
            "attention.py", "heads.py"}


@pytest.mark.parametrize("family", FAMILIES)
def test_push_sends_exactly_the_expected_files_and_card_last(tmp_path, tokenizer, fake_hub, family):
    _, path, results = checkpoint(tmp_path, tokenizer, family)
    card = tmp_path / "card" / "README.md"
    card.parent.mkdir()
    render_card(results).save(card)
    push_checkpoint(str(path), "someone/tiny", private=True, revision="v1", card_path=str(card))
    sent = fake_hub.sent()
    code = {f for f in sent if f.endswith(".py")}
    assert expected_code_files(family) <= code
    assert {"config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json", "README.md"} <= set(sent)
    assert set(sent) - code == {"config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json",
                                "README.md"}
    assert fake_hub.commits[-1][0] == "Upload model card" and set(fake_hub.commits[-1][1]) == {"README.md"}
    assert sent["README.md"] == card.read_bytes()
    config = json.loads(sent["config.json"])
    assert set(config["auto_map"]) == {"AutoConfig", "AutoModel", "AutoModelForSequenceClassification"}
    assert fake_hub.repos[0] == ("someone/tiny", True) and "v1" in fake_hub.branches
    parsed = ModelCard(sent["README.md"].decode())
    assert parsed.data.model_name == results["name"]
    assert parsed.data.eval_results[0].metric_type == "accuracy" and parsed.data.eval_results[0].metric_value == 0.5
    assert "85.62%" in parsed.text  # the paper's figure from the results file, beside ours


def test_push_refuses_before_uploading_when_the_card_is_missing(tmp_path, tokenizer, fake_hub):
    _, path, _ = checkpoint(tmp_path, tokenizer, "disan")
    with pytest.raises(FileNotFoundError, match="no model card at"):
        push_checkpoint(str(path), "someone/tiny", card_path=str(tmp_path / "missing.md"))
    assert fake_hub.commits == []


def seed_cache(hf_home, repo_id: str, files_dir) -> None:
    """The hub cache layout: models--user--name/refs/main -> commit, snapshots/<commit>/<files>."""
    repo = hf_home / "hub" / ("models--" + repo_id.replace("/", "--"))
    snapshot = repo / "snapshots" / COMMIT
    snapshot.mkdir(parents=True)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(COMMIT)
    for name in os.listdir(files_dir):
        if os.path.isfile(os.path.join(files_dir, name)):
            (snapshot / name).write_bytes(open(os.path.join(files_dir, name), "rb").read())


CHILD = textwrap.dedent("""
    import json, sys
    import torch
    from transformers import AutoModel, AutoModelForSequenceClassification, AutoTokenizer, pipeline
    repo = sys.argv[1]
    tok = AutoTokenizer.from_pretrained(repo, trust_remote_code=True)
    clf = AutoModelForSequenceClassification.from_pretrained(repo, trust_remote_code=True).eval()
    enc = AutoModel.from_pretrained(repo, trust_remote_code=True).eval()
    pair = tok(["Dogs run ."], ["A man is playing a guitar ."], return_tensors="pt")
    single = tok(["Dogs run ."], return_tensors="pt")
    with torch.no_grad():
        logits = clf(**pair).logits[0].tolist()
        pooled = enc(**single).pooler_output[0].tolist()
    out = pipeline("text-classification", model=clf, tokenizer=tok, trust_remote_code=True)(
        {"text": "Dogs run .", "text_pair": "A man ."})
    print(json.dumps({"logits": logits, "pooled": pooled, "pipeline": out,
                      "imported_package": "modeling_disan" in sys.modules,
                      "module": type(clf).__module__}))
""")


@pytest.mark.parametrize("family", FAMILIES)
def test_load_by_hub_id_offline_in_a_process_without_the_package(tmp_path, tokenizer, family):
    model, path, _ = checkpoint(tmp_path, tokenizer, family)
    hf_home = tmp_path / "hf_home"
    seed_cache(hf_home, "someone/tiny", path)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "PYTHON"))}
    env.update(HF_HOME=str(hf_home), HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    proc = subprocess.run([sys.executable, "-c", CHILD, "someone/tiny"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr[-3000:]
    child = json.loads(proc.stdout.strip().splitlines()[-1])
    assert child["imported_package"] is False and child["module"].startswith("transformers_modules")
    with torch.no_grad():
        logits = model(**tokenizer(["Dogs run ."], ["A man is playing a guitar ."], return_tensors="pt")).logits[0]
        pooled = getattr(model, model.base_model_prefix)(**tokenizer(["Dogs run ."], return_tensors="pt")).pooler_output[0]
    assert torch.allclose(torch.tensor(child["logits"]), logits, atol=1e-6)
    assert torch.allclose(torch.tensor(child["pooled"]), pooled, atol=1e-6)
    assert child["pipeline"]["label"] in {"entailment", "neutral", "contradiction"}


@pytest.mark.parametrize("family", FAMILIES)
def test_plain_save_pretrained_of_every_head_class_is_complete(tmp_path, family):
    for auto in (AutoModel, AutoModelForSequenceClassification):
        target = tmp_path / auto.__name__
        auto.from_config(tiny_config(family)).save_pretrained(target)
        files = set(os.listdir(target))
        assert expected_code_files(family) | {"config.json", "model.safetensors"} <= files
        config = json.loads((target / "config.json").read_text())
        assert set(config["auto_map"]) == {"AutoConfig", "AutoModel", "AutoModelForSequenceClassification"}


def test_single_sentence_pipeline_on_a_loaded_checkpoint(tmp_path, tokenizer):
    model, path, _ = checkpoint(tmp_path, tokenizer, "disan", pair=False)
    clf = pipeline("text-classification", model=str(path))
    out = clf("Dogs run .")
    assert out[0]["label"] in {"entailment", "neutral", "contradiction"}


def test_truncated_safetensors_gives_a_clear_error(tmp_path, tokenizer):
    _, path, _ = checkpoint(tmp_path, tokenizer, "disan")
    weights = path / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[: weights.stat().st_size // 2])
    with pytest.raises(ValueError, match=r"model.safetensors.*(corrupt|truncated)"):
        AutoModelForSequenceClassification.from_pretrained(path)


def test_unknown_architecture_and_model_type_give_clear_errors(tmp_path, tokenizer):
    _, path, _ = checkpoint(tmp_path, tokenizer, "disan")
    config = json.loads((path / "config.json").read_text())
    config["architectures"] = ["DiSANForTokenTagging"]
    (path / "config.json").write_text(json.dumps(config))
    for auto in (AutoModel, AutoModelForSequenceClassification):
        with pytest.raises(ValueError, match="architecture 'DiSANForTokenTagging'"):
            auto.from_pretrained(path)
    config["model_type"] = "disan_xl"
    config.pop("auto_map")
    (path / "config.json").write_text(json.dumps(config))
    with pytest.raises(ValueError, match="disan_xl"):
        AutoConfig.from_pretrained(path)


def test_missing_tokenizer_is_named(tmp_path, tokenizer):
    from modeling_disan.hub import load_checkpoint

    _, path, _ = checkpoint(tmp_path, tokenizer, "disan")
    os.remove(path / "tokenizer.json")
    with pytest.raises(FileNotFoundError, match="has no tokenizer"):
        load_checkpoint(str(path))
