"""Test doubles implementing the Engine.generate contract (no model; the protocol around it is tested),
all with one chat tokenizer double: a seeded MC completer and a scripted judge (label tests), a seeded
sampler (sampling tests), a fixed-answer sampler (grading), a critic answering by case (critic tests), a
Best-of-N judge (verifier tests) and a sampler with a context limit (hostile-data and policy tests)."""
from __future__ import annotations

import random
import re

import pandas as pd

from conftest import tiny_tokenizer
from prm_lessons.evaluation.verifiers import PAIRWISE_FORCE, POINTWISE_FORCE
from prm_lessons.generation.engine import Completion, Engine


class FakeTokenizer:
    def apply_chat_template(self, messages, tokenize=False, add_generation_prompt=True):
        out = "".join(f"<|{m['role']}|>{m['content']}<|end|>" for m in messages)
        return out + ("<|assistant|>" if add_generation_prompt else "")


class SeededCompleter(Engine):
    """MC completer: a completion succeeds (writes the gold answer) with probability p_ok unless the
    prompt's prefix contains the marker BAD (then it never does). The draw depends only on the seed,
    so the same (prompt, seed) always gives the same completion, whatever else is in the batch."""

    backend = "fake"

    def __init__(self, answer="42", p_ok=0.35, n_tokens=10, never_finish=False):
        super().__init__()
        self.tokenizer = FakeTokenizer()
        self.answer, self.p_ok, self.n_tokens, self.never_finish = answer, p_ok, n_tokens, never_finish
        self.calls: list[int] = []

    def generate(self, prompts, spec, seeds=None):
        assert seeds is not None and len(seeds) == len(prompts)
        assert spec.n == 1
        self.calls.append(len(prompts))
        out = []
        for p, s in zip(prompts, seeds):
            rnd = random.Random(s)
            if self.never_finish:
                out.append([Completion("and so on " * 5, self.n_tokens, "length")])
                continue
            ok = "BAD" not in p and rnd.random() < self.p_ok
            text = f" so the answer is \\boxed{{{self.answer if ok else 'wrong'}}}"
            out.append([Completion(text, self.n_tokens, "stop")])
        return out


def boxed_grade(texts, golds):
    res = []
    for t, g in zip(texts, golds):
        m = re.findall(r"\\boxed\{([^}]*)\}", t)
        res.append(bool(m) and m[-1] == g)
    return res


class SeedEngine(Engine):
    """Sampler double: output depends only on the request seed, like a seeded sampler."""

    backend = "fake"
    tokenizer = FakeTokenizer()

    def generate(self, prompts, spec, seeds=None):
        return [[Completion(f"step one {s}\n\nso \\boxed{{{s % 3}}}", 5, "stop") for _ in range(spec.n)]
                for s in seeds]


class FixedEngine(Engine):
    """Returns the same completion for every request, spec.n times."""

    backend = "fake"
    tokenizer = FakeTokenizer()

    def __init__(self, text, n_tokens=5):
        super().__init__()
        self.text, self.n_tokens = text, n_tokens

    def generate(self, prompts, spec, seeds=None):
        return [[Completion(self.text, self.n_tokens, "stop")] * spec.n for _ in prompts]


class ScriptedEngine(Engine):
    """Critic double: answers by case, with the text given for the problem its prompt contains."""

    backend = "scripted"

    def __init__(self, answers):
        super().__init__()
        self.tokenizer, self.answers, self.prompts = FakeTokenizer(), answers, []

    def generate(self, prompts, spec, seeds=None):
        self.prompts += prompts
        out = []
        for p in prompts:
            key = next(k for k in self.answers if k in p)
            out.append([Completion(text=self.answers[key], n_tokens=5, finish_reason="stop")])
        return out


class ScriptedJudge(Engine):
    """Judge double: returns the scripted texts in order of requests; continuations (forced answers)
    come from `forced`."""

    backend = "fake"

    def __init__(self, texts, forced="3}", cut=()):
        super().__init__()
        self.tokenizer = FakeTokenizer()
        self.texts, self.forced, self.prompts = list(texts), forced, []
        self.cut, self.served = set(cut), 0  # indices of texts returned as cut off at max_tokens

    def generate(self, prompts, spec, seeds=None):
        self.prompts.extend(prompts)
        out = []
        for _ in prompts:
            if spec.max_tokens <= 16:
                out.append([Completion(self.forced, 2, "stop")])
            else:
                out.append([Completion(self.texts.pop(0), 50, "length" if self.served in self.cut else "stop")])
                self.served += 1
        return out


class QualityJudge(Engine):
    """Judge double. Steps carry a marker: q=<int> (pairwise: the higher wins) and ok/bad (pointwise:
    the step's verdict). `mode` picks what it answers; `script` overrides answers by prompt substring
    (text, finish_reason); the forced continuation (prompt ending in a force suffix) answers `forced`."""

    backend = "fake"

    def __init__(self, script=None, forced=None):
        super().__init__()
        self.tokenizer = FakeTokenizer()
        self.script, self.forced = dict(script or {}), forced
        self.calls: list[int] = []
        self.prompts: list[str] = []

    def generate(self, prompts, spec, seeds=None):
        self.calls.append(len(prompts))
        self.prompts += prompts
        return [[self._answer(p)] for p in prompts]

    def _answer(self, p):
        if p.endswith(PAIRWISE_FORCE) or p.endswith(POINTWISE_FORCE):
            return Completion(self.forced or "", 2, "stop")
        for key, (text, finish) in self.script.items():
            if key in p:
                return Completion(text, 7, finish)
        if "<response_a>" in p:
            qa = int(re.search(r"<response_a>.*?q=(\d+)", p, re.S).group(1))
            qb = int(re.search(r"<response_b>.*?q=(\d+)", p, re.S).group(1))
            return Completion(f"B is better. \\boxed{{{'B' if qb > qa else 'A'}}}", 9, "stop")
        tagged = re.findall(r"<paragraph_(\d+)>\n(.*?)\n</paragraph_", p, re.S)
        lines = [f"Paragraph {i}: {'incorrect' if 'bad' in s else 'correct'}" for i, s in tagged]
        return Completion("Checked.\n\nVerdicts:\n" + "\n".join(lines), 11, "stop")


# a sampler with a context limit and its inputs (hostile-data and policy tests)
SYSTEM = "Please reason step by step, and put your final answer within \\boxed{}."
SAMPLING = {"temperature": 0.7, "top_p": 0.8, "max_tokens": 16, "seed": 0, "step_separator": "\n\n",
            "batch_size": 8, "system_prompt": SYSTEM}


class LimitedEngine(Engine):
    """A sampler with a context limit, failing like vLLM 0.32: a prompt of max_model_len tokens or more
    fails the whole call with an error that names no problem."""

    backend = "fake"

    def __init__(self, max_model_len: int):
        super().__init__()
        self.tokenizer, self.max_model_len, self.prompts = tiny_tokenizer(), max_model_len, []

    def generate(self, prompts, spec, seeds=None):
        for p in prompts:
            n = len(self.tokenizer.encode(p))
            if n >= self.max_model_len:
                raise ValueError(f"VLLMValidationError: The decoder prompt (length {n}) is longer than the "
                                 f"maximum model length of {self.max_model_len}.")
        self.prompts += prompts
        return [[Completion("We add.\n\nso \\boxed{2}", 5, "stop") for _ in range(spec.n)] for _ in prompts]


def four_problems(long_at=(2,)):
    qs = ["What is 1 + 1?" if i not in long_at else "this step is right. " * 400 for i in range(4)]
    return pd.DataFrame({"problem_id": [f"d-{i:05d}" for i in range(4)], "dataset": "d", "question": qs,
                         "answer": "2", "gold_steps": None})
