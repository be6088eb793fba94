"""MC labelling cost: the early-stopped protocol vs the naive one (K completions for every step), side
by side in one run on the same responses with the same per-completion seeds.

Three runs: `naive` (its completions are recorded), `early` (fresh from the engine: the cost measured)
and `early-replay` (the early protocol again, served the naive run's own completions for the same
prompt and seed). Prints generated tokens per labelled response, their ratio (goal ≥ 3×) and whether
the hard labels at threshold 0 are identical. The replay is the exact check of "same completions ->
same labels"; the fresh run's labels may differ where vLLM's batched bf16 kernels drew other tokens for
a seed (the bench prints how many fresh completions equal the naive ones).

Responses: the embedded default's sampled training responses (results/samples/train.parquet) when
they exist, else a small sample generated here with the embedded model (resources/models/smollm2)
on reasoning-gym basic_arithmetic problems.

    python bench/mc_cost.py [--samples results/samples/train.parquet] [--responses N] [--k 8] [--batch-invariant]

About 12 minutes on 2 CPU cores at K=8 for all 64 responses (the naive run is most of it); with
--batch-invariant (one sequence at a time, so the fresh run also draws bit-identical completions) far longer.
"""
from __future__ import annotations

import argparse
import logging
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))


def load_responses(args, engine, config):

    from prm_lessons.tables import read_table

    path = Path(args.samples)
    if path.exists():
        df = read_table(path, "samples")
        src = str(path)
    else:
        from prm_lessons.data.problems import load_problems
        from prm_lessons.generation.sampling import sample_problems
        from prm_lessons.grading.samples import grade_samples

        spec = dict(config["problems"]["train"])
        spec["size"] = max(1, (args.responses or 16) // args.samples_per_problem)
        problems = load_problems("train", spec)
        df = sample_problems(engine, problems, n=args.samples_per_problem,
                             sampling={**config["sampling"], "max_tokens": args.response_tokens})
        df = grade_samples(df, timeout_s=config["grading"]["timeout_s"], workers=config["grading"]["workers"])
        src = f"generated here ({len(problems)} basic_arithmetic problems × {args.samples_per_problem})"
    df = df[df["steps"].map(len) > 0].sort_values(["problem_id", "sample_idx"])
    return (df.head(args.responses) if args.responses else df).reset_index(drop=True), src


class RecordedEngine:
    """Wraps the engine: records every seeded completion of the naive run, then replays them, so the
    early protocol can be run a second time on exactly the completions the naive one drew. A batched
    engine (vLLM bf16) draws different tokens for the same seed in another batch (kernels vary with the
    batch shape); the replay checks the protocol's claim (same completions -> same hard labels) without
    that engine noise, and fails loudly if the early protocol asks for a completion the naive one never
    drew. Only the naive run records: a later fresh run must not overwrite what the replay reuses."""

    def __init__(self, engine):
        self.engine, self.tokenizer, self.stats = engine, engine.tokenizer, engine.stats
        self.store: dict = {}
        self.mode = "record"  # record | pass | replay
        self.fresh_same = self.fresh_total = 0  # fresh completions equal to the naive run's (same prompt, seed)

    def generate(self, prompts, spec, seeds=None):
        if self.mode == "replay":
            return [self.store[(p, s)] for p, s in zip(prompts, seeds)]
        outs = self.engine.generate(prompts, spec, seeds)
        if self.mode == "record":
            self.store.update({(p, s): o for p, s, o in zip(prompts, seeds, outs)})
        else:
            self.fresh_total += len(outs)
            self.fresh_same += sum(self.store.get((p, s)) == o for p, s, o in zip(prompts, seeds, outs))
        return outs


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--config", default=str(ROOT / "config" / "config.yaml"))
    ap.add_argument("--samples", default=str(ROOT / "results" / "samples" / "train.parquet"))
    ap.add_argument("--model-dir", default=None, help="default: the completer of --config")
    ap.add_argument("--responses", type=int, default=0, help="first N responses (0 = all: the embedded run's 64)")
    ap.add_argument("--samples-per-problem", type=int, default=2)
    ap.add_argument("--response-tokens", type=int, default=160)
    ap.add_argument("--k", type=int, default=None, help="completions per step (default: mc.completions)")
    ap.add_argument("--max-tokens", type=int, default=None, help="tokens per completion (default: mc.max_tokens)")
    ap.add_argument("--round-size", type=int, default=1)
    ap.add_argument("--backend", default="auto", choices=["auto", "vllm", "transformers"],
                    help="transformers generates seeded requests one at a time: batch-invariant, so both "
                         "protocols see bit-identical completions; vLLM batches them (bf16 batch effects)")
    ap.add_argument("--dtype", default=None, help="override the model entry's dtype (e.g. float32)")
    ap.add_argument("--batch-invariant", action="store_true",
                    help="vLLM: one sequence at a time, no prefix cache, so both protocols draw bit-identical "
                         "seeded completions (slower; the token counts are what matter here)")
    args = ap.parse_args()
    logging.basicConfig(level=logging.WARNING)

    from prm_lessons.config import load_config, model_entry, model_path
    from prm_lessons.generation.engine import load_engine
    from prm_lessons.labels.mc import (
        MCInput,
        Needs,
        hard_labels,
        make_grade_fn,
        make_prompt_fn,
        run_mc,
        spec_from_config,
    )

    config = load_config(args.config)
    completer = config["roles"].get("completer") or config["roles"]["policy"]
    model_dir = args.model_dir or str(ROOT / model_path(config, completer))
    if not Path(model_dir).exists():
        print(f"model directory {model_dir} not found (build it with the workflow's embedded_model rule)")
        return 1
    mc = dict(config["mc"])
    k = args.k or int(mc["completions"])
    if args.max_tokens:
        mc["max_tokens"] = args.max_tokens
    t0 = time.perf_counter()
    entry = model_entry(config, completer)
    if args.dtype:
        entry["dtype"] = args.dtype
    engine = load_engine(model_dir, entry, args.backend, batch_invariant=args.batch_invariant)
    print(f"engine: {engine.backend} ({entry['dtype']}{', batch-invariant' if args.batch_invariant else ''}), "
          f"loaded in {time.perf_counter() - t0:.0f}s")
    df, src = load_responses(args, engine, config)
    items = [MCInput(r.problem_id, int(r.sample_idx), r.question, str(r.answer), list(r.steps), bool(r.correct))
             for r in df.itertuples()]
    n_steps = sum(len(it.steps) for it in items)
    print(f"responses: {len(items)} from {src}; {n_steps} steps; accuracy {df['correct'].mean():.2f}; "
          f"K={k}, max_tokens={mc['max_tokens']}")

    common = dict(k=k, needs=Needs.from_params({"thresholds": [0.0], "soft": False}), seed=int(mc["seed"]),
                  spec=spec_from_config(mc),
                  prompt_fn=make_prompt_fn(engine.tokenizer, config["sampling"]["system_prompt"]),
                  grade_fn=make_grade_fn(config["grading"]["timeout_s"], config["grading"].get("workers")),
                  separator=config["sampling"]["step_separator"], round_size=args.round_size)
    recorded = RecordedEngine(engine)
    results = {}
    graded: dict[str, dict] = {}  # per run: (text, gold) -> correct, to find texts graded differently
    grade_fn = common["grade_fn"]

    def recording_grade_fn(texts, golds):
        ok = grade_fn(texts, golds)
        graded[label].update(zip(zip(texts, golds), ok))
        return ok

    common["grade_fn"] = recording_grade_fn
    for protocol, label in (("naive", "naive"), ("early", "early"), ("early", "early-replay")):
        recorded.mode = {"naive": "record", "early": "pass", "early-replay": "replay"}[label]
        graded[label] = {}
        t0 = time.perf_counter()
        calls0 = engine.stats.calls
        rows = run_mc(items, recorded, protocol=protocol, **common)
        results[label] = rows
        tok = sum(r["tokens_generated"] for r in rows)
        comp = sum(r["n_completions"] for r in rows)
        print(f"{label:>12}: {tok:7d} tokens, {comp:5d} completions, {engine.stats.calls - calls0:3d} engine calls, "
              f"{tok / len(rows):8.1f} tokens per labelled response, {time.perf_counter() - t0:6.1f}s")

    def labels(rows):
        return [hard_labels(r["n_success"], r["n_total"], k, 0) for r in rows]

    tn = sum(r["tokens_generated"] for r in results["naive"])
    for label in ("early", "early-replay"):
        te = sum(r["tokens_generated"] for r in results[label])
        same = [a == b for a, b in zip(labels(results["naive"]), labels(results[label]))]
        print(f"{label}: ratio naive/early tokens {tn / max(te, 1):.2f}x (goal >= 3x); hard labels at threshold 0 "
              f"identical to naive: {all(same)} ({sum(same)}/{len(same)} responses)")
    for a, b, it in zip(results["naive"], results["early-replay"], items):
        if labels([a]) != labels([b]):  # same completions, different labels: show the counts per step
            print(f"  differs {it.problem_id}#{it.sample_idx}: naive successes/total "
                  f"{list(zip(a['n_success'], a['n_total']))} vs early {list(zip(b['n_success'], b['n_total']))}")
    print(f"fresh early completions identical to the naive run's for the same (prompt, seed): "
          f"{recorded.fresh_same}/{recorded.fresh_total} (the rest: batched bf16 kernels, not the protocol)")
    regraded = [(key, ok) for key, ok in graded["early-replay"].items()
                if key in graded["naive"] and graded["naive"][key] != ok]
    print(f"distinct texts graded: naive {len(graded['naive'])}, replay {len(graded['early-replay'])}, in both "
          f"{len(set(graded['naive']) & set(graded['early-replay']))}; graded differently: {len(regraded)}")
    for (text, gold), ok in regraded[:10]:
        print(f"  gold {gold!r}: naive {graded['naive'][(text, gold)]}, replay {ok}; text tail {text[-300:]!r}")
    pos = [x for ls in labels(results["early"]) for x in (ls or [])]
    print(f"labelled steps kept {len(pos)} of {n_steps}, positive rate {sum(pos) / max(len(pos), 1):.2f}; "
          "'early' draws its completions fresh from the engine (the cost measured), 'early-replay' reuses the "
          "naive run's completions for the same (prompt, seed)")
    return 0


if __name__ == "__main__":  # vLLM spawns worker processes
    sys.exit(main())
