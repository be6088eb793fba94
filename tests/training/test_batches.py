"""Token-sized micro-batches (prm_lessons.training.batches): the sampler is deterministic for a seed, covers
every instance exactly once per epoch, keeps each micro-batch within its token budget (an instance longer
than it alone), gives every rank the same number of micro-batches through accelerate's own sharding; and
config/paper.yaml's batch geometry, on the policy's real MATH responses in the PRM's step format with the
real Qwen2.5 tokenizer, makes GPU-sized micro-steps (>= 8k padded tokens) and one micro-step per optimizer
step."""
from __future__ import annotations

import json
import random
import statistics
from pathlib import Path

import pytest
import yaml

torch = pytest.importorskip("torch")

from conftest import shared_data_dir  # noqa: E402
from prm_lessons.training import batches as B  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


def lengths_of(n: int, seed: int = 0, lo: int = 40, hi: int = 900) -> list[int]:
    rnd = random.Random(seed)
    return [rnd.randint(lo, hi) for _ in range(n)]


# -- the sampler ----------------------------------------------------------------------------------------

def test_same_seed_same_plan_other_seed_or_epoch_another():
    lengths = lengths_of(500)
    a = list(B.TokenBatchSampler(lengths, 4096, seed=3))
    assert a == list(B.TokenBatchSampler(lengths, 4096, seed=3))
    assert a != list(B.TokenBatchSampler(lengths, 4096, seed=4))
    s = B.TokenBatchSampler(lengths, 4096, seed=3)
    s.set_epoch(1)
    assert list(s) != a  # a new shuffle each epoch, as transformers' samplers


@pytest.mark.parametrize("budget", [512, 4096, 20000])
def test_every_instance_once_per_epoch_within_the_budget(budget):
    lengths = lengths_of(700, seed=1) + [3000, 5000]  # two longer than the smallest budget
    plan = B.epoch_plan(lengths, budget, seed=0)
    flat = [i for b in plan for i in b]
    assert sorted(flat) == list(range(len(lengths)))  # each exactly once
    for b in plan:
        assert B.padded_tokens(lengths, b) <= budget or len(b) == 1  # too long for the budget: alone
    too_long = [i for i, n in enumerate(lengths) if n > budget]
    assert all([i] in plan for i in too_long)
    # length-grouped: far less padding than batches of the shuffled order would have
    assert B.geometry(lengths, plan)["fill"] > 0.9


def test_batches_are_cut_from_length_sorted_megabatches():
    lengths = lengths_of(2000, seed=2)
    budget = 2048
    plan = B.epoch_plan(lengths, budget, seed=5)
    # inside a megabatch the batches run longest first; a new megabatch starts long again
    firsts = [lengths[b[0]] for b in plan]
    drops = sum(1 for x, y in zip(firsts, firsts[1:]) if y > x)
    total = sum(lengths)
    assert 1 <= drops <= total // (B.MEGABATCH_BATCHES * budget) + 1
    for b in plan:
        assert [lengths[i] for i in b] == sorted((lengths[i] for i in b), reverse=True)


def test_a_batch_takes_as_many_rows_as_its_longest_row_allows():
    lengths = [100] * 50 + [300] * 10  # 8,000 tokens: one megabatch, sorted longest first
    plan = B.epoch_plan(lengths, 1000, seed=0)
    assert [len(b) for b in plan] == [3, 3, 3, 3, 10, 10, 10, 10, 8]
    assert [B.padded_tokens(lengths, b) for b in plan] == [900] * 4 + [1000] * 4 + [800]


def test_equal_micro_batch_counts_on_every_rank_through_accelerates_shards():
    """The sampler yields the global list padded to a multiple of the world size; accelerate's
    BatchSamplerShard (what accelerator.prepare wraps a batch sampler in) deals it out whole, round-robin:
    every rank the same count, together every instance, nothing added by accelerate."""
    from accelerate.data_loader import BatchSamplerShard

    lengths = lengths_of(301, seed=7)
    for world in (1, 2, 3, 8):
        sampler = B.TokenBatchSampler(lengths, 3000, seed=11, world_size=world)
        plan = sampler.plan(0)
        assert len(sampler) % world == 0 and 0 <= len(sampler) - len(plan) < world
        shards = [list(BatchSamplerShard(sampler, num_processes=world, process_index=r)) for r in range(world)]
        assert {len(s) for s in shards} == {len(sampler) // world}
        assert all(len(BatchSamplerShard(sampler, num_processes=world, process_index=r)) == len(s)
                   for r, s in enumerate(shards))
        dealt = [b for k in range(len(sampler) // world) for s in shards for b in [s[k]]]
        assert dealt == list(sampler)  # batch i on rank i mod world, in order
        assert sorted({i for s in shards for b in s for i in b}) == list(range(len(lengths)))
        assert list(sampler)[len(plan):] == plan[:len(sampler) - len(plan)]  # the padding repeats the first ones


def test_every_epoch_has_the_planned_count():
    """The Trainer takes len once; an epoch whose shuffle makes fewer micro-batches is padded to it, so
    each epoch gives the Trainer the optimizer steps it scheduled."""
    lengths = lengths_of(400, seed=9)
    sampler = B.TokenBatchSampler(lengths, 1500, seed=0, world_size=2, epochs=4)
    counts = {len(sampler.plan(e)) for e in range(4)}
    for e in range(4):
        sampler.set_epoch(e)
        got = list(sampler)
        assert len(got) == len(sampler) == -(-max(counts) // 2) * 2
        assert sorted({i for b in got for i in b}) == list(range(len(lengths)))


def test_no_budget_no_plan():
    with pytest.raises(ValueError):
        B.epoch_plan([10, 20], 0, seed=0)
    assert list(B.TokenBatchSampler([], 100, seed=0, world_size=2)) == []


# -- config/paper.yaml's batch geometry on real rows ----------------------------------------------------

@pytest.fixture(scope="module")
def paper_instances():
    """The policy's (Qwen2.5-Math-7B-Instruct's) MATH responses of the evaluation harness, 100 problems x 8,
    split into steps and formatted as the PRM's training input (prepare_instances, build_prm_input) with
    the real Qwen2.5 tokenizer at paper.yaml's max_length: the rows paper-scale training batches."""
    from prm_lessons.models.prm import ensure_step_token, step_format
    from prm_lessons.rehearsal.tokenizers import build_tokenizer
    from prm_lessons.steps import split_steps
    from prm_lessons.training.data import prepare_instances
    from prm_lessons.training.settings import settings_from

    settings = settings_from(yaml.safe_load((ROOT / "config" / "paper.yaml").read_text())["training"])
    path = shared_data_dir("bon", "math_cot_100_samples.jsonl")
    rows = []
    for line in path.read_text().splitlines():
        rec = json.loads(line)
        for k, response in enumerate(rec["code"]):
            steps = split_steps(response)
            rows.append({"instance_id": f"{rec['idx']}-{k}", "question": rec["question"], "steps": steps,
                         "labels": [1.0] * len(steps)})
    tokenizer = build_tokenizer("qwen2")  # the base's tokenizer; train_prm adds the step token as here
    ensure_step_token(tokenizer, None, settings["step_token"])
    instances, stats = prepare_instances(rows, tokenizer, step_format(settings), settings["max_length"], "hard")
    assert stats["instances_used"] >= 700
    return settings, instances


def test_paper_micro_steps_are_gpu_sized_and_one_per_optimizer_step(paper_instances):
    """The 7B full fine-tune is communication-bound when a micro-step is ~1k tokens per GPU (batch_size 2
    of these rows: median 897 padded tokens). paper.yaml must make micro-steps of >= 8k padded tokens per
    GPU (median) and take one micro-step per optimizer step (no accumulation: ZeRO-2 then reduces the
    gradients once per step)."""
    settings, instances = paper_instances
    lengths = [len(it["input_ids"]) for it in instances]
    world = max(1, int(settings["gpus"]))
    plan = B.planned_batches(lengths, settings, world)
    g = B.geometry(lengths, plan, world, settings["gradient_accumulation_steps"])
    assert g["padded_tokens_p50"] >= 8192, g
    assert settings["gradient_accumulation_steps"] == 1, "one micro-step per optimizer step"
    if settings["batch_tokens"]:
        assert g["padded_tokens_max"] <= max(settings["batch_tokens"], max(lengths)), g
    assert statistics.median(lengths) < 8192  # the rows themselves are short: the budget does the work
