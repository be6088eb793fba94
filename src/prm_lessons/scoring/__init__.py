"""Step scoring: every step of a response scored in ONE forward pass, batched and length-sorted.

An adapter turns (question, steps) into token ids plus the positions whose outputs carry each step's
score, and reads the score there. Adapters (the `adapter` key of a `prms.models` entry):

- `trained`: the PRMs this workflow trains. `steps.build_prm_input` with the PRM's own StepFormat (saved
  with it); P(class 1) of its 2-class head.
- `qwen_prm`: Qwen2.5-Math-PRM-7B / -72B. `build_prm_input`: system + user, `<extra_0>` after each step in
  the assistant turn; softmax over the 2 head logits, index 1.
- `math_shepherd`: peiyi9979/math-shepherd-mistral-7b-prm. `"{question} Step 1: s1 ки\\nStep 2: s2 ки"`;
  softmax over the card's `encode("+ -")[1:]` logits at each `ки` (`encode("ки")[-1]`), P(+).
- `rlhflow`: RLHFlow/Llama3.1-8B-PRM-*. Chat: user = question + "\\n\\n" + step 1, then one user turn per
  step, assistant "+" after each; one pass over the whole conversation, P(+) of (`encode('+')[-1]`,
  `encode('-')[-1]`) at the token before each assistant "+".
- `skywork`: Skywork-o1-Open-PRM-Qwen-2.5-*. `bos + question + "\\n"`, then each step's ids + the "\\n"
  token id; sigmoid of the value head at those tokens.
- `eurus`: PRIME-RL/EurusPRM-Stage1/2. Chat (user, assistant = steps joined by "\\n\\n"); implicit PRM:
  β·(log π − log π_ref) per token, cumulated and gathered at the card's `step_last_tokens` (raw values, as
  the card prints; `sigmoid` optional) or per step.
- `qwen_orm`: Qwen2.5-Math-RM-72B (outcome RM). Chat (system, user, assistant = steps joined by "\\n\\n");
  score head at the last token: ONE score per response; on ProcessBench one instance per prefix.
- `token_classification`: TRL / axolotl PRMs (`AutoModelForTokenClassification`, any architecture). As
  TRL's PRMTrainer.tokenize_row: [BOS] + question ids, then each step's ids + the `step_separator` ids
  (params; "\\n"); softmax over the labels at `positive_label` (1), or sigmoid of that logit, at the
  separator's last token.
- `declared`: any other PRM, described by `params` (options: scoring.options). `model_class` (causal_lm:
  softmax over two `label_ids`; token_classification / process_reward: `class_index`, softmax or sigmoid),
  `step_tag` after each step, `prompt` plain (templates) / chat (`build_prm_input`) / chat_turns, `tokenize`
  alone / in_context, read at the tag's last token or the one before it. `math_shepherd`, `rlhflow` and
  `token_classification` are parameter sets of it.

Released checkpoints whose class lives in Hub code (Qwen PRM/ORM, Skywork) are loaded WITHOUT running
that code unless the model entry sets `trust_remote_code: true`: the transformer body loads through
transformers' own class for its `model_type`, the head (`score.*`, `v_head.summary.*`) is built here
and its weights read from the checkpoint (vLLM does the same for Qwen2ForProcessRewardModel), from
safetensors or, where a repo ships only those (Math-Shepherd, Skywork), pytorch_model*.bin. Each adapter
exposes the token ids its readout uses (`step_tag_id`, `label_token_ids`; `token_info()`), written into
the score tables' metadata.
Outputs: tables `step_scores` / `pb_scores` (docs/architecture.md). A response longer than
`max_length` keeps its whole leading steps only; `n_steps_scored` < number of steps says so.

Backends (`backend` of a spec): `transformers` (this package: length-sorted batches, one forward each;
every adapter) or `vllm` (prm_lessons.scoring.pooling: vLLM's pooling runner with tensor parallelism, for the
architectures vLLM implements: qwen_prm, qwen_orm, and trained PRMs saved in the released layout). The
adapter, its encoding and readout are the same; only `batch.score_encoded` hands the batch to vLLM.

Modules (one concept each, so that a job's code closure, prm_lessons.plan.codedeps, holds only what it runs;
this file imports nothing):
- `encode`: the encoded input (`Encoded`: ids + score positions), offsets to positions, truncation to
  whole leading steps, the model cards' label tokens (no torch);
- `heads`: the heads built here, their weights read from the checkpoint, `load_head_model`, and the
  loading options (local directory, dtype, GPU placement);
- `adapters`: `Adapter` and the adapters listed above (`ADAPTER_CLASSES`), `DeclaredAdapter` and the families
  that are its parameter sets (`PRESETS`);
- `options`: adapter options checked while the DAG is built (token_classification's, declared's; torch-free);
- `batch`: `score_encoded` (length-sorted batches, or vLLM), `score_responses`, `score_prefixes`,
  `score_naive_per_prefix`, `ScoreStats`;
- `load`: `load_adapter` from a resolved spec, on either backend;
- `score_file`: a JSONL file of (problem, steps) rows scored with any PRM outside the workflow (the
  `prm-lessons score` command): row checks, which adapter a directory needs, the output rows.
The search's candidate scorers (incremental on a KV cache, or full re-scoring) are
prm_lessons.evaluation.search_scorers: an edit there reruns the search only.
"""
