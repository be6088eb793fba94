"""The model card a trained PRM directory gets from the training rule (prm_lessons.training.model_card): its content
(base, training set and how its labels were made, sizes, hyperparameters, where the evaluation is, how to load
it: no misleading pipeline_tag, the loading code that works for its layout), and
that its stand-alone code (transformers + safetensors only) and the LoRA PRM's PEFT adapter give the scores
`load_prm` gives, for every layout: head-only, LoRA (project layout), full fine-tuning of a Qwen2 base
(released layout)."""
from __future__ import annotations

import json
import re

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from _prm_tiny import score_steps, signal_rows, tiny_base  # noqa: E402
from prm_lessons.models import prm as P  # noqa: E402
from prm_lessons.rules import training as rules_training  # noqa: E402
from prm_lessons.tables import write_table  # noqa: E402
from prm_lessons.training import model_card as MC  # noqa: E402
from prm_lessons.training import train as T  # noqa: E402

FAST = {"epochs": 2, "batch_size": 4, "learning_rate": 3e-3, "save_steps": 0, "max_length": 256, "logging_steps": 1,
        "precision": "fp32"}
BASE = {"name": "policy", "source": "hub", "id": "Qwen/Qwen2.5-Math-7B-Instruct", "revision": "a" * 40}
SPEC = {"source": "mc", "label_type": "hard", "threshold": 0.0, "datasets": ["math_train"]}


@pytest.fixture(scope="module")
def trainset(tmp_path_factory):
    import pandas as pd

    path = tmp_path_factory.mktemp("ts") / "mc_hard.parquet"
    write_table(pd.DataFrame(signal_rows(12)), path, "trainset",
                meta={"variant": "mc_hard", "spec": SPEC, "stats": {"n_instances": 12}})
    return path


def _train(root, trainset, mode, arch="llama"):
    """The training rule's function on a tiny base: the PRM directory with its card."""
    base = tiny_base(root / "base", with_step_token=arch == "qwen2", arch=arch)
    out = root / "results" / "prms" / "mc_hard"
    rules_training.train_prm(inputs={"trainset": str(trainset)},
                             outputs={"model": str(out), "metrics": str(out / T.METRICS_FILE)},
                             params={"base_dir": str(base), "training": {**FAST, "mode": mode}, "label_type": "hard",
                                     "checkpoint_dir": str(root / "ck"), "base_model": BASE},
                             wildcards={"variant": "mc_hard"}, threads=1)
    return out, base


@pytest.fixture(scope="module")
def prms(tmp_path_factory, trainset):
    made = {}

    def get(mode, arch="llama"):
        if (mode, arch) not in made:
            made[mode, arch] = _train(tmp_path_factory.mktemp(f"{mode}-{arch}"), trainset, mode, arch)
        return made[mode, arch]

    return get


def _card_code(card: str) -> str:
    blocks = re.findall(r"```python\n(.*?)```", card, re.S)
    return blocks[0]


def _rows():
    return [(r["question"], r["steps"]) for r in signal_rows(3, seed=9)]


@pytest.mark.parametrize("mode,arch,layout", [("head", "llama", "project"), ("lora", "llama", "project"),
                                              ("full", "qwen2", "released")])
def test_card_content_and_its_code_scores_as_load_prm(prms, mode, arch, layout):
    out, _ = prms(mode, arch)
    card = (out / MC.CARD_FILE).read_text()
    metrics = json.loads((out / T.METRICS_FILE).read_text())
    assert metrics["layout"] == layout
    front = card.split("---")[1]
    assert "base_model: Qwen/Qwen2.5-Math-7B-Instruct" in front and "process-reward-model" in front
    assert "pipeline_tag" not in front  # no transformers pipeline runs the step head (test below)
    for needle in (f"revision `{'a' * 40}`", "| training set | `mc_hard` |",
                   "| label source | `mc`: Monte Carlo estimation", "correct iff mc_value > 0)",
                   "| problem sets | math_train |",
                   f"| instances (rows) | {metrics['data']['instances']} |",
                   f"| steps trained on | {metrics['data']['steps_used']} |", f"| mode | {mode} |",
                   "| learning_rate | 0.003 |", f"| directory layout | {layout} |",
                   "results/metrics/processbench/mc_hard.json", "results/tables/table7_processbench_main.csv",
                   "prm-lessons score --prm"):
        assert needle in card, needle
    assert ("step accuracy on its training steps" in card) == (mode == "head")
    assert ("vLLM serves it" in card) == (layout == "released")
    assert ("lora target modules" in card) == (mode == "lora")
    # the card's stand-alone code, run as written (only the path filled in), against the project's loader
    ns: dict = {}
    exec(_card_code(card).replace("PATH/TO/THIS/DIRECTORY", str(out)), ns)
    model, tok, fmt = P.load_prm(out, dtype=torch.float32)
    want = score_steps(model, tok, fmt, _rows())
    for (q, steps), w in zip(_rows(), want):
        assert ns["step_scores"](q, steps) == pytest.approx(w, abs=1e-4)


@pytest.mark.parametrize("mode,arch,layout", [("head", "llama", "project"), ("full", "qwen2", "released")])
def test_card_names_no_pipeline_and_the_loading_code_that_works(prms, mode, arch, layout):
    from transformers import AutoModelForTokenClassification

    out, _ = prms(mode, arch)
    card = (out / MC.CARD_FILE).read_text()
    assert "pipeline_tag" not in card.split("---")[1] and "No transformers pipeline scores with it" in card
    assert "prm_lessons.models.prm.load_prm" in card
    # what a token-classification tag would load: the body with a new classifier, none of the trained head
    _, info = AutoModelForTokenClassification.from_pretrained(out, output_loading_info=True)
    assert "score.weight" in info["missing_keys"], info
    # the released layout: upstream's trust_remote_code route is named and said not to apply (no remote code here)
    assert ("trust_remote_code=True" in card and "does not apply here" in card) == (layout == "released")
    assert ("this project's layout" in card) == (layout == "project")
    assert not list(out.glob("*.py")) and "auto_map" not in json.loads((out / "config.json").read_text())


def test_label_source_names_how_each_source_made_its_labels():
    import typing

    from prm_lessons.config.model_labels import TrainsetsVariantsEntry

    sources = typing.get_args(TrainsetsVariantsEntry.model_fields["source"].annotation)
    assert set(MC.SOURCE_LABELS) == set(sources)  # a new source needs its sentence here
    assert MC.label_source({"source": "judge"}).startswith("`judge`: LLM-as-a-judge")
    assert "soft labels" in MC.label_source({"source": "consensus", "label_type": "soft"})
    assert "exact step truth of the constructed" in MC.label_source({"source": "exact"})
    assert MC.label_source({"source": "human"}) == "`human`: human annotation: PRM800K's step ratings"
    trl = MC.label_source({"source": "trl", "trl": {"source": "hub", "id": "trl-lib/prm800k", "revision": "b" * 40}})
    assert "TRL's stepwise-supervision format" in trl and f"`trl-lib/prm800k` at revision `{'b' * 40}`" in trl
    assert "the file `my.jsonl`" in MC.label_source({"source": "trl", "trl": {"source": "local", "path": "my.jsonl"}})


def test_lora_adapter_loads_with_peft_as_the_merged_body(prms):
    from peft import PeftModel
    from transformers import AutoModel, AutoTokenizer

    out, base_dir = prms("lora")
    card = (out / MC.CARD_FILE).read_text()
    assert (out / T.LORA_DIR / "adapter_config.json").exists() and "PeftModel.from_pretrained" in card
    assert "resize the base's embeddings to `len(tok)`" in card  # this base lacked <extra_0>
    tok = AutoTokenizer.from_pretrained(out)
    base = AutoModel.from_pretrained(base_dir, dtype=torch.float32)
    base.resize_token_embeddings(len(tok))  # training added <extra_0> to this base (the card says so)
    body = PeftModel.from_pretrained(base, out / T.LORA_DIR).eval()
    merged = AutoModel.from_pretrained(out, dtype=torch.float32).eval()
    ids = torch.tensor([tok("What is 2 + 3? <extra_0> 5 <extra_0>")["input_ids"]])
    with torch.no_grad():
        a, b = body(input_ids=ids).last_hidden_state, merged(input_ids=ids).last_hidden_state
    assert torch.allclose(a, b, atol=1e-4)


def test_card_with_evaluation_metrics(prms):
    out, _ = prms("head")
    metrics = json.loads((out / T.METRICS_FILE).read_text())
    pb = {"subsets": {"gsm8k": {"f1": 0.5}, "math": {"f1": 0.25}}, "average_f1": 0.375, "threshold": 0.5,
          "threshold_policy": "fixed"}
    bon = {"average": {"prm_product": 0.6, "maj": 0.55, "n_benchmarks": 2}}
    card = MC.render_card(out, metrics, name="org/mc_hard", base=None, evaluation={"processbench": pb, "bon": bon})
    assert "| **average** | **37.5** |" in card and "| gsm8k | 50.0 |" in card and "| prm_product | 60.0 |" in card
    assert "Not evaluated" not in card and "base_model:" not in card
    assert "prm-lessons score --prm org/mc_hard" in card


def test_file_names_are_the_prm_directory_s():
    # model_card stays torch-free, so it names the files models/prm.py writes instead of importing them
    assert (MC.FORMAT_FILE, MC.HEAD_FILE) == (P.FORMAT_FILE, P.HEAD_FILE) and T.LORA_DIR == MC.LORA_DIR
