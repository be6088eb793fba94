"""The data rule on the paper plan: a cell of Tables 3/4 built from the paper's own MC-labelled data (the
860k rows: mc_hard, judge) is compared (Δ printed) only where the run's data policy produced that set
(config `data_policies`: Qwen2-Math-Instruct responses, Qwen2.5-Math-Instruct completions) and its training
set has the published size; otherwise the published number is shown, not compared. Every such table gets
a "# samples" column and a provenance note."""
from __future__ import annotations

import copy
import json
from pathlib import Path

import pandas as pd
import pytest

from analysis_synth import BON7, processbench_frame
from prm_lessons import plan
from prm_lessons.artifacts.cells import data_source_matches
from prm_lessons.artifacts.defs import table1_preliminary_bon as T1
from prm_lessons.artifacts.defs import table3_data_sources_bon as T3
from prm_lessons.artifacts.defs import table4_data_sources_processbench as T4
from prm_lessons.artifacts.published import load_published
from prm_lessons.artifacts.registry import ARTIFACT_PARAMS
from prm_lessons.config import load_config, validate_config

ROOT = Path(__file__).resolve().parents[2]
PRMS = ("mc_hard", "judge", "human")
PAPER_SIZES = {"mc_hard": 860_000, "judge": 858_000, "human": 264_000}
# MATH train x 8 samples, about what config/paper.yaml builds
PROJECT_SIZES = {"mc_hard": 59_800, "judge": 59_100, "human": 264_000}


@pytest.fixture(scope="module")
def paper_cfg():
    return load_config(ROOT / "config/paper.yaml")


def _params(cfg: dict, aid: str) -> dict:
    s = plan.analysis_settings(cfg)
    return {**{k: s[k] for k in ARTIFACT_PARAMS[aid]}, "run": {"name": "test", "label": "data rule test"}}


def _inputs(tmp_path: Path, sizes: dict) -> dict:
    rows = [dict(prm=p, benchmark=b, metric=m, n=8, accuracy=0.5, ci_low=0.49, ci_high=0.51)
            for p in PRMS for b in BON7 + ["average"] for m in ("pass", "maj", "prm_product", "prm_min", "prm_last")]
    pd.DataFrame(rows).to_csv(tmp_path / "bon.csv", index=False)
    processbench_frame(list(PRMS), subsets=("gsm8k", "math", "olympiadbench", "omnimath")).to_csv(
        tmp_path / "processbench.csv", index=False)
    pd.DataFrame({"variant": list(sizes), "n_instances": list(sizes.values())}).to_csv(
        tmp_path / "trainsets.csv", index=False)
    return {"bon": str(tmp_path / "bon.csv"), "processbench": str(tmp_path / "processbench.csv"),
            "trainsets": str(tmp_path / "trainsets.csv")}


def _run(module, aid: str, cfg: dict, tmp_path: Path, sizes: dict) -> tuple[pd.DataFrame, str]:
    out = {"csv": str(tmp_path / f"{aid}.csv"), "provenance": str(tmp_path / f"{aid}.json"),
           "tex": str(tmp_path / f"{aid}.tex")}
    module.run(inputs=_inputs(tmp_path, sizes), outputs=out, params=_params(cfg, aid), wildcards={}, threads=1)
    return pd.read_csv(out["csv"]), Path(out["tex"]).read_text()


def _compared(cells: pd.DataFrame) -> dict[str, bool]:
    """Row → whether any of its cells carries a Δ."""
    return {r: bool(g["diff"].notna().any()) for r, g in cells.groupby("row")}


@pytest.mark.parametrize("module,aid", [(T3, "table3"), (T4, "table4")])
def test_paper_plan_compares_mc_rows_only_at_the_published_source_and_size(paper_cfg, tmp_path, module, aid):
    # the paper plan's data policy is the paper's source, but its ~60k responses are not the 860k set
    assert plan.data_setting(paper_cfg)["model_id"] == "Qwen/Qwen2-Math-7B-Instruct"
    cells, tex = _run(module, aid, paper_cfg, tmp_path, PROJECT_SIZES)
    got = _compared(cells)
    assert not got["mc_hard"] and not got["judge"]
    assert got["human"]   # the released PRM800K: not built from the paper's MC data
    mc = cells[cells["row"] == "mc_hard"]
    assert mc["published"].notna().all() and not mc["comparable"].any()      # shown, not compared
    assert (mc["n_samples"] == 59_800).all() and (mc["paper_n_samples"] == 860_000).all()
    assert r"\# samples" in tex and "Qwen/Qwen2-Math-7B-Instruct responses" in tex and "60k (paper 860k)" in tex

    # the published size and source: the 860k rows are compared
    cells, _ = _run(module, aid, paper_cfg, tmp_path, PAPER_SIZES)
    got = _compared(cells)
    assert got["mc_hard"] and got["judge"] and got["human"]


def test_the_best_of_n_policy_labelling_its_own_responses_is_never_the_860k_set(paper_cfg, tmp_path):
    # without data_policies the Best-of-N policy (Qwen2.5-Math-7B-Instruct) samples the training problems:
    # not the paper's source, whatever the size
    cfg = copy.deepcopy(paper_cfg)
    cfg["data_policies"] = {}
    cfg = validate_config(cfg)
    setting = plan.data_setting(cfg)
    assert not setting["configured"] and setting["model_id"] == "Qwen/Qwen2.5-Math-7B-Instruct"
    cells, tex = _run(T3, "table3", cfg, tmp_path, PAPER_SIZES)
    got = _compared(cells)
    assert not got["mc_hard"] and not got["judge"] and got["human"]
    assert "does not match the paper's 860k set" in tex


def test_the_paper_plan_samples_training_problems_with_the_data_policy(paper_cfg):
    train, bench = next(iter(paper_cfg["problems"])), next(iter(paper_cfg["benchmarks"]))
    s = plan.sampler(paper_cfg, train)
    assert s["model"] == "qwen2_math_7b_instruct" and s["sampling"]["temperature"] == 1.0
    assert plan.sampler(paper_cfg, bench)["model"] == "qwen25_math_7b_instruct"
    assert plan.mc_completer(paper_cfg) == "qwen25_math_7b_instruct"
    # embedded default: the primary samples everything and roles.completer completes
    emb = load_config(ROOT / "config/config.yaml")
    primary = plan.primary_policy(emb)
    assert plan.sampler(emb, next(iter(emb["problems"])))["model"] == plan.bon_policies(emb)[primary]["model"]
    assert plan.mc_completer(emb) == plan.role_model(emb, "completer")


def test_data_policies_name_known_models(paper_cfg):
    from prm_lessons.config import ConfigError

    bad = copy.deepcopy(paper_cfg)
    bad["data_policies"] = {"x": {"model": "nope", "completer": "qwen25_math_7b_instruct"}}
    with pytest.raises(ConfigError, match=r"data_policies\.x\.model"):
        validate_config(bad)
    bad["data_policies"] = {"x": {"model": "qwen2_math_7b_instruct", "completer": "nope"}}
    with pytest.raises(ConfigError, match=r"data_policies\.x\.completer"):
        validate_config(bad)


# ---------------------------------------------------------------- the 3M mix (config/paper_3m.yaml)

@pytest.fixture(scope="module")
def mix_cfg():
    return load_config(ROOT / "config/paper.yaml", ROOT / "config/paper_3m.yaml")


def test_only_the_four_way_mix_is_the_3m_source(paper_cfg, mix_cfg):
    pub = load_published()
    assert data_source_matches(pub, "3M", plan.data_setting(mix_cfg))
    assert not data_source_matches(pub, "860k", plan.data_setting(mix_cfg))   # Qwen2.5-Math responses in it
    assert data_source_matches(pub, "860k", plan.data_setting(paper_cfg))
    assert not data_source_matches(pub, "3M", plan.data_setting(paper_cfg))   # one policy is not the mix
    three = copy.deepcopy(mix_cfg)
    del three["data_policies"]["qwen25_math_72b"]
    assert not data_source_matches(pub, "3M", plan.data_setting(validate_config(three)))
    swapped = copy.deepcopy(mix_cfg)   # a 72B policy completed by the 7B completer: not "the corresponding size"
    swapped["data_policies"]["qwen2_math_72b"]["completer"] = "qwen25_math_7b_instruct"
    assert not data_source_matches(pub, "3M", plan.data_setting(validate_config(swapped)))


@pytest.mark.parametrize("sizes,compared", [({"mc_hard": 59_800, "mc_soft": 59_800}, False),
                                            ({"mc_hard": 2_950_000, "mc_soft": 3_020_000}, True)])
def test_table1_compares_the_3m_rows_only_from_the_mix_at_the_published_size(mix_cfg, paper_cfg, tmp_path, sizes,
                                                                             compared):
    prms = ("mc_hard", "mc_soft", "human")
    rows = [dict(prm=p, benchmark=b, metric=m, n=8, accuracy=0.5, ci_low=0.49, ci_high=0.51)
            for p in prms for b in BON7 + ["average"] for m in ("pass", "maj", "prm_product", "prm_min", "prm_last")]
    pd.DataFrame(rows).to_csv(tmp_path / "bon.csv", index=False)
    pd.DataFrame({"variant": list(sizes), "n_instances": list(sizes.values())}).to_csv(tmp_path / "trainsets.csv",
                                                                                      index=False)
    inputs = {"bon": str(tmp_path / "bon.csv"), "trainsets": str(tmp_path / "trainsets.csv")}
    for cfg, source_ok in ((mix_cfg, True), (paper_cfg, False)):
        out = {"csv": str(tmp_path / "t1.csv"), "provenance": str(tmp_path / "t1.json"),
               "tex": str(tmp_path / "t1.tex")}
        T1.run(inputs=inputs, outputs=out, params=_params(cfg, "table1"), wildcards={}, threads=1)
        cells, tex = pd.read_csv(out["csv"]), Path(out["tex"]).read_text()
        got = _compared(cells)
        assert got["mc_hard"] == got["mc_soft"] == (compared and source_ok), (cfg["run"]["name"], got)
        mc = cells[cells["row"] == "mc_hard"]
        assert mc["published"].notna().all() and (mc["paper_n_samples"] == 3_000_000).all()
        assert r"\# samples" in tex
        if source_ok:
            assert "a mix of 4 data policies" in tex and "Qwen/Qwen2-Math-72B-Instruct responses, MC completions by " \
                "Qwen/Qwen2.5-Math-72B-Instruct" in tex


def test_a_data_source_figure_carries_its_provenance_note_into_the_report(paper_cfg, tmp_path):
    from prm_lessons.artifacts.defs import fig9_scoring_strategies as F9
    from prm_lessons.artifacts.render import report_markdown

    out = {k: str(tmp_path / f"fig9.{k}") for k in ("csv", "provenance", "pdf", "png")}
    params = {**_params(paper_cfg, "fig9"), "figure": {"width_in": 3.3, "dpi": 40, "font_size": 7,
                                                        "palette": "colorblind"}}
    F9.run(inputs=_inputs(tmp_path, PROJECT_SIZES), outputs=out, params=params, wildcards={}, threads=1)
    cells = pd.read_csv(out["csv"])
    mc = cells[cells["row"] == "mc_hard"]
    assert len(mc) and mc["diff"].isna().all() and (mc["n_samples"] == 59_800).all()   # ~60k: not compared
    notes = json.loads(Path(out["provenance"]).read_text())["notes"]   # cells.write_cells
    note = " ".join(notes)
    assert "Qwen/Qwen2-Math-7B-Instruct responses" in note and "mc_hard 60k (paper 860k)" in note
    md = report_markdown(load_published(), {"name": "t", "label": "t"}, {"fig9": cells}, tmp_path,
                         notes_of={"fig9": notes})
    section = md.split("## Figure 9")[1].split("\n## ")[0].replace("\\", "")   # md_escape's backslashes
    assert "Labelled data:" in section and "Qwen2-Math-7B-Instruct" in section
