"""Adapter token_classification (TRL / axolotl PRMs): random-weight token-classification models of two
architectures with the real tokenizers of their families (prm_lessons.rehearsal.tokenizers), saved to a
directory and scored through the project's loader; the scores are checked against a hand computation with
transformers on the input TRL's PRMTrainer.tokenize_row builds. Config errors name the key; the PRM enters a
dry run of the embedded workflow through an overlay alone (tests/workflow/test_prm_by_config.py)."""
from __future__ import annotations

import functools

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from conftest import ROOT  # noqa: E402
from prm_lessons.config import ConfigError, load_config  # noqa: E402
from prm_lessons.rehearsal import tokenizers as T  # noqa: E402
from prm_lessons.scoring.batch import score_responses  # noqa: E402
from prm_lessons.scoring.load import load_adapter  # noqa: E402

QUESTIONS = ["Janet has 16 eggs. She eats 3. How many are left?", "What is 2 + 3 * 4?"]
STEPS = [["She starts with 16 eggs.", "She eats 3, so $16 - 3 = 13$.", "The answer is $\\boxed{13}$."],
         ["First 3 * 4 = 12.", "Then 2 + 12 = 14, so the answer is 14."]]
ARCHS = {"qwen2": transformers.Qwen2Config, "llama3": transformers.LlamaConfig}  # Llama 3: a tokenizer with BOS


@functools.lru_cache(maxsize=None)
def _tokenizer(family: str):
    return T.build_tokenizer(family)


def _save_prm(path, family: str, num_labels: int = 2, seed: int = 0):
    """A random-weight <Arch>ForTokenClassification with `num_labels` labels + the family's tokenizer files."""
    tok = _tokenizer(family)
    torch.manual_seed(seed)
    cfg = ARCHS[family](vocab_size=len(tok), hidden_size=16, intermediate_size=32, num_hidden_layers=2,
                        num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=1024,
                        num_labels=num_labels, pad_token_id=tok.pad_token_id if tok.pad_token_id is not None else 0)
    model = transformers.AutoModelForTokenClassification.from_config(cfg)
    model.save_pretrained(path)
    T.save_tokenizer(family, path)
    return path


@pytest.fixture(scope="module")
def prm_dir(tmp_path_factory):
    """(family, num_labels) -> a saved PRM directory, each built once per module."""
    made = {}

    def get(family: str, num_labels: int = 2):
        if (family, num_labels) not in made:
            made[family, num_labels] = _save_prm(tmp_path_factory.mktemp(f"{family}-{num_labels}"), family,
                                                 num_labels, seed=num_labels)
        return made[family, num_labels]

    return get


def _reference(path):
    """The saved PRM loaded with transformers directly (the class its config.json names), in float32."""
    return transformers.AutoModelForTokenClassification.from_pretrained(path, dtype=torch.float32).eval()


def _trl_ids(tok, question: str, steps: list[str], separator: str) -> tuple[list[int], list[int]]:
    """The input ids TRL's PRMTrainer.tokenize_row builds for (prompt, completions) and the indices of its
    labels (the tokens whose label is not -100): BOS if any, prompt ids, each completion's ids + the
    separator's ids, the label on each completion's last token."""
    ids = [tok.bos_token_id] if tok.bos_token_id is not None else []
    ids += tok(question, add_special_tokens=False)["input_ids"]
    labelled = []
    for s in steps:
        ids += tok(s, add_special_tokens=False)["input_ids"] + tok.encode(separator, add_special_tokens=False)
        labelled.append(len(ids) - 1)
    return ids, labelled


@pytest.mark.parametrize("family", sorted(ARCHS))
# " <step>\n" is several tokens: the score sits on the last one, where TRL puts the label
@pytest.mark.parametrize("separator", ["\n", "\n\n", " <step>\n"])
def test_scores_are_softmax_label_1_at_trl_step_ends(prm_dir, family, separator):
    path = prm_dir(family)
    a = load_adapter({"adapter": "token_classification", "path": str(path), "dtype": "float32",
                      "params": {"step_separator": separator}})
    got = score_responses(a, QUESTIONS, STEPS)  # one batch of two lengths: right padding
    model, tok = _reference(path), _tokenizer(family)
    assert (tok.bos_token_id is not None) == (family == "llama3")
    for q, steps, scores in zip(QUESTIONS, STEPS, got):
        ids, labelled = _trl_ids(tok, q, steps, separator)
        assert a.encode(q, steps).input_ids == ids
        with torch.no_grad():
            probs = model(input_ids=torch.tensor([ids])).logits.softmax(-1)[0, labelled, 1].tolist()
        assert len(scores) == len(steps)
        assert scores == pytest.approx(probs, abs=1e-5)
    sep_ids = tok.encode(separator, add_special_tokens=False)
    assert (len(sep_ids) > 1) == (separator == " <step>\n")
    info = a.token_info()
    assert info["separator_ids"] == sep_ids and info["step_tag_id"] == sep_ids[-1]
    assert (info["positive_label"], info["score"]) == (1, "softmax")


def test_sigmoid_of_a_one_label_head_and_the_other_label(prm_dir):
    one = prm_dir("qwen2", 1)
    a = load_adapter({"adapter": "token_classification", "path": str(one), "dtype": "float32",
                      "params": {"positive_label": 0, "score": "sigmoid"}})
    ids, labelled = _trl_ids(_tokenizer("qwen2"), QUESTIONS[0], STEPS[0], "\n")
    with torch.no_grad():
        want = _reference(one)(input_ids=torch.tensor([ids])).logits[0, labelled, 0].sigmoid().tolist()
    assert score_responses(a, QUESTIONS[:1], STEPS[:1])[0] == pytest.approx(want, abs=1e-5)
    # a head whose "correct" label is 0: softmax index 0 = 1 - index 1
    spec = {"adapter": "token_classification", "path": str(prm_dir("qwen2")), "dtype": "float32", "params": {}}
    p1 = score_responses(load_adapter(spec), QUESTIONS, STEPS)
    p0 = score_responses(load_adapter({**spec, "params": {"positive_label": 0}}), QUESTIONS, STEPS)
    for a1, a0 in zip(p1, p0):
        assert [x + y for x, y in zip(a1, a0)] == pytest.approx([1.0] * len(a1), abs=1e-6)
        assert a1 != pytest.approx(a0, abs=1e-3)


def test_truncation_keeps_whole_leading_steps(prm_dir):
    path = prm_dir("qwen2")
    a = load_adapter({"adapter": "token_classification", "path": str(path), "dtype": "float32", "params": {}})
    full = score_responses(a, QUESTIONS[:1], STEPS[:1])[0]
    enc = a.encode(QUESTIONS[0], STEPS[0])
    cut = load_adapter({"adapter": "token_classification", "path": str(path), "dtype": "float32",
                        "max_length": enc.positions[1] + 1, "params": {}})
    assert score_responses(cut, QUESTIONS[:1], STEPS[:1])[0] == pytest.approx(full[:2], abs=1e-5)


def test_label_index_the_checkpoint_lacks_fails_when_loaded(prm_dir):
    """A Hub model's labels are known only once downloaded: the scoring job's loader names the key."""
    with pytest.raises(ValueError, match=r"params\.positive_label: 2 .*num_labels 2"):
        load_adapter({"adapter": "token_classification", "path": str(prm_dir("qwen2")), "dtype": "float32",
                      "params": {"positive_label": 2}})
    with pytest.raises(ValueError, match=r"params\.score: softmax over a 1-label head"):
        load_adapter({"adapter": "token_classification", "path": str(prm_dir("qwen2", 1)), "dtype": "float32",
                      "params": {"positive_label": 0}})


def _overlay(model_dir, **params) -> dict:
    entry = {"adapter": "token_classification", "model": "tc_model", "label": "TRL-PRM"}
    if params:
        entry["params"] = params
    return {"models": {"tc_model": {"source": "local", "id": str(model_dir), "dtype": "float32"}},
            "prms": {"models": {"trl_prm": entry}}}


@pytest.fixture(scope="module")
def local_prm(prm_dir):
    return prm_dir("qwen2")


@pytest.mark.parametrize("params, key", [
    ({"positive_label": 2}, "prms.models.trl_prm.params.positive_label"),  # the local checkpoint has 2 labels
    ({"positive_label": -1}, "prms.models.trl_prm.params.positive_label"),
    ({"positive_label": "1"}, "prms.models.trl_prm.params.positive_label"),
    ({"score": "tanh"}, "prms.models.trl_prm.params.score"),
    ({"step_separator": ""}, "prms.models.trl_prm.params.step_separator"),
    ({"step_sep": "\n"}, "prms.models.trl_prm.params.step_sep"),
])
def test_bad_option_fails_naming_the_key(local_prm, params, key):
    with pytest.raises(ConfigError) as e:
        load_config(ROOT / "config/config.yaml", overrides=_overlay(local_prm, **params))
    assert f"`{key}`" in str(e.value)


def test_defaults_fill_the_spec_params(local_prm):
    from prm_lessons.plan import resolve_prm_specs

    cfg = load_config(ROOT / "config/config.yaml", overrides=_overlay(local_prm))
    spec = resolve_prm_specs(cfg)["trl_prm"]
    assert spec["params"] == {"step_separator": "\n", "positive_label": 1, "score": "softmax"}
    assert spec["adapter"] == "token_classification" and spec["path"] == str(local_prm)
    # the other entries keep params as they were (no token_classification defaults leak into them)
    base = resolve_prm_specs(load_config(ROOT / "config/config.yaml"))
    assert all(resolve_prm_specs(cfg)[n] == s for n, s in base.items())


def test_search_rescores_candidates_with_their_prefix(prm_dir):
    """PRM-guided search (search.prms) takes the PRM too: each candidate's score is its last step's score
    as a whole response (no incremental KV-cache path for this adapter)."""
    from prm_lessons.evaluation.search_scorers import FullRescoringScorer, candidate_scorer

    a = load_adapter({"adapter": "token_classification", "path": str(prm_dir("qwen2")), "dtype": "float32",
                      "params": {}})
    scorer = candidate_scorer(a)
    assert isinstance(scorer, FullRescoringScorer)
    prefix, cands = STEPS[0][:1], STEPS[0][1:]
    got = scorer.score([("k", QUESTIONS[0], prefix, cands)])[0]
    want = [score_responses(a, QUESTIONS[:1], [prefix + [c]])[0][-1] for c in cands]
    assert got == pytest.approx(want, abs=1e-6)
