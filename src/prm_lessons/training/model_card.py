"""The model card (README.md, with the Hub's YAML metadata) of a trained PRM directory: what it was trained
from (base, training set and its label source, sizes), how (hyperparameters), what it earned (its training
fit; the evaluation metrics when given, else where the workflow writes them) and how to load it: with
`prm-lessons score`, with this package, and without it (transformers + safetensors, vLLM for the released
layout, peft for the LoRA adapter), with the limits of each layout said plainly.

Written by the training rule (`rules.training.train_prm`) and again, with the evaluation metrics, by the
upload rule (`publish`). Torch-free: it reads the directory's JSON files only.
"""
from __future__ import annotations

from pathlib import Path

from ..tables import read_json, write_text_atomic

CARD_FILE = "README.md"
FORMAT_FILE = "prm.json"  # prm.FORMAT_FILE (not imported: prm imports torch, the card needs none)
HEAD_FILE = "prm_head.safetensors"  # prm.HEAD_FILE
LOG_DIR = "runs"  # training.report_to's local logs (TensorBoard's default under the Trainer's output_dir)
LORA_DIR = "lora_adapter"  # lora mode: the trained adapter before merging, a PEFT directory (training saves it)
HYPERPARAMETERS = ("mode", "epochs", "max_steps", "learning_rate", "lr_scheduler", "warmup_ratio", "weight_decay",
                   "batch_size", "batch_tokens", "gradient_accumulation_steps", "max_grad_norm", "max_length",
                   "precision", "seed", "soft_loss", "standardize_features")
# where the workflow writes a trained PRM's evaluation (rules evaluation.smk, analysis.smk)
EVAL_FILES = ("results/metrics/processbench/{name}.json", "results/metrics/bon/{name}.json",
              "results/tables/table6_bon_main.csv", "results/tables/table7_processbench_main.csv",
              "results/tables/table13_scoring_strategies.csv", "paper/report.md")


def _fmt(x) -> str:
    if isinstance(x, float):
        return f"{x:.4g}"
    return "—" if x is None else str(x)


def _table(rows: list[tuple[str, object]]) -> str:
    return "| | |\n|---|---|\n" + "".join(f"| {k} | {_fmt(v)} |\n" for k, v in rows)


def _yaml_meta(base: dict | None, name: str) -> str:
    # no pipeline_tag: no transformers pipeline runs this step head (pipeline_note), and a tag would give
    # the Hub page a widget and a pipeline(...) snippet that score nothing; the body itself is transformers'
    lines = ["---", "library_name: transformers", "tags:", "- process-reward-model", "- prm-lessons"]
    if base and base.get("source") == "hub" and base.get("id"):
        lines.append(f"base_model: {base['id']}")
    lines += [f"model_name: {name}", "---", ""]
    return "\n".join(lines)


def _base_line(base: dict | None, meta: dict) -> str:
    if not base:
        return f"`{meta.get('base', '?')}`"
    if base.get("source") == "hub":
        return f"[{base['id']}](https://huggingface.co/{base['id']})" + (
            f" at revision `{base['revision']}`" if base.get("revision") else "")
    return f"`{base.get('id')}` ({base.get('source')} model)"


# how each training-set source (trainsets.variants.<name>.source) made its step labels
SOURCE_LABELS = {
    "mc": "Monte Carlo estimation: completions sampled from each step; a step's mc_value is the share of its "
          "completions that reach the reference answer",
    "judge": "LLM-as-a-judge: a judge model names the first wrong step of each response (the steps before it "
             "are correct, it is wrong, the rest are cut)",
    "consensus": "consensus filtering: the responses on which Monte Carlo estimation and the LLM judge agree "
                 "about the first error, labelled by Monte Carlo estimation",
    "human": "human annotation: PRM800K's step ratings",
    "math_shepherd": "the released Math-Shepherd labels (its authors' Monte Carlo estimation)",
    "checker": "the arithmetic process checker: exact step labels from checking each step's arithmetic",
    "trl": "a step-labelled dataset in TRL's stepwise-supervision format {prompt, completions, labels}, "
           "labels as its makers made them",
    "exact": "exact step truth of the constructed solution pool (each step's correctness is known by "
             "construction, nothing estimated)",
}


def label_source(spec: dict) -> str | None:
    """One sentence: the variant's label source and how its labels were made (None when unknown)."""
    src = spec.get("source")
    if not src:
        return None
    out = f"`{src}`: {SOURCE_LABELS.get(src, 'see config/README.md, trainsets.variants')}"
    if src in ("mc", "consensus"):
        out += ("; soft labels (the mc_value)" if spec.get("label_type") == "soft" else
                f"; hard labels (a step is correct iff mc_value > {_fmt(spec.get('threshold', 0.0))})"
                if src == "mc" else "; hard labels")
    trl = spec.get("trl") or {}
    if src == "trl" and trl:
        out += (f"; the Hub dataset `{trl.get('id')}` at revision `{trl.get('revision')}`"
                if trl.get("source") == "hub" else f"; the file `{trl.get('path')}`")
    return out


def _data_section(trainset: dict | None, metrics: dict) -> str:
    spec = trainset["spec"] if trainset else {}  # rule trainset always writes it
    st = metrics["data"]
    rows = [("training set", f"`{(trainset or {}).get('variant') or Path(str(metrics.get('trainset', '?'))).stem}`"),
            ("label source", label_source(spec)), ("label type", metrics.get("label_type")),
            ("label threshold", spec.get("threshold")),
            ("problem sets", ", ".join(spec["datasets"]) if spec.get("datasets") else "all configured problem sets"
             if spec else None),
            ("instances (rows)", st.get("instances")), ("instances trained on", st.get("instances_used")),
            ("labelled steps", st.get("steps")), ("steps trained on", st.get("steps_used")),
            ("steps cut by max_length", st.get("steps_dropped")),
            ("share of positive steps", st["positive_steps"] / st["steps_used"] if st.get("steps_used") else None)]
    return ("## Training data\n\n" + _table([r for r in rows if r[1] is not None])
            + "\nThe training set is the prm-lessons config's `trainsets.variants` entry of that name "
              "(config/README.md).\n")


def _training_section(metrics: dict) -> str:
    s = metrics["settings"]
    skip = {"soft_loss"} if metrics.get("label_type") != "soft" else set()
    skip |= {"standardize_features"} if s.get("mode") != "head" else set()
    skip |= {"batch_tokens"} if s.get("batch_tokens") is None else set()  # sequence batches: batch_size says it
    rows = [(k, s.get(k)) for k in HYPERPARAMETERS if k in s and k not in skip]
    if s.get("mode") == "lora":
        lc = s.get("lora", {})  # a PRM trained elsewhere may record no LoRA settings
        targets = lc.get("target_modules")  # a list of names, or one string ("all-linear")
        rows += [("lora r / alpha / dropout", f"{lc.get('r')} / {lc.get('alpha')} / {lc.get('dropout')}"),
                 ("lora target modules", targets if isinstance(targets, str) else ", ".join(targets or []))]
    rows += [("optimizer steps", metrics.get("global_steps")), ("final training loss", metrics.get("final_train_loss")),
             ("training tokens", metrics.get("train_tokens")), ("processes", metrics.get("world_size")),
             ("device", metrics["hardware"]["device"])]
    fit = metrics["train_fit"]
    if fit.get("step_accuracy") is not None:
        rows.append(("step accuracy on its training steps (head only)",
                     f"{fit['step_accuracy']:.3f} (majority class: {fit['majority_rate']:.3f})"))
    return "## Training\n\n" + _table(rows) + "\nEvery setting: `train_metrics.json` (`settings`) in this directory.\n"


def _eval_section(name: str, evaluation: dict | None) -> str:
    out = "## Evaluation\n\n"
    pb, bon = (evaluation or {}).get("processbench"), (evaluation or {}).get("bon")
    if pb:
        out += "ProcessBench (F1 of error and correct accuracy, %):\n\n| subset | F1 |\n|---|---|\n" + "".join(
            f"| {k} | {100 * v['f1']:.1f} |\n" for k, v in pb.get("subsets", {}).items())
        out += f"| **average** | **{100 * pb['average_f1']:.1f}** |\n\n"
        if pb.get("threshold") is not None:
            out += f"Step threshold: {pb['threshold']} ({pb.get('threshold_policy', 'fixed')}).\n\n"
    if bon and bon.get("average"):
        avg = bon["average"]
        out += "Best-of-N accuracy (%), average over the benchmarks:\n\n| selector | accuracy |\n|---|---|\n" + "".join(
            f"| {k} | {100 * v:.1f} |\n" for k, v in avg.items() if isinstance(v, float) and k not in ("n",))
        out += "\n"
    if not (pb or bon):
        out += ("Not evaluated when this card was written (at the end of training). The workflow that trained it "
                "writes the evaluation to:\n\n" + "".join(f"- `{p.format(name=name)}`\n" for p in EVAL_FILES)
                + f"\n(the rows named `{name}` in the tables).\n")
    return out


def _input_code(fmt: dict, step_id: int | None) -> str:
    sys_prompt = fmt.get("system_prompt")
    if fmt.get("use_chat_template", True):
        msgs = ([f"{{'role': 'system', 'content': {sys_prompt!r}}}, "] if sys_prompt is not None else [""])[0]
        prefix = (f"tok.apply_chat_template([{msgs}{{'role': 'user', 'content': question}}], tokenize=False, "
                  "add_generation_prompt=True)")
    else:
        prefix = "question + '\\n\\n'"
    return (f"STEP_ID = tok.convert_tokens_to_ids({fmt.get('step_token', '<extra_0>')!r})"
            f"  # {step_id} in this tokenizer\n\n"
            "def encode(question, steps):\n"
            "    # the prompt, then each step tokenised on its own followed by the step token, "
            "whose position carries the score\n"
            f"    ids = tok({prefix}, add_special_tokens=False)['input_ids']\n"
            "    pos = []\n"
            "    for s in steps:\n"
            "        ids += tok(s, add_special_tokens=False, split_special_tokens=True)['input_ids']\n"
            "        pos.append(len(ids))\n"
            "        ids.append(STEP_ID)\n"
            "    return ids, pos\n")


def pipeline_note(layout: str) -> str:
    """What does not load this PRM (a transformers pipeline, and for the released layout the upstream
    remote-code route) and what does, for the directory `layout`."""
    common = ("No transformers pipeline scores with it (the card has no `pipeline_tag`): its step head is no "
              "transformers head, so `pipeline(\"token-classification\")` or `AutoModelForTokenClassification` "
              "would put a new, randomly initialised classifier on the body, and `pipeline(\"text-generation\")` "
              "finds no LM head. ")
    if layout == "released":
        return (common + "The released Qwen2.5-Math-PRM-7B, whose layout this directory has, loads upstream with "
                "`AutoModel.from_pretrained(..., trust_remote_code=True)` through the remote code of Qwen's "
                "repository (`modeling_qwen2_rm.py`); that code is not in this directory, so that route does not "
                "apply here. What works: `prm_lessons.models.prm.load_prm`, vLLM, or transformers + safetensors "
                "as below.")
    return (common + "What works: `prm_lessons.models.prm.load_prm` (this project's layout), or transformers + "
            "safetensors as below.")


def _load_section(prm_dir: Path, name: str, meta: dict, token_added: bool) -> str:
    layout, mode = meta.get("layout", "project"), meta.get("mode")
    fmt = meta["format"]
    out = ("## How to load it\n\n" + pipeline_note(layout) + "\n\n### With prm-lessons\n\n"
           "```bash\n"
           "# rows {\"id\": ..., \"problem\": \"...\", \"steps\": [\"...\", ...]} "
           "(or TRL's {\"prompt\", \"completions\"})\n"
           f"prm-lessons score --prm {name if '/' in name else 'PATH/TO/THIS/DIRECTORY'} "
           "--input steps.jsonl --output scores.jsonl\n"
           "```\n\n"
           "writes each row with `step_scores`: P(the step is correct), one per step. In Python: "
           "`prm_lessons.models.prm.load_prm(path)` gives the model, its tokenizer and step format.\n\n"
           "### Without prm-lessons (transformers + safetensors)\n\n")
    if layout == "released":
        head_read = ("from safetensors import safe_open\n"
                     "head = {}  # score.0.* / score.2.* as net.0.* / net.2.*\n"
                     "for f in sorted(glob.glob(f'{path}/model*.safetensors')):\n"
                     "    with safe_open(f, 'pt') as fh:\n"
                     "        head.update({'net.' + k[len('score.'):]: fh.get_tensor(k) for k in fh.keys() "
                     "if k.startswith('score.')})\n")
        out += ("This directory has the layout of the released Qwen2.5-Math-PRM (`Qwen2ForProcessRewardModel`: "
                "the Qwen2 body as `model.*`, the head as `score.*`). vLLM serves it as it serves the released "
                "PRM: `LLM(model=path, runner=\"pooling\")`, `llm.encode(prompts, pooling_task=\"token_classify\")`, "
                "softmax over the 2 outputs at each step token. The released repository's remote code "
                "(`modeling_qwen2_rm.py`, `auto_map`) is not included, so its card's "
                "`AutoModel.from_pretrained(..., trust_remote_code=True)` does not apply; transformers loads the "
                "body and the head by name:\n\n")
    else:
        head_read = ("from safetensors.torch import load_file\n"
                     f"head = load_file(f'{{path}}/{HEAD_FILE}')\n")
        what = {"head": "the base model, untrained (only the head was trained; with the step token's embedding "
                        "row when training added the token)",
                "lora": "the base with the trained LoRA adapters merged in",
                "full": "the fine-tuned base"}.get(mode, "the base")
        out += (f"`config.json` + `model*.safetensors` hold the body, {what}, which transformers' own class for "
                f"the architecture loads (`AutoModel`, no LM head); the step head is `{HEAD_FILE}` "
                "(Linear(h,h) → ReLU → Linear(h,2), as Qwen2.5-Math-PRM's"
                + (", after a fixed standardisation of the features by `feature_mean` / `feature_std`" if mode == "head"
                   else "") + "). No transformers class has this head, so it is applied by hand:\n\n")
    step_id = meta.get("step_token_id")
    out += ("```python\n"
            "import glob\n\nimport torch\n"
            "from transformers import AutoModel, AutoTokenizer\n\n"
            "path = 'PATH/TO/THIS/DIRECTORY'\n"
            "tok = AutoTokenizer.from_pretrained(path)\n"
            "body = AutoModel.from_pretrained(path, dtype=torch.float32).eval()\n"
            + head_read + "head = {k: v.float() for k, v in head.items()}\n"
            + _input_code(fmt, step_id) + "\n"
            "def step_scores(question, steps):\n"
            "    ids, pos = encode(question, steps)\n"
            "    with torch.no_grad():\n"
            "        h = body(input_ids=torch.tensor([ids])).last_hidden_state[0, pos].float()\n"
            "        if 'feature_mean' in head:\n"
            "            h = (h - head['feature_mean']) / head['feature_std']\n"
            "        h = torch.relu(h @ head['net.0.weight'].T + head['net.0.bias'])\n"
            "        logits = h @ head['net.2.weight'].T + head['net.2.bias']\n"
            "    return torch.softmax(logits, -1)[:, 1].tolist()\n"
            "```\n\n")
    if mode == "lora" and (prm_dir / LORA_DIR).is_dir():
        out += (f"### The LoRA adapter (peft)\n\n`{LORA_DIR}/` is the trained LoRA adapter before merging, a standard "
                "PEFT adapter directory on the base's body (`AutoModel`, no LM head):\n\n"
                "```python\nfrom peft import PeftModel\n"
                "body = PeftModel.from_pretrained(AutoModel.from_pretrained(BASE), f'{path}/" + LORA_DIR + "')\n```\n\n"
                "with `BASE` the base model above. The step head is not part of the adapter: apply "
                f"`{HEAD_FILE}` as above."
                + (" Training added the step token to the base's vocabulary: resize the base's embeddings to "
                   "`len(tok)` (this directory's tokenizer) before loading the adapter, which carries the "
                   "embedding matrix." if token_added else "") + "\n\n")
    out += ("Scores are P(step correct) at the step token after each step. A step text is tokenised on its own: "
            "joining the steps into one string and tokenising it can merge tokens across a step boundary and "
            "shift the scores. Truncation keeps whole leading steps.\n")
    return out


def render_card(prm_dir: str | Path, metrics: dict, *, name: str, base: dict | None = None,
                trainset: dict | None = None, evaluation: dict | None = None) -> str:
    """The card of the PRM directory `prm_dir` (its prm.json read here). `metrics`: its train_metrics.json;
    `base`: the base model entry (source, id, revision); `trainset`: the training set's table metadata
    (variant, spec, stats); `evaluation`: {"processbench": metrics JSON, "bon": metrics JSON} when known."""
    prm_dir = Path(prm_dir)
    meta = read_json(prm_dir / FORMAT_FILE)
    fmt = meta["format"]
    head = meta["head"]
    intro = (f"# {name}\n\nA process reward model trained with prm-lessons, a rebuild of [The Lessons of "
             "Developing Process Reward Models in Mathematical Reasoning](https://arxiv.org/abs/2501.07301): for "
             "a math problem and a solution split into steps, it gives each step the probability that the step "
             "is correct.\n\n"
             + _table([("base model", _base_line(base, meta)), ("training mode", meta.get("mode")),
                       ("directory layout", meta.get("layout", "project")),
                       ("head", f"{head.get('type')}, hidden size {head.get('hidden_size')}, 2 labels (1 = correct)"),
                       ("step token", f"`{fmt.get('step_token')}`"),
                       ("chat template", fmt.get("use_chat_template")),
                       ("system prompt", repr(fmt.get("system_prompt"))),
                       ("max length (tokens)", meta.get("max_length"))]) + "\n")
    reporter = metrics["settings"].get("report_to")
    logs = (f"\nThe Trainer's logs (`training.report_to: {reporter}`) are in `{LOG_DIR}/`.\n"
            if (prm_dir / LOG_DIR).is_dir() else "")
    return "\n".join([_yaml_meta(base, name) + intro, _data_section(trainset, metrics),
                      _training_section(metrics) + logs,
                      _eval_section(name, evaluation),
                      _load_section(prm_dir, name, meta, bool(metrics.get("step_token_added")))])


def write_card(prm_dir: str | Path, metrics: dict, **kw) -> Path:
    path = Path(prm_dir) / CARD_FILE
    write_text_atomic(path, render_card(prm_dir, metrics, **kw))
    return path
