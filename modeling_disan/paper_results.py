"""Published figures the papers report, by (model family, task), with the table each comes from.

Training and benchmark results files copy the matching entry, so that a model card (which may only show numbers
from its results file) can put the paper's figure beside ours. Values are percentages for accuracy, raw values for
correlation/MSE/MAP/MRR, exactly as printed in the papers (see ../shared/specs/<family>.md §5).
"""

from __future__ import annotations

PAPER_RESULTS: dict[tuple[str, str], dict] = {
    ("disan", "trec"): {"metric": "accuracy", "value": 94.4, "unit": "%",
                        "source": "Shen et al. (AAAI 2018), Table 5 (arXiv v3 Table 5: 94.2 ± 0.1, mean of 5 runs)"},
    ("disan", "sst5"): {"metric": "accuracy", "value": 51.72, "unit": "%", "source": "Shen et al. (AAAI 2018), Table 2"},
    ("disan", "snli"): {"metric": "accuracy", "value": 85.62, "unit": "%",
                        "source": "Shen et al. (arXiv v3), Table 1 (AAAI: 85.57)"},
    ("disan", "multinli"): {"metric": "accuracy", "value": 70.977, "unit": "%",
                            "source": "Shen et al. (AAAI 2018), Table 6, matched test (Kaggle)"},
    ("disan", "sick"): {"metric": "pearson", "value": 0.8695, "unit": "",
                        "source": "Shen et al. (arXiv v3), Table 4, mean of 5 runs (Spearman 0.8139, MSE 0.2879)"},
    ("disan", "cr"): {"metric": "accuracy", "value": 84.8, "unit": "%", "source": "Shen et al. (arXiv v3), Table 5"},
    ("disan", "mpqa"): {"metric": "accuracy", "value": 90.1, "unit": "%", "source": "Shen et al. (arXiv v3), Table 5"},
    ("disan", "subj"): {"metric": "accuracy", "value": 94.2, "unit": "%", "source": "Shen et al. (arXiv v3), Table 5"},
    ("distance_san", "snli"): {"metric": "accuracy", "value": 86.3, "unit": "%", "source": "Im & Cho (2017), Table 1"},
    ("dsa", "snli"): {"metric": "accuracy", "value": 86.8, "unit": "%",
                      "source": "Yoon et al. (2018), Table 1, single DSA (multiple DSA: 87.4)"},
    ("dsa", "sst2"): {"metric": "accuracy", "value": 88.5, "unit": "%", "source": "Yoon et al. (2018), Table 2"},
    ("dsa", "sst5"): {"metric": "accuracy", "value": 50.6, "unit": "%", "source": "Yoon et al. (2018), Table 2"},
    ("nti", "snli"): {"metric": "accuracy", "value": 83.4, "unit": "%",
                      "source": "Munkhdalai & Yu (EACL 2017), Table 1, NTI-SLSTM-LSTM"},
    ("nti", "sst2"): {"metric": "accuracy", "value": 89.3, "unit": "%",
                      "source": "Munkhdalai & Yu (EACL 2017), Table 3, NTI-SLSTM-LSTM"},
    ("nti", "sst5"): {"metric": "accuracy", "value": 53.1, "unit": "%",
                      "source": "Munkhdalai & Yu (EACL 2017), Table 3, NTI-SLSTM-LSTM"},
    ("nti", "wikiqa"): {"metric": "map", "value": 0.6742, "unit": "",
                        "source": "Munkhdalai & Yu (EACL 2017), Table 2 (MRR 0.6884)"},
}

# DiSAN ablation baselines (variant names from modeling_disan.benchmark.variant_name)
_ABLATION_SST5 = {"no_directions": 49.41, "bilstm_s2t": 49.95, "multihead_s2t": 49.14, "word_s2t": 48.87,
                  "word_additive": 47.47}
for _variant, _value in _ABLATION_SST5.items():
    PAPER_RESULTS[(f"disan:{_variant}", "sst5")] = {
        "metric": "accuracy", "value": _value, "unit": "%", "source": "Shen et al. (arXiv v3), Table 2 ablation"}
_ABLATION_SNLI = {"no_directions": 84.66, "bilstm_s2t": 84.98, "multihead_s2t": 84.17, "word_s2t": 83.12,
                  "word_additive": 79.81}
for _variant, _value in _ABLATION_SNLI.items():
    PAPER_RESULTS[(f"disan:{_variant}", "snli")] = {
        "metric": "accuracy", "value": _value, "unit": "%", "source": "Shen et al. (arXiv v3), Table 1 ablation"}

# Kim (2014) CNN-rand, Table 2: the published random-embedding reference for sentence classification
CNN_RAND = {task: {"metric": "accuracy", "value": value, "unit": "%", "source": "Kim (2014), Table 2, CNN-rand"}
            for task, value in {"trec": 91.2, "sst5": 45.0, "sst2": 82.7, "subj": 89.6, "cr": 79.8,
                                "mpqa": 83.4}.items()}


def paper_reference(model_type: str, task: str) -> dict | None:
    """The paper's figure for this family (or ``family:variant``) and task, or None when the paper reports none."""
    entry = PAPER_RESULTS.get((model_type, task))
    return dict(entry) if entry else None


__all__ = ["PAPER_RESULTS", "CNN_RAND", "paper_reference"]
