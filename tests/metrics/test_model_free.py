"""Model-free ProcessBench baselines (prm_lessons.metrics.model_free) that see only the structure of a
case: the structure rule, its dev-F1 fit, cross-fitted predictions."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from prm_lessons.metrics import model_free as m_model_free
from prm_lessons.metrics import processbench as m_processbench

# ------------------------------------------------------------------------------ model-free baselines


def _structured_cases(texts: str = "step", seed: int = 0, per_stratum: int = 6):
    """Cases whose label is a function of (subset, n_steps): gsm8k 5 strata, omnimath 30 (> 16: coordinate
    ascent)."""
    def truth(sub, n):
        if sub == "gsm8k":
            return -1 if n % 2 == 0 else n // 2
        return 0 if n % 3 == 0 else (-1 if n % 3 == 1 else n - 1)

    rng = np.random.default_rng(seed)
    rows = []
    for sub, ns in (("gsm8k", range(1, 6)), ("omnimath", range(1, 31))):
        for n in ns:
            for k in range(per_stratum):
                rows.append({"id": f"{sub}-{n}-{k}", "subset": sub, "label": truth(sub, n),
                             "steps": [f"{texts} {rng.integers(1000)}" for _ in range(n)],
                             "generator": "g", "problem": f"p{k}"})
    return pd.DataFrame(rows).sample(frac=1.0, random_state=seed).reset_index(drop=True), truth


def test_structure_rule_recovers_a_rule_that_the_structure_determines():
    cases, truth = _structured_cases()
    view = m_model_free.structure_view(cases)
    rule = m_model_free.fit_structure_rule(view, cases["label"].tolist())
    assert rule == {(s, n): truth(s, n) for s, n in zip(view["subset"], view["n_steps"])}
    preds = m_model_free.baseline_predictions("structure", view, rule)
    assert m_processbench.processbench_metrics(cases, preds)["average_f1"] == 1.0
    # an unseen stratum predicts −1; the other baselines are constant
    unseen = pd.DataFrame({"id": ["u"], "subset": ["math"], "n_steps": [4]})
    assert m_model_free.baseline_predictions("structure", unseen, rule) == {"u": -1}
    assert set(m_model_free.baseline_predictions("always_correct", view).values()) == {-1}
    assert set(m_model_free.baseline_predictions("first_step", view).values()) == {0}
    with pytest.raises(ValueError, match="unknown ProcessBench baseline"):
        m_model_free.baseline_predictions("oracle", view)
    with pytest.raises(ValueError, match="needs a rule"):
        m_model_free.baseline_predictions("structure", view)


def test_structure_rule_maximises_dev_f1_when_the_structure_does_not_determine_the_label():
    """A stratum with 3 errors at step 1 and 1 correct case: predicting step 1 gains (F1 0 → 0.857);
    a stratum with 1 error and 3 correct is left at −1; ties go to the earliest step."""
    rows = ([("a", 3, 1)] * 3 + [("a", 3, -1)] + [("a", 4, 2)] + [("a", 4, -1)] * 3
            + [("a", 5, 0), ("a", 5, 4)] + [("a", 5, -1)] * 2)
    view = pd.DataFrame({"id": [str(k) for k in range(len(rows))], "subset": [r[0] for r in rows],
                         "n_steps": [r[1] for r in rows]})
    rule = m_model_free.fit_structure_rule(view, [r[2] for r in rows])
    preds = m_model_free.baseline_predictions("structure", view, rule)
    cases = view.assign(label=[r[2] for r in rows])
    best = m_processbench.processbench_metrics(cases, preds)["average_f1"]
    # exhaustive check over every rule on the three strata
    import itertools
    for p3, p4, p5 in itertools.product(range(-1, 3), range(-1, 4), range(-1, 5)):
        r = {("a", 3): p3, ("a", 4): p4, ("a", 5): p5}
        preds = m_model_free.baseline_predictions("structure", view, r)
        assert m_processbench.processbench_metrics(cases, preds)["average_f1"] <= best + 1e-12
    assert rule[("a", 3)] == 1 and rule[("a", 4)] == -1


def test_baselines_see_only_the_structure_never_the_text():
    cases, _ = _structured_cases(texts="step")
    other, _ = _structured_cases(texts="a completely different text", seed=0)
    other = other.assign(problem="another problem", generator="another model")
    view, view2 = m_model_free.structure_view(cases), m_model_free.structure_view(other)
    assert list(view.columns) == ["id", "subset", "n_steps"]
    pd.testing.assert_frame_equal(view, view2)
    rule = m_model_free.fit_structure_rule(view, cases["label"].tolist())
    assert rule == m_model_free.fit_structure_rule(view2, other["label"].tolist())
    for kind in m_model_free.BASELINE_KINDS:
        assert (m_model_free.baseline_predictions(kind, view, rule)
                == m_model_free.baseline_predictions(kind, view2, rule))
    # the functions refuse anything but the view: they cannot read steps or labels
    with pytest.raises(ValueError, match="structure_view"):
        m_model_free.baseline_predictions("structure", cases, rule)
    with pytest.raises(ValueError, match="structure_view"):
        m_model_free.fit_structure_rule(view.assign(steps=cases["steps"]), cases["label"].tolist())
    with pytest.raises(ValueError, match="structure_view"):
        m_model_free.crossfit_structure_predictions(cases, cases["label"].tolist())


def test_crossfit_structure_predictions_use_the_other_folds_rule():
    cases, truth = _structured_cases()
    view = m_model_free.structure_view(cases)
    labels = cases["label"].tolist()
    preds, records = m_model_free.crossfit_structure_predictions(view, labels)
    json.dumps(records)  # JSON-ready for the metrics file
    folds = m_processbench.crossfit_folds(view["id"], view["subset"], labels)
    rules = {k: {(r["subset"], r["n_steps"]): r["prediction"] for r in records if r["fitted_on_fold"] == k}
             for k in (0, 1)}
    for i, s, n, f in zip(view["id"], view["subset"], view["n_steps"], folds):
        assert preds[i] == rules[1 - f].get((s, n), -1)
    # where the fitting fold saw the stratum, the rule is recovered; unseen strata predict −1
    for i, s, n, f in zip(view["id"], view["subset"], view["n_steps"], folds):
        assert preds[i] == (truth(s, n) if (s, n) in rules[1 - f] else -1)
    assert sum((s, n) in rules[1 - f] for s, n, f in zip(view["subset"], view["n_steps"], folds)) > 0.8 * len(view)
