"""Test doubles implementing the Engine.generate contract (no model; the protocol around it is tested),
all with one chat tokenizer double: a seeded MC completer and a scripted judge (label tests), a seeded
sampler (sampling tests), a fixed-answer sampler (grading) and a critic answering by case (critic tests)."""
from __future__ import annotations

import random
import re

from prm_lessons.generation import Completion, Engine


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
