"""maj@N's answer keys with and without the per-answer cache (metrics.vote._memo_keys), side by side in
one run on generated Best-of-N rows: the key step alone, then the whole of bon_metrics (bootstrap 0), each
checked to give identical keys / metrics, and the ratio printed.

    PYTHONPATH=src .venv/bin/python bench/maj_cache.py [--rows 1000000] [--n 64] [--distinct 6] [--grouping harness]
"""
import argparse
import json
import random
import time

import pandas as pd

from prm_lessons.metrics import bon as m_bon
from prm_lessons.metrics import vote as m_vote

ANSWERS = ["4", "\\frac{1}{2}", "5\\text{ cm}", "x=3", "\\dfrac{3}{4}", "12", "\\sqrt{2}", "0.5", "infinity",
           "(1,2)", "\\$15", "45^\\circ"]


def _uncached(lists, keep, keyf):
    return [[keyf(p, k) for p in ps] for ps, k in zip(lists, keep)]


def _rows(n_rows: int, n: int, distinct: int, seed: int) -> pd.DataFrame:
    rnd = random.Random(seed)
    rows = []
    for q in range(n_rows // n):
        own = [rnd.choice(ANSWERS) + ("" if rnd.random() < 0.7 else str(q)) for _ in range(distinct)]
        bench = ("math", "minerva_math", "gsm8k")[q % 3]
        for i in range(n):
            rows.append({"benchmark": bench, "problem_id": f"p{q}", "sample_idx": i,
                         "pred": None if rnd.random() < 0.03 else rnd.choice(own),
                         "correct": rnd.random() < 0.4, "step_scores": [rnd.random(), rnd.random()]})
    return pd.DataFrame(rows)


def _timed(fn):
    t = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--n", type=int, default=64, help="responses per problem")
    ap.add_argument("--distinct", type=int, default=6, help="distinct answers per problem")
    ap.add_argument("--grouping", default="harness", choices=["harness", "normalized", "exact"])
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    df = _rows(a.rows, a.n, a.distinct, a.seed)
    lists = [g["pred"].tolist() for _, g in df.groupby(["benchmark", "problem_id"], sort=False)]
    keep = [False] * len(lists)
    print(f"{len(df):,} rows, {len(lists):,} problems of N={a.n}, grouping {a.grouping}")

    cached_keys, t_new = _timed(lambda: m_vote.vote_keys(lists, a.grouping, keep_units=keep)[0])
    real = m_vote._memo_keys
    m_vote._memo_keys = _uncached
    try:
        plain_keys, t_old = _timed(lambda: m_vote.vote_keys(lists, a.grouping, keep_units=keep)[0])
        plain_m, t_old_all = _timed(lambda: m_bon.bon_metrics(df, ["product", "min", "last"],
                                                              maj_grouping=a.grouping, bootstrap=0))
    finally:
        m_vote._memo_keys = real
    cached_m, t_new_all = _timed(lambda: m_bon.bon_metrics(df, ["product", "min", "last"],
                                                           maj_grouping=a.grouping, bootstrap=0))
    assert cached_keys == plain_keys, "the cache changed a key"
    assert json.dumps(cached_m, sort_keys=True) == json.dumps(plain_m, sort_keys=True), "the cache changed a metric"
    print(f"answer keys : uncached {t_old:7.2f} s, cached {t_new:7.2f} s, {t_old / max(t_new, 1e-9):5.1f}x")
    print(f"bon_metrics : uncached {t_old_all:7.2f} s, cached {t_new_all:7.2f} s, "
          f"{t_old_all / max(t_new_all, 1e-9):5.1f}x")
    print("identical keys and metrics")


if __name__ == "__main__":
    main()
