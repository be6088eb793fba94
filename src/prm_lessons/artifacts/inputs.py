"""An artifact rule's named inputs read as frames: the Best-of-N and ProcessBench stage tables (through
the cells loaders), restricted to the artifact's policy and N, or empty frames when an input is absent
(the artifact is still written, with the rows it can have)."""
from __future__ import annotations

import logging
from pathlib import Path
from typing import Callable, Mapping

import pandas as pd

from prm_lessons.artifacts.cells import BON_FRAME, baselines_as_bon, load_bon, load_processbench_table, select_rows

log = logging.getLogger(__name__)


def csv_or_empty(inputs: Mapping, name: str, loader: Callable) -> pd.DataFrame | None:
    path = inputs.get(name)
    if not path or not Path(path).exists():
        log.warning("input '%s' is missing; artifact rows that need it are skipped", name)
        return None
    return loader(path)


def bon_input(inputs) -> pd.DataFrame | None:
    bon = csv_or_empty(inputs, "bon", load_bon)
    if (bon is None or bon.empty) and inputs.get("baselines") and Path(inputs["baselines"]).exists():
        bon = baselines_as_bon(inputs["baselines"])
    return bon


def empty_bon() -> pd.DataFrame:
    return pd.DataFrame(columns=BON_FRAME)


def empty_pb() -> pd.DataFrame:
    return pd.DataFrame(columns=["prm", "subset", "n", "error_acc", "correct_acc", "f1"])


def read_bon(inputs, params, policy_key: str = "policy", n=None) -> pd.DataFrame:
    """bon.csv (bon_baselines.csv when no PRM was scored) restricted to the artifact's policy
    (params[policy_key]: `policy` = analysis.policy, `second_policy` for Tables 9, 12, 14, 16) and N
    (`n`, else params n = analysis.n or bon.n), so other policies' and other N's rows never mix in."""
    bon = bon_input(inputs)
    bon = bon if bon is not None else empty_bon()
    return select_rows(bon, params.get(policy_key), params.get("n") if n is None else n,
                       primary=policy_key == "policy")


def read_pb(inputs) -> pd.DataFrame:
    pb = csv_or_empty(inputs, "processbench", load_processbench_table)
    return pb if pb is not None else empty_pb()
