"""Adapter options that config.validate_config checks while the DAG is built (torch-free, like config):
those of adapters token_classification and declared (prms.models.<name>.params).
"""
from __future__ import annotations

import difflib

# TRL's PRMConfig step_separator default; label 1 is what a TRL PRM is trained to give a correct step
# (tokenize_row: int(True) = 1)
TOKEN_CLASSIFICATION_DEFAULTS = {"step_separator": "\n", "positive_label": 1, "score": "softmax"}
TOKEN_CLASSIFICATION_SCORES = ("softmax", "sigmoid")


def check_token_classification_params(params: dict, num_labels: int | None = None) -> None:
    """Adapter token_classification's options: known keys of the right types, and (with the checkpoint's
    `num_labels`) a label index the head has; softmax needs two labels or more. Raises ValueError naming
    `params.<key>` (config.validate_config adds the entry's path)."""
    unknown = sorted(set(params) - set(TOKEN_CLASSIFICATION_DEFAULTS))
    if unknown:
        raise ValueError(f"params.{unknown[0]}: unknown option of adapter token_classification"
                         f"{_nearest(unknown[0], TOKEN_CLASSIFICATION_DEFAULTS)} "
                         f"(allowed: {', '.join(TOKEN_CLASSIFICATION_DEFAULTS)})")
    p = {**TOKEN_CLASSIFICATION_DEFAULTS, **params}
    if not isinstance(p["step_separator"], str) or not p["step_separator"]:
        raise ValueError(f"params.step_separator: {p['step_separator']!r} is not a non-empty string")
    label = p["positive_label"]
    if isinstance(label, bool) or not isinstance(label, int) or label < 0:
        raise ValueError(f"params.positive_label: {label!r} is not a label index (an integer >= 0)")
    if p["score"] not in TOKEN_CLASSIFICATION_SCORES:
        raise ValueError(f"params.score: {p['score']!r} is not one of {', '.join(TOKEN_CLASSIFICATION_SCORES)}")
    if num_labels is not None:
        if label >= num_labels:
            raise ValueError(f"params.positive_label: {label} is not a label of this checkpoint (num_labels "
                             f"{num_labels}: indices 0..{num_labels - 1}; a 1-label head: positive_label 0, "
                             "score sigmoid)")
        if p["score"] == "softmax" and num_labels < 2:
            raise ValueError("params.score: softmax over a 1-label head is always 1 (use score: sigmoid, "
                             "positive_label: 0)")



# Adapter `declared`: a PRM described by its parameters alone (scoring.adapters.DeclaredAdapter).
MODEL_CLASSES = ("causal_lm", "token_classification", "process_reward")
PROMPTS = ("plain", "chat", "chat_turns")
TOKENIZE = ("alone", "in_context")
POSITIONS = ("tag_last", "before_tag")
ACTIVATIONS = ("softmax", "sigmoid")
DECLARED_KEYS = ("model_class", "step_tag", "prompt", "tokenize", "question_template", "step_template", "step_join",
                 "system_prompt", "bos", "readout")
READOUT_KEYS = ("label_ids", "class_index", "activation", "position")
# the tokenisation each prompt form allows, the first its default: `chat` is THE step-format contract
# (steps.build_prm_input: pieces tokenised alone); `chat_turns` renders the whole conversation once
PROMPT_TOKENIZE = {"plain": ("alone", "in_context"), "chat": ("alone",), "chat_turns": ("in_context",)}


def _is_index(x) -> bool:
    return isinstance(x, int) and not isinstance(x, bool) and x >= 0


def check_declared_params(params: dict, num_labels: int | None = None, vocab_size: int | None = None) -> dict:
    """Adapter declared's options, resolved with their defaults; ValueError naming `params.<key>` (or
    `params.readout.<key>`) for an unknown key, a wrong type or value, a combination that cannot be built,
    and, where the checkpoint's `num_labels` (classification heads) or `vocab_size` (a causal LM's label ids)
    is known, an index out of range. config.validate_config adds the entry's path."""
    p = _checked_mapping(params, "params", DECLARED_KEYS, "unknown option of adapter declared")
    if "model_class" not in p:
        raise ValueError(f"params.model_class: required by adapter declared (one of {', '.join(MODEL_CLASSES)})")
    for key, allowed in (("model_class", MODEL_CLASSES), ("prompt", PROMPTS)):
        if key in p and p[key] not in allowed:
            raise ValueError(f"params.{key}: {p[key]!r} is not one of {', '.join(allowed)}")
    p.setdefault("prompt", "plain")
    p.setdefault("tokenize", PROMPT_TOKENIZE[p["prompt"]][0])
    if p["tokenize"] not in PROMPT_TOKENIZE[p["prompt"]]:
        raise ValueError(f"params.tokenize: {p['tokenize']!r} with prompt {p['prompt']} (allowed: "
                         f"{', '.join(PROMPT_TOKENIZE[p['prompt']])})")
    for key, default in (("step_tag", None), ("question_template", "{question}"), ("step_template", "{step}"),
                         ("step_join", "")):
        v = p.setdefault(key, default)
        if key == "step_tag" and v is None:
            raise ValueError("params.step_tag: required (the text appended after every step, e.g. \"\\n\")")
        if not isinstance(v, str) or (key == "step_tag" and not v):
            raise ValueError(f"params.{key}: {v!r} is not a {'non-empty ' if key == 'step_tag' else ''}string")
    for key, field in (("question_template", "question"), ("step_template", "step")):
        try:
            p[key].format(question="", step="", k=1)
        except (KeyError, IndexError, ValueError) as e:
            raise ValueError(f"params.{key}: {p[key]!r} is not a template of {{{field}}} (and {{k}}, the "
                             f"step's number): {e}") from None
        if "{" + field + "}" not in p[key]:
            raise ValueError(f"params.{key}: {p[key]!r} lacks {{{field}}}")
    if p["prompt"] == "chat":  # the contract's format: nothing around the steps but the step token
        for key, default in (("question_template", "{question}"), ("step_template", "{step}"), ("step_join", "")):
            if p[key] != default:
                raise ValueError(f"params.{key}: prompt chat is the step-format contract (steps.build_prm_input): "
                                 f"the steps and the step tag only; leave {key} out")
    if p["prompt"] == "chat_turns" and p["step_join"]:
        raise ValueError("params.step_join: prompt chat_turns puts each step in its own user turn; leave it out")
    sp = p.setdefault("system_prompt", None)
    if sp is not None and not isinstance(sp, str):
        raise ValueError(f"params.system_prompt: {sp!r} is not a string (or null: no system message)")
    if sp is not None and p["prompt"] == "plain":
        raise ValueError("params.system_prompt: only with prompt chat or chat_turns")
    bos = p.setdefault("bos", p["prompt"] == "plain")  # a chat template writes its own BOS
    if not isinstance(bos, bool):
        raise ValueError(f"params.bos: {bos!r} is not true or false")
    if bos and p["prompt"] != "plain":
        raise ValueError(f"params.bos: prompt {p['prompt']} is rendered by the chat template, which holds the BOS")
    p["readout"] = _check_readout(p.get("readout"), p["model_class"], num_labels, vocab_size)
    return p


def _checked_mapping(value, path: str, allowed, unknown_msg: str) -> dict:
    """A copy of `value`; ValueError naming `path` when it is not a mapping or has a key not in `allowed`."""
    if not isinstance(value, dict):
        raise ValueError(f"{path}: {value!r} is not a mapping")
    unknown = sorted(set(value) - set(allowed))
    if unknown:
        raise ValueError(f"{path}.{unknown[0]}: {unknown_msg}{_nearest(unknown[0], allowed)} "
                         f"(allowed: {', '.join(allowed)})")
    return dict(value)


def _check_readout(r, model_class: str, num_labels: int | None, vocab_size: int | None) -> dict:
    r = _checked_mapping({} if r is None else r, "params.readout", READOUT_KEYS, "unknown")
    pos = r.setdefault("position", "tag_last")
    if pos not in POSITIONS:
        raise ValueError(f"params.readout.position: {pos!r} is not one of {', '.join(POSITIONS)}")
    if model_class == "causal_lm":
        for key in ("class_index", "activation"):
            if key in r:
                raise ValueError(f"params.readout.{key}: a causal LM is read through label_ids (the logits of a "
                                 "good and a bad token, softmax over the two)")
        ids = r.get("label_ids")
        if not isinstance(ids, list) or len(ids) != 2 or not all(
                _is_index(i) or (isinstance(i, str) and i) for i in ids):
            raise ValueError(f"params.readout.label_ids: {ids!r} is not [good, bad]: two token ids or non-empty "
                             "token strings (required with model_class causal_lm)")
        for i in ids:
            if isinstance(i, int) and vocab_size is not None and i >= vocab_size:
                raise ValueError(f"params.readout.label_ids: token id {i} is not in the vocabulary "
                                 f"(vocab_size {vocab_size})")
        if ids[0] == ids[1]:
            raise ValueError(f"params.readout.label_ids: good and bad are the same token {ids[0]!r}")
        return r
    if "label_ids" in r:
        raise ValueError(f"params.readout.label_ids: model_class {model_class} has a classification head: "
                         "use class_index and activation")
    idx, act = r.setdefault("class_index", 1), r.setdefault("activation", "softmax")
    if not _is_index(idx):
        raise ValueError(f"params.readout.class_index: {idx!r} is not a label index (an integer >= 0)")
    if act not in ACTIVATIONS:
        raise ValueError(f"params.readout.activation: {act!r} is not one of {', '.join(ACTIVATIONS)}")
    if num_labels is not None:
        if idx >= num_labels:
            raise ValueError(f"params.readout.class_index: {idx} is not a label of this head (num_labels "
                             f"{num_labels}: indices 0..{num_labels - 1})")
        if act == "softmax" and num_labels < 2:
            raise ValueError("params.readout.activation: softmax over a 1-label head is always 1 (use sigmoid, "
                             "class_index 0)")
    return r


def _nearest(key, allowed) -> str:
    """'; did you mean `<key>`?' for a mistyped option (config.base.did_you_mean; no import: config imports this)."""
    close = difflib.get_close_matches(str(key), [str(k) for k in allowed], n=1)
    return f"; did you mean `{close[0]}`?" if close else ""
