"""Problem loaders, pinned source files, the ProcessBench loader and a ProcessBench-format set built
by construction.

Three problem sources share one interface, :func:`load_problems` (reasoning-gym generators, Hugging
Face datasets, local jsonl/json/parquet files); every loader returns the ``problems`` table
(``problem_id``, ``dataset``, ``question``, ``answer``, ``gold_steps``).

:func:`build_constructed_processbench` builds ProcessBench cases from gold solutions with one error
injected at a known step (the error injection itself lives in :mod:`prm_lessons.corruption`).
"""
from __future__ import annotations

import hashlib
import json
import logging
import math
import numbers
import random
import re
import shutil
import urllib.request
from pathlib import Path
from typing import Iterable, Sequence
from urllib.parse import unquote, urlparse

import pandas as pd

from .corruption import CorruptionError, arithmetic_gold_steps, construction_plan, corrupt_solution
from .errors import InputError, as_bool01, as_int, is_bool, json_type
from .grading.extract import gold_answer_text, last_boxed_content
from .tables import read_records, read_table

log = logging.getLogger(__name__)

PROBLEM_COLUMNS = ["problem_id", "dataset", "question", "answer", "gold_steps"]
PROCESSBENCH_COLUMNS = ["id", "subset", "generator", "problem", "steps", "final_answer_correct", "label"]
PROCESSBENCH_SUBSETS = ["gsm8k", "math", "olympiadbench", "omnimath"]
CONSTRUCTED_GENERATOR = "constructed"


# --------------------------------------------------------------------------------------------------
# problem loaders
# --------------------------------------------------------------------------------------------------

ANSWER_FORMATS = ("plain", "gsm8k", "boxed", "choice")
_CALC_RE = re.compile(r"<<[^<>]*>>")  # GSM8K calculator annotations "<<16-3-4=9>>"


def gsm8k_answer(text: str) -> str:
    """Final answer of a GSM8K solution: the text after the last '####' (thousands commas dropped)."""
    if "####" not in str(text):
        raise ValueError("no '####' in the answer text")
    return str(text).rsplit("####", 1)[1].strip().replace(",", "")


def gsm8k_steps(text: str) -> list[str]:
    """A GSM8K worked solution as steps: one per line, calculator annotations removed, final boxed step."""
    body, final = str(text).rsplit("####", 1)
    steps = [_CALC_RE.sub("", line).strip() for line in body.splitlines()]
    steps = [s for s in steps if s]
    steps.append(f"The final answer is $\\boxed{{{final.strip().replace(',', '')}}}$.")
    return steps


def boxed_answer(solution: str) -> str:
    """Final answer of a MATH-style solution: the content of its last \\boxed{...}."""
    ans = last_boxed_content(str(solution))
    if ans is None or not ans.strip():
        raise ValueError("no \\boxed{...} answer in the solution")
    return ans.strip()


def split_solution(text: str) -> list[str]:
    """A worked solution split into steps on blank lines (the paper's step separator)."""
    return [p.strip() for p in re.split(r"\n\s*\n", str(text)) if p.strip()]


CHOICES_STYLES = ("answer_choices", "options_zh")
YES_NO_HINTS = {"true": " (True or False)", "false": " (True or False)", "yes": " (Yes or No)", "no": " (Yes or No)"}


def _choice_question(question: str, choices, style: str = "answer_choices") -> str:
    """The question with its options appended, as the Qwen2.5-Math harness's parse_question writes them:
    answer_choices (MMLU STEM: "\nAnswer Choices: (A) …") or options_zh (gaokao_math_qa: "\n选项: (A) …").
    Options are a list (lettered A, B, …) or a mapping letter -> text (in its order)."""
    pairs = list(choices.items()) if isinstance(choices, dict) else \
        [("ABCDEFGHIJ"[i], c) for i, c in enumerate(choices)]
    opts = " ".join(f"({k}) {str(c).strip() if style == 'answer_choices' else c}" for k, c in pairs)
    if style == "options_zh":
        return f"{question.strip()}\n选项: {opts}"
    if style != "answer_choices":
        raise ValueError(f"choices_style {style!r}: one of {', '.join(CHOICES_STYLES)}")
    return f"{question.strip()}\nAnswer Choices: {opts}"


def _answer_field(rec: dict, af) -> str:
    """The answer field of a record: fields.answer, or the first of a list of fields whose value is not
    empty (cn_middle_school: `choice_answer`, else `answer`, as the harness reads it); the last one when
    all are empty, so the missing-answer error names it."""
    if isinstance(af, str):
        return af
    for f in af:
        v = rec.get(f)
        if f in rec and not (_missing(v) if not isinstance(v, (list, tuple)) else not v):
            return f
    return af[-1]


def _reasoning_gym_rows(spec: dict) -> list[dict]:
    import reasoning_gym  # lazy: only reasoning-gym sets need it (slow import)

    generator = spec.get("generator")
    if not generator:
        raise ValueError("dataset spec with source reasoning_gym needs `generator`")
    if not spec.get("size"):
        raise ValueError(f"reasoning_gym dataset '{generator}' needs `size`")
    ds = reasoning_gym.create_dataset(generator, size=int(spec["size"]), seed=int(spec.get("seed", 0)),
                                      **(spec.get("params") or {}))
    rows = []
    for i, item in enumerate(ds):
        meta = item.get("metadata") or {}
        rows.append({"source_id": f"{generator}:{spec.get('seed', 0)}:{i}", "question": item.get("question"),
                     "answer": item.get("answer"), "gold_steps": _reasoning_gym_steps(generator, item, meta)})
    return rows


def _reasoning_gym_steps(generator: str, item: dict, meta: dict) -> list[str] | None:
    """Gold step-by-step solutions for reasoning-gym items.

    gsm_symbolic carries a worked solution (``metadata.answer_cot``, GSM8K style: one line per step,
    ``#### answer`` last). basic_arithmetic and chain_sum carry only the expression, so the solution is
    built from it: one step per operation in evaluation order, then a boxed final answer. Other
    generators: None (no gold steps).
    """
    if meta.get("answer_cot"):
        cot = str(meta["answer_cot"])
        if "####" not in cot:
            cot = f"{cot}\n#### {item.get('answer')}"
        return gsm8k_steps(cot)
    if meta.get("expression") is not None and generator in ("basic_arithmetic", "chain_sum"):
        try:
            return arithmetic_gold_steps(str(meta["expression"]), str(item.get("answer")))
        except ValueError as exc:
            # reasoning-gym floors inexact divisions, so a few gold answers are not the exact value;
            # such a problem keeps its question and answer but gets no gold steps
            log.info("%s item %s: no gold steps (%s)", generator, meta.get("source_index"), exc)
    return None


def _hub_records(spec: dict) -> list[dict]:
    import datasets  # lazy: heavy, and only Hub sources need it

    if not spec.get("id"):
        raise ValueError("dataset spec with source hub needs `id`")
    kwargs = {"revision": spec["revision"]} if spec.get("revision") else {}
    ds = datasets.load_dataset(spec["id"], spec.get("config"), split=spec.get("split", "test"), **kwargs)
    return [dict(r) for r in ds]


# --------------------------------------------------------------------------------------------------
# pinned source files: downloaded once (rule benchmark_file / processbench_file), checksummed
# --------------------------------------------------------------------------------------------------

DOWNLOAD_DIR = "resources/data"


def _url_suffix(url: str) -> str:
    name = Path(urlparse(str(url)).path).name
    for suffix in (".jsonl.gz", ".jsonl", ".json", ".parquet"):
        if name.endswith(suffix):
            return suffix
    raise ValueError(f"{url}: cannot tell the file type from its name (.jsonl, .jsonl.gz, .json or .parquet)")


def downloaded_path(name: str, spec: dict) -> str:
    """Where rule `benchmark_file` keeps the copy of a `source: url` dataset entry."""
    if not spec.get("url"):
        raise ValueError(f"dataset '{name}': source url needs `url`")
    return f"{DOWNLOAD_DIR}/benchmarks/{name}{_url_suffix(spec['url'])}"


def processbench_paths(spec: dict) -> dict[str, str]:
    """subset -> where rule `processbench_file` keeps its copy (source url; `url` holds `{subset}`)."""
    url = spec.get("url") or ""
    if "{subset}" not in url:
        raise ValueError("processbench source url needs `url` with a {subset} placeholder")
    subsets = list(spec.get("subsets") or PROCESSBENCH_SUBSETS)
    return {s: f"{DOWNLOAD_DIR}/processbench/{s}{_url_suffix(url.format(subset=s))}" for s in subsets}


def file_digests(path: str | Path) -> dict[str, str]:
    """sha256 of the file's bytes and its git blob id (sha1 of ``blob <size>\\0`` + bytes)."""
    data = Path(path).read_bytes()
    return {"sha256": hashlib.sha256(data).hexdigest(), "git_blob_sha1": git_blob_sha1(data)}


def git_blob_sha1(data: bytes) -> str:
    """git's object id of these bytes as a blob (what `git ls-tree` lists for a file)."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def verify_checksums(path: str | Path, expected: dict, what: str) -> None:
    """Raise ValueError naming ``what`` when the file's sha256 / git blob id differs from ``expected``
    (keys ``sha256`` and ``git_blob_sha1``; absent or null keys are not checked)."""
    wanted = {k: str(expected[k]).lower() for k in ("sha256", "git_blob_sha1") if expected.get(k)}
    if not wanted:
        return
    got = file_digests(path)
    for key, value in wanted.items():
        if got[key] != value:
            raise ValueError(f"{what}: {key} of {path} is {got[key]}, expected {value} "
                             "(a different file than the pinned one; fix the `url` or the checksum)")


def fetch_file(url: str, dest: str | Path, checksums: dict, what: str) -> None:
    """Copy ``url`` (http(s)://, file:// or a plain path, so an air-gapped site can point at its own
    copy) to ``dest``, verify its checksums, then move it into place: a failed or wrong download
    never leaves a file that a later run would trust."""
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(dest.name + ".part")
    parsed = urlparse(str(url))
    try:
        if parsed.scheme in ("http", "https"):
            with urllib.request.urlopen(url, timeout=120) as resp, open(tmp, "wb") as fh:
                shutil.copyfileobj(resp, fh)
        else:
            src = Path(unquote(parsed.path)) if parsed.scheme == "file" else Path(str(url))
            if not src.exists():
                raise FileNotFoundError(f"{what}: {src} not found (from url {url})")
            shutil.copyfile(src, tmp)
        verify_checksums(tmp, checksums, what)
        tmp.replace(dest)
    finally:
        tmp.unlink(missing_ok=True)


def check_rows(n: int, expected, what: str) -> None:
    if expected is not None and int(n) != int(expected):
        raise ValueError(f"{what}: {n} rows, expected {int(expected)} (`rows` in the config); "
                         "the file is not the pinned set")


def _missing(value) -> bool:
    if value is None:
        return True
    if isinstance(value, float) and math.isnan(value):
        return True
    return isinstance(value, str) and not value.strip()


def _decode_list(value):
    """numpy arrays and JSON-list strings as Python lists; any other value unchanged."""
    if hasattr(value, "tolist") and not isinstance(value, str):
        value = value.tolist()
    if isinstance(value, str) and value.strip().startswith("[") and value.strip().endswith("]"):
        try:  # lists stored as strings (some jsonl exports)
            parsed = json.loads(value)
            if isinstance(parsed, list):
                return parsed
        except json.JSONDecodeError:
            pass
    return value


def _map_record(rec: dict, spec: dict, row_id: str) -> dict:
    """One source record → {question, answer, gold_steps, source_id}, per the spec's field mapping."""
    fields = {"question": "question", "answer": "answer", "gold_steps": None, "id": None, "choices": None,
              **(spec.get("fields") or {})}
    fmt = spec.get("answer_format", "plain")
    qf, af = fields["question"], _answer_field(rec, fields["answer"])
    if qf not in rec:
        raise ValueError(f"row {row_id}: no field '{qf}' (fields.question); fields present: {sorted(rec)}")
    question = _question_text(rec[qf], f"row {row_id}", f" (field '{qf}')")
    if af not in rec or _missing(rec[af]) if not isinstance(rec.get(af), (list, tuple)) else not rec[af]:
        if af in rec and spec.get("missing_answer") == "keep":
            # kept with an empty gold (never graded correct), as the harness keeps such rows in its denominator
            source_id = rec.get(fields["id"]) if fields.get("id") else rec.get("_source_row")
            return {"question": question, "answer": "", "gold_steps": None,
                    "source_id": None if source_id is None else str(source_id)}
        raise ValueError(f"row {row_id}: missing answer (field '{af}')")
    raw_answer = _decode_list(rec[af])
    try:
        if fmt == "gsm8k":
            answer = gsm8k_answer(raw_answer)
        elif fmt == "boxed":
            answer = boxed_answer(raw_answer)
        elif fmt == "choice":
            if fields["choices"] not in rec:
                raise ValueError(f"no field '{fields['choices']}' (fields.choices)")
            choices = _decode_list(rec[fields["choices"]])
            question = _choice_question(question, choices, spec.get("choices_style", "answer_choices"))
            letter = str(raw_answer).strip()
            answer = "ABCDEFGHIJ"[int(letter)] if letter.isdigit() else letter.upper()
        else:
            answer = gold_answer_text(raw_answer)  # lists (OlympiadBench) → first; "$…$" unwrapped
            if fields["choices"]:  # options shown, gold read as is (gaokao_math_qa: a letter in `label`)
                if fields["choices"] not in rec:
                    raise ValueError(f"no field '{fields['choices']}' (fields.choices)")
                question = _choice_question(question, _decode_list(rec[fields["choices"]]),
                                            spec.get("choices_style", "answer_choices"))
    except (ValueError, IndexError) as exc:
        raise ValueError(f"row {row_id}: bad answer in field '{af}': {exc}") from None
    if _missing(answer):
        raise ValueError(f"row {row_id}: missing answer (field '{af}')")
    if spec.get("yes_no_hint"):  # the harness's parse_question marks a yes/no or true/false item
        hint = YES_NO_HINTS.get(str(answer).strip().lower())
        question = question + hint if hint else question
    gold_steps = None
    if fields.get("gold_steps"):
        gf = fields["gold_steps"]
        if gf not in rec:
            raise ValueError(f"row {row_id}: no field '{gf}' (fields.gold_steps)")
        raw = _decode_list(rec[gf])
        if isinstance(raw, list):
            gold_steps = [str(s).strip() for s in raw if str(s).strip()]
        elif not _missing(raw):
            gold_steps = gsm8k_steps(raw) if fmt == "gsm8k" and "####" in str(raw) else split_solution(raw)
        if gold_steps is not None and not gold_steps:
            raise ValueError(f"row {row_id}: empty gold steps (field '{gf}')")
    elif fmt == "gsm8k":
        gold_steps = gsm8k_steps(raw_answer)
    source_id = rec.get(fields["id"]) if fields.get("id") else rec.get("_source_row")
    return {"question": question, "answer": str(answer).strip(), "gold_steps": gold_steps,
            "source_id": None if source_id is None else str(source_id)}


def _question_text(value, where: str, field: str = "") -> str:
    """The question as text; a missing one or one that is not a string (an object, a list, a number) is
    an error naming the row: stringifying it would sample the policy on "{'text': ...}"."""
    if _missing(value):
        raise ValueError(f"{where}: empty question{field}")
    if not isinstance(value, str):
        raise ValueError(f"{where}: question{field} is a JSON {json_type(value)}, not a string")
    return value


def _duplicate_id_problems(source_ids: Sequence, row_ids: Sequence[str], id_field: str) -> list[str]:
    """One line per source id that more than one row carries (ids compared as text)."""
    rows: dict[str, list[str]] = {}
    for sid, rid in zip(source_ids, row_ids):
        if sid is not None:
            rows.setdefault(str(sid), []).append(rid)
    return [f"id {sid!r} (fields.id '{id_field}') repeats in rows {', '.join(r)}; source ids must be unique"
            for sid, r in rows.items() if len(r) > 1]


def _repeated_problems(df: pd.DataFrame) -> dict[str, str]:
    """problem_id -> the earlier problem_id with the same question and answer.

    Kept, not dropped or refused: the pinned harness files repeat problems (mmlu_stem has 12 rows that
    are exact copies, counted in the harness's 3,018) and small reasoning-gym families draw the same
    problem again (one-digit arithmetic: ~20 of 100); the loader keeps the set as its source defines it,
    logs the repeats and the problems rule records them in the table's metadata (`repeated`)."""
    first: dict[tuple, str] = {}
    out = {}
    for pid, q, a in zip(df["problem_id"], df["question"], df["answer"]):
        if (q, a) in first:
            out[pid] = first[(q, a)]
        else:
            first[(q, a)] = pid
    return out


def subsample_records(records: list[dict], sub: dict, what: str) -> list[dict]:
    """A seeded random subset of ``sub["n"]`` records, kept in source order (``subsample``: a set too
    large to sample whole, e.g. Omni-MATH for Figure 6); each record keeps its source row number as
    ``_source_row`` (the problem's source_id when the set has no id field)."""
    n, seed = int(sub["n"]), int(sub.get("seed", 0))
    if n > len(records):
        raise ValueError(f"{what}: subsample.n {n} > the set's {len(records)} rows")
    keep = sorted(random.Random(seed).sample(range(len(records)), n))
    return [{**records[i], "_source_row": i} for i in keep]


def load_problems(name: str, spec: dict, path: str | Path | None = None) -> pd.DataFrame:
    """The problems table for one dataset entry of the config (``problems:`` or ``benchmarks:``).

    Columns: ``problem_id`` (``{name}-{i:05d}``, stable for a given spec), ``dataset`` (= name),
    ``question``, ``answer`` (str), ``gold_steps`` (list of str, or None), and ``source_id`` (the
    source's own id where known). Bad rows (missing answer, empty question, a question that is not a
    string, a source id (``fields.id``) that repeats) raise InputError with one line per problem, each
    naming its row; the file reader names the file and line of a row that is not an object or not
    UTF-8. A problem that repeats an earlier one (same question and answer) is kept and counted
    (:func:`_repeated_problems`; ``df.attrs["repeated"]``). ``source: url`` reads the copy made by rule
    `benchmark_file` (``path``, default :func:`downloaded_path`). Checksums (``sha256``/``git_blob_sha1``,
    url and local) and ``rows`` (any source, counted before ``limit``) stop the load with a message
    naming the set.
    """
    source = spec.get("source")
    fmt = spec.get("answer_format", "plain")
    if fmt not in ANSWER_FORMATS:
        raise ValueError(f"dataset '{name}': unknown answer_format '{fmt}' (one of {', '.join(ANSWER_FORMATS)})")
    if fmt == "choice" and not (spec.get("fields") or {}).get("choices"):
        raise ValueError(f"dataset '{name}': answer_format choice needs fields.choices naming the options field")
    n_source = None  # rows of the whole set, before `limit` (recorded in the table's metadata)
    problems: list[str] = []  # every bad row, one line each
    mapped = []
    where = f"dataset '{name}'"
    if source == "reasoning_gym":
        records = _reasoning_gym_rows(spec)
        n_source = len(records)
        for i, rec in enumerate(records):
            row_id = f"{name}-{i:05d} ({rec['source_id']})"
            try:
                question = _question_text(rec["question"], f"row {row_id}")
                if _missing(rec["answer"]):
                    raise ValueError(f"row {row_id}: missing answer")
            except ValueError as exc:
                problems.append(str(exc))
                continue
            mapped.append({**rec, "question": question, "answer": str(rec["answer"]).strip()})
    elif source in ("hub", "local", "url"):
        if source == "hub":
            records = _hub_records(spec)
        else:
            if source == "local" and not spec.get("path"):
                raise ValueError("dataset spec with source local needs `path`")
            file = spec["path"] if source == "local" else (path or downloaded_path(name, spec))
            where = f"dataset '{name}' ({file})"
            verify_checksums(file, spec, f"dataset '{name}'")
            records = read_records(file)  # names the file and line of a non-object or non-UTF-8 row
        check_rows(len(records), spec.get("rows"), f"dataset '{name}'")
        n_source = len(records)
        if spec.get("subsample"):
            records = subsample_records(records, spec["subsample"], f"dataset '{name}'")
        if spec.get("limit"):
            records = records[: int(spec["limit"])]
        id_field = (spec.get("fields") or {}).get("id")
        for i, rec in enumerate(records):
            try:
                mapped.append(_map_record(rec, spec, f"{name}-{i:05d}"
                                          + (f" (id {rec.get(id_field)})" if id_field else "")))
            except ValueError as exc:
                problems.append(str(exc))
        if id_field:
            problems += _duplicate_id_problems([rec.get(id_field) for rec in records],
                                               [f"{name}-{i:05d}" for i in range(len(records))], id_field)
    else:
        raise ValueError(f"dataset '{name}': unknown source {source!r} (reasoning_gym, hub, local or url)")
    if problems:
        raise InputError(problems, where)
    if not mapped:
        raise ValueError(f"dataset '{name}': no problems")
    df = pd.DataFrame(mapped)
    df.insert(0, "problem_id", [f"{name}-{i:05d}" for i in range(len(df))])
    df.insert(1, "dataset", name)
    df = df[PROBLEM_COLUMNS + ["source_id"]]
    df.attrs["rows_loaded"] = n_source
    repeated = _repeated_problems(df)
    if repeated:
        log.warning("%s: %d of %d problems repeat an earlier one (same question and answer), kept as the "
                    "source has them: %s", where, len(repeated), len(df),
                    ", ".join(f"{p} = {q}" for p, q in list(repeated.items())[:10])
                    + (" …" if len(repeated) > 10 else ""))
    df.attrs["repeated"] = repeated
    return df


# --------------------------------------------------------------------------------------------------
# ProcessBench
# --------------------------------------------------------------------------------------------------

def _label_value(label, n_steps: int | None) -> tuple[int | None, str | None]:
    """A ProcessBench label as an int, or why it is none: an integer (an integral float from a Parquet
    column too) in -1..n_steps-1; a string ("two"), a fraction (1.7) or a boolean is refused, never cast."""
    if is_bool(label):
        return None, f"label {label!r} is a boolean, not an integer"
    value = as_int(label)
    if value is None and isinstance(label, numbers.Real):
        return None, f"label {label!r} is not an integer"
    if value is None:
        return None, f"label {label!r} is a JSON {json_type(label)}, not an integer"
    if n_steps is not None and not -1 <= value < n_steps:
        return None, f"label {value} outside -1..{n_steps - 1}"
    return value, None


def _flag_value(value) -> tuple[bool | None, str | None]:
    """final_answer_correct as a bool: a boolean or 0/1 (bool("False") would be True)."""
    if (flag := as_bool01(value)) is not None:
        return flag, None
    return None, f"final_answer_correct {value!r} is a JSON {json_type(value)}, not a boolean"


def _validate_cases(df: pd.DataFrame, where: str | None = None) -> pd.DataFrame:
    """Every case's problem, steps and label, and unique ids; InputError with one line per problem."""
    problems = []
    for row in df.itertuples(index=False):
        steps = row.steps
        if _missing(row.problem):
            problems.append(f"ProcessBench case {row.id}: empty problem")
        if steps is None or len(steps) == 0 or any(_missing(s) for s in steps):
            problems.append(f"ProcessBench case {row.id}: empty steps")
            continue
        _, why = _label_value(row.label, len(steps))
        if why:
            problems.append(f"ProcessBench case {row.id}: {why}")
    problems += _duplicate_case_problems(df)
    if problems:
        raise InputError(problems, where)
    return df


def _duplicate_case_problems(df: pd.DataFrame) -> list[str]:
    counts = df["id"].astype(str).value_counts(sort=False)
    subsets = df["subset"] if "subset" in df.columns else pd.Series([""] * len(df), index=df.index)
    return [f"duplicate ProcessBench case id {i}: {n} cases (subsets "
            f"{', '.join(sorted(set(map(str, subsets[df['id'].astype(str) == i]))))})"
            for i, n in counts[counts > 1].items()]


def _cases_from_records(records: Iterable[dict], subset: str, where: str | None = None) -> list[dict]:
    """Rows of one subset's file as cases; every field checked, never cast (a label "two" or 1.7, steps
    that are not strings, a problem that is not a string): InputError naming each case and `where`."""
    out, problems = [], []
    for n, rec in enumerate(records):
        cid = rec.get("id", f"{subset}-{n}")
        missing = [k for k in ("problem", "steps", "final_answer_correct", "label") if k not in rec]
        if missing:
            problems.append(f"ProcessBench case {cid}: missing field(s) {missing}")
            continue
        why = []
        steps = _decode_list(rec["steps"])
        if not isinstance(steps, list):
            why.append(f"steps must be a list, got a JSON {json_type(steps)}")
        else:
            bad = [k for k, s in enumerate(steps) if not isinstance(s, str)]
            if bad:
                why.append(f"steps must be strings (step {bad[0]} is a JSON {json_type(steps[bad[0]])})")
            elif not steps or any(_missing(s) for s in steps):
                why.append("empty steps")
        if _missing(rec["problem"]):
            why.append("empty problem")
        elif not isinstance(rec["problem"], str):
            why.append(f"problem is a JSON {json_type(rec['problem'])}, not a string")
        label, label_why = _label_value(rec["label"], len(steps) if isinstance(steps, list) and steps else None)
        flag, flag_why = _flag_value(rec["final_answer_correct"])
        why += [w for w in (label_why, flag_why) if w]
        if why:
            problems += [f"ProcessBench case {cid}: {w}" for w in why]
            continue
        out.append({"id": str(cid), "subset": subset, "generator": str(rec.get("generator") or ""),
                    "problem": rec["problem"], "steps": list(steps), "final_answer_correct": flag,
                    "label": label})
    if problems:
        raise InputError(problems, where)
    return out


def load_processbench(spec: dict, files: dict[str, str | Path] | None = None) -> pd.DataFrame:
    """ProcessBench cases: from the Hub (``Qwen/ProcessBench``, one split per subset), a directory
    of the official ``{subset}.json`` files, or pinned files (``source: url``, copies made by rule
    `processbench_file`; ``files`` maps subset -> copy, default :func:`processbench_paths`).
    Columns: id, subset, generator, problem, steps (list), final_answer_correct (bool), label (int;
    −1 = no erroneous step, else the 0-based first error).

    spec: ``source`` (hub | local | url), ``id``/``revision`` (hub), ``path`` (local directory),
    ``url`` (with ``{subset}``), ``sha256``/``git_blob_sha1``/``rows`` (subset -> value; checked
    before ``limit``, an error names the subset), ``subsets`` (default all four), ``limit`` (first N
    cases per subset, or null).
    """
    source = spec.get("source", "hub")
    subsets = list(spec.get("subsets") or PROCESSBENCH_SUBSETS)
    limit = spec.get("limit")
    rows: list[dict] = []
    for subset in subsets:
        what = f"ProcessBench subset '{subset}'"
        checks = {k: (spec.get(k) or {}).get(subset) for k in ("sha256", "git_blob_sha1")}
        if source == "hub":
            import datasets  # lazy: heavy, and only Hub sources need it

            where = f"{spec.get('id', 'Qwen/ProcessBench')} split {subset}"
            kwargs = {"revision": spec["revision"]} if spec.get("revision") else {}
            records = [dict(r) for r in datasets.load_dataset(spec.get("id", "Qwen/ProcessBench"), split=subset,
                                                              **kwargs)]
        elif source in ("local", "url"):
            if source == "url":
                file = Path((files or processbench_paths(spec))[subset])
            else:
                if not spec.get("path"):
                    raise ValueError("processbench source local needs `path` (a directory of {subset}.json files)")
                path = Path(spec["path"])
                found = [p for p in (path / f"{subset}.json", path / f"{subset}.jsonl", path / f"{subset}.parquet")
                         if p.exists()]
                if not found:
                    raise FileNotFoundError(f"{path}: no {subset}.json (or .jsonl/.parquet) for ProcessBench subset '{subset}'")
                file = found[0]
            verify_checksums(file, checks, what)
            where = str(file)
            records = read_records(file)
        else:
            raise ValueError(f"processbench: unknown source {source!r} (hub, local, url or constructed)")
        check_rows(len(records), (spec.get("rows") or {}).get(subset), what)
        if limit:
            records = records[: int(limit)]
        rows += _cases_from_records(records, subset, where)
    df = pd.DataFrame(rows, columns=PROCESSBENCH_COLUMNS)
    return _validate_cases(df)  # ids across subsets (each file's rows were checked above)


def build_constructed_processbench(problems: pd.DataFrame, n_per_subset: int = 12, seed: int = 0,
                                   error_fraction: float = 0.5, keep_answer_fraction: float = 0.3,
                                   subset_column: str = "dataset", id_prefix: str = "") -> pd.DataFrame:
    """A ProcessBench-format set built by construction from problems with gold steps, balanced so that
    structure does not solve it.

    Per subset (one per value of ``subset_column``, e.g. one per generator), up to ``n_per_subset``
    cases, planned by :func:`construction_plan` over the solution lengths: within every length, a share
    ``error_fraction`` gets one injected error (:func:`corrupt_solution` at the planned position, the
    last step included: a wrong final answer written down), spread evenly over the positions; of the
    errors before the last step a share ``keep_answer_fraction`` keeps the correct final answer (the
    "correct answer, flawed process" case); the rest are untouched gold solutions (label −1). A problem
    where the planned error cannot be placed is replaced by the next spare problem of the same length
    (never by another kind or position). Deterministic for a given seed; ids ``{id_prefix}{subset}-{k}``.
    """
    if problems.empty:
        raise ValueError("constructed ProcessBench: no problems")
    rnd = random.Random(seed)
    rows = []
    for subset, group in problems.groupby(subset_column, sort=True):
        group = group[group["gold_steps"].map(lambda s: s is not None and len(s) > 0)]
        if group.empty:
            raise ValueError(f"constructed ProcessBench: subset '{subset}' has no problems with gold steps")
        picked, spare = group.iloc[:n_per_subset], group.iloc[n_per_subset:]
        if len(picked) < n_per_subset:
            log.info("constructed ProcessBench: subset %s has %d problems with gold steps (asked %d)",
                     subset, len(picked), n_per_subset)
        spares: dict[int, list] = {}
        for row in spare.itertuples(index=False):
            spares.setdefault(len(row.gold_steps), []).append(row)
        plan = construction_plan([len(s) for s in picked["gold_steps"]], error_fraction, keep_answer_fraction, rnd)
        k = 0
        for row, (kind, pos) in zip(picked.itertuples(index=False), plan):
            candidates = [row] + spares.get(len(row.gold_steps), [])
            for cand in candidates:
                gold = list(cand.gold_steps)
                if kind == "clean":
                    steps, label = gold, -1
                else:
                    try:
                        steps, label = corrupt_solution(gold, str(cand.answer), rnd, keep_final_answer=kind == "keep",
                                                        position=pos)
                    except CorruptionError as exc:
                        log.info("constructed ProcessBench: %s: no %s error at step %d (%s); next problem",
                                 cand.problem_id, "answer-keeping" if kind == "keep" else "answer-changing", pos, exc)
                        continue
                if cand is not row:
                    spares[len(row.gold_steps)].remove(cand)
                rows.append({"id": f"{id_prefix}{subset}-{k}", "subset": str(subset),
                             "generator": CONSTRUCTED_GENERATOR, "problem": cand.question, "steps": steps,
                             "final_answer_correct": kind != "error", "label": int(label),
                             "problem_id": cand.problem_id})
                k += 1
                break
            else:
                log.warning("constructed ProcessBench: subset %s: slot (%s, step %d) left empty, no problem allows it",
                            subset, kind, pos)
    df = pd.DataFrame(rows)
    return _validate_cases(df[PROCESSBENCH_COLUMNS + ["problem_id"]])


def constructed_balance(cases: pd.DataFrame) -> pd.DataFrame:
    """Case counts by (subset, n_steps, label, final_answer_correct): the constructed set's balance."""
    view = cases.assign(n_steps=cases["steps"].map(len))
    return (view.groupby(["subset", "n_steps", "label", "final_answer_correct"]).size()
            .rename("n").reset_index())


def _subset_problems(subsets: dict, prefix: str, seen: set, what: str) -> list[pd.DataFrame]:
    frames = []
    for subset, sub in subsets.items():
        problems = load_problems(f"{prefix}{subset}", sub)
        problems["subset"] = subset
        overlap = problems["question"].isin(seen)
        if overlap.any():
            log.info("%s subset %s: %d problem(s) also among held-out questions, dropped", what, subset,
                     int(overlap.sum()))
        frames.append(problems[~overlap])
    return frames


def constructed_processbench(con: dict, exclude: dict | None = None, split: str = "eval") -> pd.DataFrame:
    """The constructed ProcessBench set of the config's `processbench.constructed` section, held out
    from the training problems: a problem whose question also appears among the problem sets of
    ``exclude`` (name -> dataset spec) is dropped. ``split="dev"``: the dev split of ``con["dev"]``
    (its own problems; questions of the evaluation subsets are dropped too), ids ``dev-{subset}-{k}``."""
    if split not in ("eval", "dev"):
        raise ValueError(f"constructed ProcessBench: split {split!r} is not 'eval' or 'dev'")
    seen = set()
    for name, train_spec in (exclude or {}).items():
        seen |= set(load_problems(name, train_spec)["question"])
    if not con.get("subsets"):
        raise ValueError("processbench.constructed.subsets: no subsets defined")
    if split == "dev":
        dev = con.get("dev") or {}
        if not dev.get("subsets"):
            raise ValueError("processbench.constructed.dev: the dev split needs `subsets` (own seeds)")
        for sub in _subset_problems(con["subsets"], "processbench-", set(), "processbench"):
            seen |= set(sub["question"])
        frames = _subset_problems(dev["subsets"], "processbench-dev-", seen, "processbench dev")
        n, prefix, seed = int(dev.get("n_per_subset", 100)), "dev-", int(con.get("seed", 0)) + 1
    else:
        frames = _subset_problems(con["subsets"], "processbench-", seen, "processbench")
        n, prefix, seed = int(con.get("n_per_subset", 12)), "", int(con.get("seed", 0))
    return build_constructed_processbench(
        pd.concat(frames, ignore_index=True), subset_column="subset", n_per_subset=n, seed=seed,
        error_fraction=float(con.get("error_fraction", 0.5)),
        keep_answer_fraction=float(con.get("keep_answer_fraction", 0.3)), id_prefix=prefix)


def load_processbench_cases(source: str) -> pd.DataFrame:
    """ProcessBench cases (id, subset, label, steps, …) from a directory of {subset}.json/.jsonl/
    .parquet files (every file is a subset), a cases.parquet table, or a Hub dataset id
    (Qwen/ProcessBench) — through `load_processbench`."""
    p = Path(source)
    if p.is_file() and p.suffix == ".parquet":
        df = read_table(p, None)  # integrity checked; rows below
    elif p.is_dir():
        subsets = sorted({f.stem for f in p.iterdir() if f.suffix in (".json", ".jsonl", ".parquet")})
        if not subsets:
            raise FileNotFoundError(f"{source}: no ProcessBench {{subset}}.json files")
        df = load_processbench({"source": "local", "path": str(p), "subsets": subsets})
    elif p.exists() or source.count("/") != 1:
        raise FileNotFoundError(f"{source}: not a ProcessBench directory, cases.parquet or Hub id")
    else:
        df = load_processbench({"source": "hub", "id": source})
    for c in ("id", "subset", "label"):
        if c not in df.columns:
            raise ValueError(f"{source}: ProcessBench data lacks column '{c}'")
    df = df.copy()
    df["id"] = df["id"].astype(str)
    if p.is_file():  # the loaders above checked their rows; a cases table is checked here, as they do
        if {"problem", "steps"} <= set(df.columns):
            _validate_cases(df, source)
        else:
            problems = [f"ProcessBench case {cid}: {why}" for cid, why in
                        ((cid, _label_value(lab, None)[1]) for cid, lab in zip(df["id"], df["label"])) if why]
            problems += _duplicate_case_problems(df)
            if problems:
                raise InputError(problems, source)
        df["label"] = [int(v) for v in df["label"]]
    return df
