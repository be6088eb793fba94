"""Encoding helpers of the scoring adapters: the encoded input (ids + score positions), character-offset
marks to token positions, truncation to whole leading steps, chat rendering, the model cards' label tokens.
"""
from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from typing import Sequence


@dataclass
class Encoded:
    input_ids: list[int]
    positions: list[int]  # token index whose output carries step k's score (kept steps only)
    n_steps: int
    extra: dict = field(default_factory=dict)

    @property
    def n_kept(self) -> int:
        return len(self.positions)


def encode_marked(tokenizer, text: str, marks: Sequence[int],
                  add_special_tokens: bool = False) -> tuple[list[int], list[int]]:
    """Tokenise `text` once and map each character offset in `marks` to the token covering it
    (chat-rendered text: add_special_tokens False, the template already holds them)."""
    enc = tokenizer(text, add_special_tokens=add_special_tokens, return_offsets_mapping=True)
    ids, offsets = list(enc["input_ids"]), [tuple(o) for o in enc["offset_mapping"]]
    starts = [s for s, _ in offsets]
    positions = []
    for m in marks:
        k = bisect.bisect_right(starts, m) - 1
        while k >= 0 and not (offsets[k][0] <= m < max(offsets[k][1], offsets[k][0] + 1)):
            k -= 1
        if k < 0:
            raise ValueError(f"no token covers character {m} of the scoring input")
        positions.append(k)
    return ids, positions


def truncate(enc: Encoded, max_length: int | None) -> Encoded:
    """Keep whole leading steps: causal attention makes the cut exact for the kept positions."""
    if max_length is None or len(enc.input_ids) <= max_length:
        return enc
    keep = [p for p in enc.positions if p < max_length]
    cut = (keep[-1] + 1) if keep else min(max_length, len(enc.input_ids))
    return Encoded(enc.input_ids[:cut], keep, enc.n_steps, dict(enc.extra))


def chat_text(tokenizer, messages, add_generation_prompt: bool) -> str:
    return tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=add_generation_prompt)


def _drop_bos(tokenizer, ids: list[int]) -> list[int]:
    """`ids[1:]` of the model cards, which assume the tokenizer prepends BOS (a tokenizer without one
    keeps its first id)."""
    bos = tokenizer.bos_token_id
    return ids[1:] if ids and bos is not None and ids[0] == bos else ids


def math_shepherd_tokens(tokenizer, good: str = "+", bad: str = "-", step_tag: str = "ки"):
    """As the Math-Shepherd card: candidate_tokens = encode(f"{good} {bad}")[1:] ([648, 387] with the
    Mistral v1 tokenizer: "▁+" and "▁-"), step_tag_id = encode(step_tag)[-1] (12902, "▁ки")."""
    pair = _drop_bos(tokenizer, tokenizer.encode(f"{good} {bad}"))
    if len(pair) != 2:
        raise ValueError(f"'{good} {bad}' is not two tokens of this tokenizer ({pair}): not a Math-Shepherd tokenizer")
    return (pair[0], pair[1]), tokenizer.encode(step_tag)[-1]


def rlhflow_tokens(tokenizer, good: str = "+", bad: str = "-") -> tuple[int, int]:
    """As RLHFlow's inference code (RLHF-Reward-Modeling math-rm/prm_evaluate.py): encode('+')[-1],
    encode('-')[-1]: the bare tokens the assistant turn holds (Llama 3: 10 and 12, not " -" = 482). A label
    word of several tokens is refused: [-1] would read its last piece, a different token from the word."""
    out = []
    for word in (good, bad):
        ids = _drop_bos(tokenizer, tokenizer.encode(word))
        if len(ids) != 1:
            raise ValueError(f"label token {word!r} is {len(ids)} tokens of this tokenizer ({ids}); RLHFlow's "
                             "readout takes one token per label (params good_token / bad_token)")
        out.append(ids[0])
    return out[0], out[1]
