"""Steps: splitting responses into steps, and THE step-format contract shared by labelling,
training and scoring.

`build_prm_input` is the only place that decides how (question, steps) becomes PRM input tokens and
which token positions carry each step's label / score. Training aligns labels to `step_positions`;
scoring reads logits there. tests/test_steps.py pins it.
"""
from __future__ import annotations

from dataclasses import dataclass, field

DEFAULT_SEPARATOR = "\n\n"
# the Qwen2.5-Math chain-of-thought system prompt: policy sampling, and the released Qwen PRMs' input
COT_SYSTEM_PROMPT = "Please reason step by step, and put your final answer within \\boxed{}."


def split_steps(text: str, separator: str = DEFAULT_SEPARATOR) -> list[str]:
    """Split a response into steps on `separator`; steps are stripped and empty ones dropped
    (several blank lines in a row do not create empty steps)."""
    if text is None:
        return []
    return [s.strip() for s in str(text).split(separator) if s.strip()]


def join_steps(steps: list[str], separator: str = DEFAULT_SEPARATOR) -> str:
    return separator.join(steps)


@dataclass(frozen=True)
class StepFormat:
    """How a PRM sees a solution: a special token after every step inside the assistant turn.

    step_token: the separator token whose position carries the step's score (Qwen PRMs: <extra_0>).
    system_prompt: system message of the chat (None → the tokenizer template's default).
    use_chat_template: render question/solution with the tokenizer's chat template; otherwise
        plain "question\n\n" + steps.
    """

    step_token: str = "<extra_0>"
    system_prompt: str | None = COT_SYSTEM_PROMPT
    use_chat_template: bool = True

    def to_dict(self) -> dict:
        return {"step_token": self.step_token, "system_prompt": self.system_prompt,
                "use_chat_template": self.use_chat_template}

    @classmethod
    def from_dict(cls, d: dict) -> "StepFormat":
        return cls(**{k: d[k] for k in ("step_token", "system_prompt", "use_chat_template") if k in d})


@dataclass
class PrmInput:
    input_ids: list[int]
    step_positions: list[int]  # index into input_ids of the step token after each kept step
    n_steps: int  # steps given
    n_steps_kept: int  # steps whose token fits in max_length (whole steps only)
    extra: dict = field(default_factory=dict)

    @property
    def truncated(self) -> bool:
        return self.n_steps_kept < self.n_steps


def _prefix_text(tokenizer, question: str, fmt: StepFormat) -> str:
    if not fmt.use_chat_template:
        return question + DEFAULT_SEPARATOR
    messages = []
    if fmt.system_prompt is not None:
        messages.append({"role": "system", "content": fmt.system_prompt})
    messages.append({"role": "user", "content": question})
    return tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)


# stands for the question while the chat template is rendered, to find where the row's text lies in it
_QUESTION_SLOT = "\ue000prm-lessons question\ue000"


def _text_ids(tokenizer, text: str) -> list[int]:
    """A row's text as text: a literal special token in it ("<extra_0>", "<|im_end|>") stays characters."""
    return list(tokenizer(text, add_special_tokens=False, split_special_tokens=True)["input_ids"])


def _prefix_ids(tokenizer, question: str, fmt: StepFormat) -> list[int]:
    """The prompt's ids: the template's own special tokens parsed, the question's text kept text. A question
    without a special-token literal is tokenised with its template in one piece (the released cards' ids,
    exactly); one with them in three pieces around it, so it cannot open a turn or mark a step."""
    if not fmt.use_chat_template:
        return _text_ids(tokenizer, question + DEFAULT_SEPARATOR)
    if list(tokenizer(question, add_special_tokens=False)["input_ids"]) == _text_ids(tokenizer, question):
        return list(tokenizer(_prefix_text(tokenizer, question, fmt), add_special_tokens=False)["input_ids"])
    rendered = _prefix_text(tokenizer, _QUESTION_SLOT, fmt)
    if rendered.count(_QUESTION_SLOT) != 1:
        raise ValueError("the chat template does not render the question as given; cannot keep its "
                         "special-token literals text")
    before, after = rendered.split(_QUESTION_SLOT)
    return (list(tokenizer(before, add_special_tokens=False)["input_ids"]) + _text_ids(tokenizer, question)
            + list(tokenizer(after, add_special_tokens=False)["input_ids"]))


def build_prm_input(tokenizer, question: str, steps: list[str], fmt: StepFormat,
                    max_length: int | None = None) -> PrmInput:
    """(question, steps) → token ids with `fmt.step_token` after every step, and its positions.

    Steps are tokenised piecewise (prefix, then each step text, then the step token id) so a step's
    boundary never merges with its neighbour and positions are exact. With max_length, only whole
    steps that fit are kept; the caller sees n_steps_kept < n_steps and must report it.
    """
    step_id = tokenizer.convert_tokens_to_ids(fmt.step_token)
    if step_id is None or step_id == tokenizer.unk_token_id:
        raise ValueError(f"step token {fmt.step_token!r} is not in the tokenizer's vocabulary "
                         "(add it as a special token first)")
    ids = _prefix_ids(tokenizer, question, fmt)
    if step_id in ids:  # a system prompt or template holding the step token: one score too many
        raise ValueError(f"the prompt before the steps holds the step token {fmt.step_token!r} (system prompt "
                         "or chat template): every step's position would be off by one")
    positions: list[int] = []
    kept = 0
    for step in steps:
        # step text is text: a literal "<extra_0>" (or "<|im_end|>") inside a step must not become a special
        # token, or the model would see a step boundary / turn end that is not there
        piece = _text_ids(tokenizer, step)
        if max_length is not None and len(ids) + len(piece) + 1 > max_length:
            break
        ids.extend(piece)
        positions.append(len(ids))
        ids.append(step_id)
        kept += 1
    return PrmInput(input_ids=ids, step_positions=positions, n_steps=len(steps), n_steps_kept=kept)
