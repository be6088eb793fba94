"""The prms section: released PRMs with their adapter params (one model per adapter family)."""
from __future__ import annotations

import typing
from typing import Annotated, Literal

from pydantic import Discriminator, Field, Tag, model_validator

from .base import MISSING, Name, Number, Section, Text, Threshold, fail, when


class TokenClassificationParams(Section):
    step_separator: Annotated[str, Field(min_length=1)] = Field(
        default='\n',
        description=(
            'Text appended after every step, tokenised alone (TRL PRMConfig.step_separator; '
            "axolotl's step_separator); a step's score is read at the last token of its separator. "
            'Must be what the PRM was trained with.'))
    positive_label: Annotated[int, Field(ge=0)] = Field(
        default=1,
        description=(
            "Index of the label meaning 'this step is correct' (TRL: labels True -> 1). Checked "
            "against the checkpoint's num_labels: here for a local model, when the scoring job loads "
            'it for a Hub model.'))
    score: Literal['softmax', 'sigmoid'] = Field(
        default='softmax',
        description=(
            'softmax: the step score is softmax(logits)[positive_label] (a 2-label TRL PRM); '
            'sigmoid: sigmoid(logits[positive_label]) (e.g. a 1-label BCE head with positive_label '
            '0).'))


class DeclaredParamsReadout(Section):
    label_ids: Annotated[
        list[Annotated[int, Field(ge=0)] | Annotated[str, Field(min_length=1)]], Field(min_length=2, max_length=2)
    ] | MISSING = Field(
        default=MISSING,
        description=(
            'model_class causal_lm (required): [good, bad], two token ids or token strings (a '
            'string: the last token of its own tokenisation); the score is softmax over the two '
            'logits, P(good).'))
    class_index: Annotated[int, Field(ge=0)] | MISSING = Field(
        default=MISSING,
        description=(
            "Classification heads: the label meaning 'this step is correct' [1]; checked against the "
            "head's labels (process_reward: 2; a local token_classification checkpoint: its "
            'config.json).'))
    activation: Literal['softmax', 'sigmoid'] | MISSING = Field(
        default=MISSING,
        description=(
            'Classification heads: softmax over the labels at class_index [softmax], or sigmoid of '
            'that logit (a 1-label head: class_index 0).'))
    position: Literal['tag_last', 'before_tag'] | MISSING = Field(
        default=MISSING,
        description=(
            'tag_last [default]: the last token of the step tag; before_tag: the token before it (a '
            "causal LM whose logits there predict the tag, as RLHFlow's assistant '+')."))


class DeclaredParams(Section):
    model_class: Literal['causal_lm', 'token_classification', 'process_reward'] = Field(
        description=(
            "causal_lm (AutoModelForCausalLM: softmax over two label tokens' logits), "
            'token_classification (AutoModelForTokenClassification, any architecture), '
            'process_reward (a Qwen2ForProcessRewardModel-style body + Linear-ReLU-Linear `score` '
            "head over 2 labels, built here; the model entry's trust_remote_code: true runs the "
            "repository's class instead)."))
    step_tag: Annotated[str, Field(min_length=1)] = Field(
        description=(
            "Text appended after every step (a separator such as ' ', a tag such as ' ки', a special "
            "token such as <extra_0>, or with prompt chat_turns the assistant's reply such as '+'); "
            "the step's score is read at its last token (readout.position)."))
    prompt: Literal['plain', 'chat', 'chat_turns'] | MISSING = Field(
        default=MISSING,
        description=(
            'plain [default]: question_template, then each step_template + step_tag, step_join '
            'between. chat: the chat template renders system (system_prompt) + user (the question) '
            'and the steps follow in the assistant turn, each followed by step_tag, a single '
            'vocabulary token (the step-format contract, as Qwen2.5-Math-PRM). chat_turns: one user '
            'turn per step (the first: question_template + the step), each answered by an assistant '
            "turn holding step_tag (as RLHFlow's PRMs)."))
    tokenize: Literal['alone', 'in_context'] | MISSING = Field(
        default=MISSING,
        description=(
            'alone [default for plain and chat]: each piece (prompt, step, tag) tokenised on its '
            "own, no special tokens inside (TRL's PRMTrainer); in_context [the only form of "
            'chat_turns]: the whole text tokenised once, the tag found by character offsets '
            "(Math-Shepherd's card)."))
    question_template: str | MISSING = Field(
        default=MISSING,
        description=(
            "The text before the first step, with {question} ['{question}']; prompt plain and "
            'chat_turns.'))
    step_template: str | MISSING = Field(
        default=MISSING,
        description=(
            "One step's text, with {step} and optionally {k} (its number from 1) ['{step}']; prompt "
            'plain and chat_turns.'))
    step_join: str | MISSING = Field(
        default=MISSING,
        description="Text between one step's tag and the next step [''] (prompt plain).")
    system_prompt: str | None | MISSING = Field(
        default=MISSING,
        description='System message of prompt chat or chat_turns [null: none].')
    bos: bool | MISSING = Field(
        default=MISSING,
        description=(
            "Prompt plain: begin with the tokenizer's BOS token when it has one [true] (a chat "
            'template writes its own).'))
    readout: DeclaredParamsReadout | MISSING = Field(default=MISSING, description='How the step score is read.')


class TrainedParams(Section):
    """Adapter trained takes no options: the step format and the head travel with the checkpoint (prm.json,
    prm.load_prm)."""


class QwenPrmParams(Section):
    """Adapter qwen_prm takes no options: it reads the Qwen2.5-Math-PRM cards' step format (<extra_0> after
    every step in the assistant turn, the CoT system prompt) and their 2-label head; another step format
    or head is adapter declared (model_class process_reward, prompt chat)."""


class MathShepherdParams(Section):
    good_token: Annotated[str, Field(min_length=1)] | MISSING = Field(
        default=MISSING,
        description=(
            "The label meaning 'this step is correct' ['+']: with bad_token, the ids the card reads, "
            "encode('<good> <bad>')[1:] (two tokens, else the scoring job fails when it loads the "
            'tokenizer).'))
    bad_token: Annotated[str, Field(min_length=1)] | MISSING = Field(
        default=MISSING,
        description="The label meaning 'this step is wrong' ['-'] (as good_token).")
    step_tag: Annotated[str, Field(min_length=1)] | MISSING = Field(
        default=MISSING,
        description=(
            "Text appended after every step ['ки']; the step's score is read at its id "
            "encode(step_tag)[-1], as the card."))


class RlhflowParams(Section):
    good_token: Annotated[str, Field(min_length=1)] | MISSING = Field(
        default=MISSING,
        description=(
            "The assistant's reply after every step and the label meaning 'this step is correct' ['+']; "
            "its id encode(t)[-1] as RLHFlow's code (one token, else the scoring job fails when it loads "
            'the tokenizer).'))
    bad_token: Annotated[str, Field(min_length=1)] | MISSING = Field(
        default=MISSING,
        description="The label meaning 'this step is wrong' ['-'] (as good_token).")


class SkyworkParams(Section):
    step_token: Annotated[str, Field(min_length=1)] | MISSING = Field(
        default=MISSING,
        description=(
            "Text after every step ['\\n']; the value head is read at its id encode(step_token)[-1], as "
            "skywork-o1-prm-inference's prepare_input."))


class EurusParams(Section):
    beta: Annotated[Number, Field(gt=0)] | MISSING = Field(
        default=MISSING,
        description="β of the implicit reward β·(log π − log π_ref), a number > 0 [0.001, the card's coef].")
    reward: Literal['cumulative', 'step'] | MISSING = Field(
        default=MISSING,
        description=(
            "cumulative [default]: step k's score is the reward summed from the response start to step k, "
            'as the card; step: the per-step differences.'))
    sigmoid: bool | MISSING = Field(
        default=MISSING,
        description=(
            'false [default]: the raw cumulative β log-ratios the EurusPRM card prints (use last/min '
            'aggregation and threshold tune); true maps them through a sigmoid (the ORM objective).'))
    separator: str | MISSING = Field(
        default=MISSING,
        description="Text joining the steps of a response ['\\n\\n'].")


class QwenOrmParams(Section):
    sigmoid: bool | MISSING = Field(
        default=MISSING,
        description="false [default]: the head's raw score; true: its sigmoid.")
    system_prompt: str | MISSING = Field(
        default=MISSING,
        description="System message of the chat prompt [the Qwen2.5-Math CoT prompt].")
    separator: str | MISSING = Field(
        default=MISSING,
        description="Text joining the steps of the response ['\\n\\n'].")


ADAPTER_DESCRIPTION = (
            'Step format + readout: qwen_prm (<extra_0>, 2-class head), math_shepherd (ки, +/-), '
            'rlhflow (chat turns, +/-), skywork (value head, sigmoid), eurus (implicit PRM, needs '
            'ref_model), qwen_orm (outcome RM, one score per response), token_classification (TRL / '
            "axolotl PRMs: AutoModelForTokenClassification of any architecture, TRL's PRMTrainer "
            'input, options in params), declared (any PRM described by its params: model class, step '
            'tag and how it is tokenised, readout; math_shepherd, rlhflow and token_classification '
            'are parameter sets of it), trained (a PRM trained by this workflow).')


class _PrmEntry(Section):
    """What every released PRM entry has; `adapter` picks the entry's class (PRM_ENTRIES), hence its params."""
    model: str = Field(
        description=(
            'Model entry (under `models`) holding the weights; its trust_remote_code decides whether '
            'Hub code may run (otherwise the head is built locally).'))
    ref_model: str | None = Field(
        default=None,
        description=(
            'Reference model entry for the implicit PRM (adapter eurus): Qwen2.5-Math-7B-Instruct '
            'for EurusPRM.'))
    label: Text | None = Field(
        default=None,
        description='Display name in tables and figures (defaults to the entry name).')
    threshold: Threshold | None = Field(
        default=None,
        description=(
            "ProcessBench threshold for this model (a number, or 'tune': chosen by "
            'processbench_eval.tune_on); null = processbench_eval.threshold.'))
    max_length: Annotated[int, Field(ge=16)] | None = Field(
        default=None,
        description=(
            'Token limit of one scoring input (whole leading steps are kept, the rest reported as '
            "truncated); null = prms.max_length or the model's max_model_len."))
    backend: Literal['transformers', 'vllm'] = Field(
        default='transformers',
        description=(
            'Scoring backend: transformers (one forward per length-sorted batch; every adapter) or '
            "vllm (vLLM's pooling runner with the model entry's tensor_parallel_size and "
            'gpu_memory_utilization, prm_lessons.scoring.pooling; only adapters whose architecture vLLM '
            'implements: qwen_prm (Qwen2ForProcessRewardModel), qwen_orm (Qwen2ForRewardModel), '
            'trained). Same inputs and readout, same scores (tests/scoring/test_pooling.py).'))


# One entry class per adapter family, each with its own params model: options absent stay absent (MISSING;
# the adapter applies its defaults, written in brackets), so a spec keeps the params as written.

class TrainedPrm(_PrmEntry):
    """A PRM trained by this workflow, named by a model entry."""
    adapter: Literal["trained"] = Field(description=ADAPTER_DESCRIPTION)
    params: TrainedParams = Field(default_factory=TrainedParams, description="Options of adapter trained: none.")


class QwenPrm(_PrmEntry):
    """Qwen2.5-Math-PRM and -PRM800K: <extra_0> after every step, softmax of the 2-label head."""
    adapter: Literal["qwen_prm"] = Field(description=ADAPTER_DESCRIPTION)
    params: QwenPrmParams = Field(default_factory=QwenPrmParams, description="Options of adapter qwen_prm: none.")


class MathShepherdPrm(_PrmEntry):
    """Math-Shepherd's causal LM: ' ки' after every step, P(+) of softmax over the '+' and '-' logits."""
    adapter: Literal["math_shepherd"] = Field(description=ADAPTER_DESCRIPTION)
    params: MathShepherdParams = Field(
        default_factory=MathShepherdParams, description="Options of adapter math_shepherd (defaults in brackets).")


class RlhflowPrm(_PrmEntry):
    """RLHFlow's PRMs: one user turn per step answered '+', P(+) read before each '+'."""
    adapter: Literal["rlhflow"] = Field(description=ADAPTER_DESCRIPTION)
    params: RlhflowParams = Field(
        default_factory=RlhflowParams, description="Options of adapter rlhflow (defaults in brackets).")


class SkyworkPrm(_PrmEntry):
    """Skywork-o1-Open-PRM: a value head read (sigmoid) at the token after every step."""
    adapter: Literal["skywork"] = Field(description=ADAPTER_DESCRIPTION)
    params: SkyworkParams = Field(
        default_factory=SkyworkParams, description="Options of adapter skywork (defaults in brackets).")


class EurusPrm(_PrmEntry):
    """EurusPRM, an implicit PRM: cumulative β log-ratios against the reference model `ref_model`."""
    model_config = when(adapter={"eurus": ["ref_model"]})
    adapter: Literal["eurus"] = Field(description=ADAPTER_DESCRIPTION)
    params: EurusParams = Field(
        default_factory=EurusParams, description="Options of adapter eurus (defaults in brackets).")

    @model_validator(mode="after")
    def _eurus_ref_model(self):
        if "ref_model" not in self.model_fields_set:
            raise fail("ref_model", "missing required value (with `adapter: eurus`)")
        if not isinstance(self.ref_model, str):
            raise fail("ref_model", f"{self.ref_model!r} is not of type 'string' (with `adapter: eurus`)")
        return self


class QwenOrm(_PrmEntry):
    """An outcome RM (Qwen2.5-Math-RM): one score per response, from the head at its last token."""
    adapter: Literal["qwen_orm"] = Field(description=ADAPTER_DESCRIPTION)
    params: QwenOrmParams = Field(
        default_factory=QwenOrmParams, description="Options of adapter qwen_orm (defaults in brackets).")


class TokenClassificationPrm(_PrmEntry):
    """TRL / axolotl token-classification PRMs (a preset of adapter declared)."""
    adapter: Literal["token_classification"] = Field(description=ADAPTER_DESCRIPTION)
    params: TokenClassificationParams = Field(
        default_factory=TokenClassificationParams,
        description="Options of adapter token_classification (defaults filled).")


class DeclaredPrm(_PrmEntry):
    """Any PRM described by its params."""
    adapter: Literal["declared"] = Field(description=ADAPTER_DESCRIPTION)
    # no defaults filled: scoring.options.check_declared_params resolves them (they depend on prompt and
    # model_class), and a spec keeps the params as written
    params: DeclaredParams = Field(
        default_factory=dict, validate_default=True,
        description="Options of adapter declared (defaults resolved by scoring.options.check_declared_params).")


# adapter name -> its entry class, in the order messages list the adapters: the one list of adapters
PRM_ENTRIES = {typing.get_args(c.model_fields["adapter"].annotation)[0]: c for c in (
    TrainedPrm, QwenPrm, MathShepherdPrm, RlhflowPrm, SkyworkPrm, EurusPrm, QwenOrm, TokenClassificationPrm,
    DeclaredPrm)}
ADAPTERS = tuple(PRM_ENTRIES)


def _adapter(entry) -> str | None:
    adapter = entry.get("adapter") if isinstance(entry, dict) else getattr(entry, "adapter", None)
    return PRM_ENTRIES[adapter].__name__ if isinstance(adapter, str) and adapter in PRM_ENTRIES else None


# the entry's class by its adapter (tagged by class name, which error paths skip: validate._is_tag)
PrmEntry = Annotated[
    typing.Union[tuple(Annotated[c, Tag(c.__name__)] for c in PRM_ENTRIES.values())],
    Discriminator(_adapter, custom_error_type="adapter", custom_error_message="adapter")]


class Prms(Section):
    include_trained: bool = Field(
        default=True,
        description=(
            'Score with every PRM this workflow trains (one per training-set variant, named after '
            'the variant, loaded from results/prms/{variant}).'))
    models: dict[Name, PrmEntry] = Field(
        default_factory=dict,
        description=(
            'Released PRMs/ORMs by name (Tables 6/7 rows): each names a model entry under `models` '
            'and the adapter that knows its step format and readout.'))
    trained_backend: Literal['transformers', 'vllm'] = Field(
        default='transformers',
        description=(
            'Scoring backend of the PRMs trained here (as prms.models.*.backend): vllm needs '
            'training.mode full on a Qwen2 base (saved as Qwen2ForProcessRewardModel, prm.save_prm), '
            "with tensor_parallel_size = training.gpus_scoring (else the base's GPUs); transformers "
            '(default) loads any trained PRM.'))
    max_length: Annotated[int, Field(ge=16)] | None = Field(
        default=None,
        description="Default token limit of one scoring input; null = the model entry's max_model_len.")
    batch_tokens: Annotated[int, Field(ge=16)] = Field(
        default=16384,
        description='Padded tokens per scoring forward pass (inputs are length-sorted, longest first).')
    batch_size: Annotated[int, Field(ge=1)] = Field(
        default=64,
        description='Maximum responses per scoring forward pass.')
    shards: Annotated[int, Field(ge=1)] = Field(
        default=1,
        description=(
            'Scoring jobs per PRM (and policy) over problem shards, as sampling.shards: each job '
            'scores one shard of every Best-of-N set (whole problems; ProcessBench: whole cases, '
            "every prefix of an outcome RM's case in the same shard), a local merge per PRM joins "
            'them and refuses a problem in two shards or in none; a killed job loses one shard, and '
            'a retried one asks for more time. 1 = one job per PRM writes the tables.'))
    shard_prms: list[str] | None = Field(
        default=None,
        description=(
            'The PRMs (trained variants or prms.models names) split into prms.shards scoring jobs; '
            'the others score in one job (a shard0of1 table through the same merge). null = every '
            'PRM. Lets a CPU rehearsal run the split and merge on one PRM per scoring backend '
            'instead of on all of them.'))
    shared_base_features: bool = Field(
        default=True,
        description=(
            'Head-only trained PRMs (training.mode head) share one frozen base: compute its step '
            'features once per benchmark / ProcessBench and once over the sampled training responses '
            '(rule step_features), score each PRM by applying its head to them, and train every '
            'variant labelled on the sampled responses (mc, judge, consensus, checker) on them. '
            'false = every scoring and training job runs the base itself (same scores and heads up '
            'to bf16 batching).'))
