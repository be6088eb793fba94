"""config/paper.yaml scores every released PRM the paper tabulates, the paper's own Qwen2.5-Math-7B-PRM800K
included, each mapped to the paper row it is."""
from pathlib import Path

from prm_lessons import plan
from prm_lessons.artifacts.published import load_published
from prm_lessons.config import load_config

ROOT = Path(__file__).resolve().parents[2]


def test_paper_plan_scores_the_released_prm800k_model_as_the_papers_row():
    cfg = load_config(ROOT / "config/paper.yaml")
    specs = plan.resolve_prm_specs(cfg)
    spec = specs["qwen25_math_7b_prm800k"]
    assert spec["adapter"] == "qwen_prm"
    assert cfg["models"]["qwen25_math_7b_prm800k"]["id"] == "Qwen/Qwen2.5-Math-7B-PRM800K"
    assert cfg["analysis"]["paper_rows"]["qwen25_math_7b_prm800k"] == "human"
    assert "human" in specs   # the PRM trained here on PRM800K stays beside it
    # every released PRM row of Table 6 has a scorer in the paper plan (trained rows: the variants)
    pub = load_published()
    rows = {r["key"] for r in pub["tables"]["table6"]["rows"]} - {"pass", "maj"}
    keys = {cfg["analysis"]["paper_rows"].get(n, n) for n in specs}
    assert rows <= keys, rows - keys
    # Table 7: every row is a scored PRM, a critic of the plan, or shown as the paper's only (GPT-4o, o1-mini)
    critics = {cfg["analysis"]["paper_rows"].get(f"critic-{c}", c) for c in cfg["critics"]["judges"]}
    t7 = {r["key"] for r in pub["tables"]["table7"]["rows"]}
    only = set(pub["tables"]["table7"]["published_only"])
    assert t7 - keys - critics == only
