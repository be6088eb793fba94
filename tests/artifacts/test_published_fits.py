"""What the published numbers can and cannot tell about two readings the project had to choose
(config/paper.yaml says which and why): the Chinese "GaoKao" column as mean(cloze, QA), and Table 8's
pass@1 as one sample per problem (greedy) rather than the mean over 8 samples."""
from __future__ import annotations

import math

from prm_lessons.artifacts.published import load_published

# the harness's file sizes (config/paper.yaml benchmarks.*.rows), in Table 8's column order
TABLE8_SIZES = {"gsm8k": 1319, "math": 5000, "minerva_math": 272, "gaokao2023en": 385, "olympiadbench": 675,
                "college_math": 2818, "mmlu_stem": 3018}


def one_decimal(x: float) -> float:
    return round(x + 1e-9, 1)


def grid(n: int) -> set[float]:
    """Every percentage with one decimal that k of n problems can print."""
    return {one_decimal(100 * k / n) for k in range(n + 1)}


def test_the_gaokao_mean_reading_fits_any_number_so_it_is_no_evidence():
    cloze, qa = 118, 351
    means = {one_decimal(100 * (k1 / cloze + k2 / qa) / 2) for k1 in range(cloze + 1) for k2 in range(qa + 1)}
    targets = [one_decimal(50 + i / 10) for i in range(401)]
    assert all(t in means for t in targets)   # 401 of 401: "fits all 70 cells" says nothing
    # whereas one set alone prints a sparse grid: a fit there would have been evidence
    assert len(grid(cloze) & set(targets)) < 60


def table8_rows() -> dict[str, list[float]]:
    t = load_published()["tables"]["table8"]
    return {r["key"]: r["values"][:-1] for r in t["rows"]}   # the seven benchmarks, not the Avg.


def test_table8_one_sample_per_problem_rows_all_lie_on_the_k_of_n_grid():
    """pass@8, maj@8, orm@8 and greedy search are one 0/1 outcome per problem: every published cell is
    k/n of the harness's file, which confirms the sizes the pass@1 check below relies on."""
    rows = table8_rows()
    for key, values in rows.items():
        if key == "pass1":
            continue
        for (bench, n), v in zip(TABLE8_SIZES.items(), values):
            assert v in grid(n), (key, bench, v)


def test_table8_pass1_fits_greedy_and_would_fit_the_mean_of_8_only_by_chance():
    """Every pass@1 cell is also k/n (one sample per problem). The mean over 8 samples prints k/(8n),
    which covers every 0.1 step at these sizes; that such a value also lies on the k/n grid happens, on the
    three small sets, with probability ≈ the grids' coverage: 0.27 x 0.39 x 0.68 ≈ 0.07. The published
    pass@1 therefore favours one sample per problem (greedy, as Qwen's reports decode; a single sampled
    response would fit as well) about 14:1: config/paper.yaml's search.pass1 is greedy (INFERRED)."""
    values = table8_rows()["pass1"]
    for (bench, n), v in zip(TABLE8_SIZES.items(), values):
        assert v in grid(n), (bench, v)
        assert v in grid(8 * n)   # the mean of 8 could print it too
    coverage = [len(grid(n)) / 1001 for n in TABLE8_SIZES.values()]
    chance = math.prod(coverage)
    assert 0.05 < chance < 0.1
