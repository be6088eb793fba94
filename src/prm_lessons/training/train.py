"""PRM training: the PRM of `prm_lessons.models.prm` (a base LM + 2-class step head), trained with the
transformers `Trainer`.

Loss: cross-entropy on hard 0/1 labels; soft labels in [0,1]: binary cross-entropy on P(good) (`bce`,
default) or MSE on P(good) (`mse`, the paper's preliminary soft runs). For 0/1 targets BCE on P(good) and
2-class CE are the same number, so a soft variant whose labels happen to be all 0/1 trains identically.

Modes (`training.mode`): `full` fine-tuning (paper), `lora` (peft adapters, merged at save time), `head`
(frozen base: its step features are computed once, then only the head trains; the embedded CPU default).
In head mode the features can come from a shared pass (`features`: rule step_features over the sampled
training responses, `prm_lessons.training.features.training_features`) instead of the job's own pass: the variants
labelled on the same responses then run the frozen base over them once, not once each.

Output directory: the PRM directory of `prm.save_prm` (loaded with `prm.load_prm`; full fine-tuning of a
Qwen2 base in the released Qwen2.5-Math-PRM layout, everything else in the project layout), plus
  train_metrics.json               loss_history, train_tokens, tokens_per_second, wall_seconds and where it
                                   went (phase_seconds: startup, tokenize, train, checkpoint, save …), hardware …
  resample_heads.safetensors       head mode with training.resamples R > 0: R more heads, each trained as the
                                   PRM's on a bootstrap draw of the instances (`resamples`), same job, same features
  lora_adapter/                    lora mode: the adapter unmerged, a standard PEFT directory (peft loads it)

The run's parts live beside this module: settings (`settings`), trainset rows -> instances
(`data`), the Trainer, DeepSpeed and TrainingArguments (`trainer`), checkpoints and resume
(`checkpoints`), and the launch in one or several processes (`launch.run_training`, the rule's
entry). A job stopped by SIGTERM (JIT checkpoint) raises TrainingInterrupted instead of saving a
half-trained PRM. What fits: full fine-tuning of a 7B base with DeepSpeed ZeRO-2 on one node of 8x80 GB
GPUs (bf16 weights replicated, 15 GB, + gradients and fp32 master + Adam partitioned, ~15 GB per GPU:
config/deepspeed/zero2.json), or ZeRO-3 (~16 bytes of weights + Adam state per parameter, all partitioned:
~15 GB per GPU on 8) where the replicated weights do not fit. A 72B base (~1.2 TB of such state, ~145 GB
per GPU on 8 GPUs) does not fit in one node: it needs several nodes or CPU offload, which the launcher
does not do.
"""
from __future__ import annotations

import logging
import os
import platform
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn

from ..models.prm import (
    HeadOnlyModel,
    ProcessRewardModel,
    StepCollator,
    StepHead,
    base_fingerprint,
    check_packed_attention,
    ensure_step_token,
    head_base_dtype,
    load_base,
    pad_id,
    released_layout_possible,
    save_prm,
    step_features,
    step_format,
    use_bf16,
)
from ..steps import StepFormat
from ..tables import write_json
from .checkpoints import resume_checkpoint, run_fingerprint
from .data import training_instances
from .features import training_features
from .head_loop import train_head
from .model_card import LOG_DIR, LORA_DIR
from .resamples import DRAW_RULE, RESAMPLE_FILE, resample_draws, resample_seed, save_resample_heads
from .settings import LABEL_TYPES, TrainingError, settings_from
from .tokens import read_tokens
from .trainer import (
    deepspeed_stage,
    log_last_step_callback,
    progress_callback,
    trainer_class,
    training_arguments,
    zero3_init,
)

log = logging.getLogger(__name__)

METRICS_FILE = "train_metrics.json"


class TrainingInterrupted(RuntimeError):
    """Training stopped before its last step (SIGTERM -> JIT checkpoint): nothing is saved as the PRM, the
    job fails and its rerun resumes from the checkpoint."""


def hardware() -> dict:
    info = {"device": "cuda" if torch.cuda.is_available() else "cpu", "cpu_count": os.cpu_count(),
            "torch_threads": torch.get_num_threads(), "torch": torch.__version__, "python": platform.python_version(),
            "host": platform.node(), "world_size": int(os.environ.get("WORLD_SIZE", "1"))}
    try:
        import transformers  # lazy: as train_setup.trainer_class

        info["transformers"] = transformers.__version__
    except ImportError:  # pragma: no cover
        pass
    if torch.cuda.is_available():
        info["n_gpus"] = torch.cuda.device_count()
        info["gpu_names"] = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
    else:
        info["n_gpus"] = 0
    if "SLURM_JOB_ID" in os.environ:
        info["slurm_job_id"] = os.environ["SLURM_JOB_ID"]
    return info


def trainable_model(backbone, head: StepHead, settings: dict, label_type: str) -> ProcessRewardModel:
    """`full` and `lora` modes: the model the Trainer gets (the base, with LoRA adapters in lora mode, and
    the step head), gradient checkpointing on the base when asked."""
    if settings["mode"] == "lora":
        from peft import LoraConfig, get_peft_model  # lazy: lora mode only

        lc = settings["lora"]
        backbone = get_peft_model(backbone, LoraConfig(r=int(lc["r"]), lora_alpha=int(lc["alpha"]),
                                                       lora_dropout=float(lc["dropout"]),
                                                       target_modules=lc["target_modules"]))
    if settings["packing"]:
        try:  # refused before training starts, not at the first step
            check_packed_attention(backbone.config)
        except ValueError as e:
            raise TrainingError(str(e)) from None
    if settings["gradient_checkpointing"]:
        backbone.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        backbone.config.use_cache = False
    return ProcessRewardModel(backbone, head, label_type, settings["soft_loss"])


def base_dtype(settings: dict, on_gpu: bool, bf16: bool) -> torch.dtype:
    """The dtype the base is loaded in: head mode's frozen base as `prm.head_base_dtype`; LoRA's base in
    bf16 on a GPU run in bf16; a full fine-tune in bf16 under DeepSpeed ZeRO-1/2 in bf16 too; else fp32.

    ZeRO-1/2: the engine casts the module to bf16 and keeps its own fp32 master weights, and nothing
    partitions the load (ZeRO-3's zero.Init does): in fp32 every rank would hold 4 bytes per parameter of
    host RAM at once (8 x 30 GB for a 7B base), in bf16 half that, and a bf16 checkpoint loses nothing."""
    if settings["mode"] == "head":
        return head_base_dtype(settings)
    if settings["mode"] == "lora" and on_gpu and bf16:
        return torch.bfloat16
    if (settings["mode"] == "full" and on_gpu and bf16 and settings["deepspeed"]
            and deepspeed_stage(settings["deepspeed"]) < 3):
        return torch.bfloat16
    return torch.float32


@dataclass
class Trainee:
    """What the Trainer trains: the model, its dataset, the step head, and (head mode) the cost of the
    frozen base's one pass over the instances; `packing`: its micro-batches packed (training.packing)."""
    model: nn.Module
    dataset: list[dict]
    head: StepHead
    feature_tokens: int = 0
    feature_seconds: float = 0.0
    packing: bool = False


def build_trainee(backbone, tokenizer, instances: list[dict], settings: dict, label_type: str,
                  on_gpu: bool, shared: list[dict] | None = None) -> Trainee:
    """Head mode: the frozen base's step features computed once (or `shared`: read from a shared pass,
    `features.training_features`) and the head alone trained on them (a fixed standardisation of the
    features in front of the paper's head); lora / full: base + head on the instances (trainable_model)."""
    mode = settings["mode"]
    if mode != "head":
        with zero3_init():  # partitioned in the base's dtype under ZeRO-3 (train_setup.zero3_init)
            head = StepHead(int(backbone.config.hidden_size))
        return Trainee(trainable_model(backbone, head, settings, label_type), instances, head,
                       packing=bool(settings["packing"]))
    for p in backbone.parameters():
        p.requires_grad_(False)
    tf = time.time()
    if shared is not None:
        dataset, feature_tokens = shared, 0
    else:
        device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0"))) if on_gpu else torch.device("cpu")
        backbone.to(device)
        dataset = step_features(backbone, instances, pad_id(tokenizer), int(settings["batch_size"]), device)
        backbone.to("cpu")
        feature_tokens = sum(len(it["input_ids"]) for it in instances)
    # no RNG is drawn by the feature pass: the head's init is what it was when built before it
    return head_trainee(dataset, int(backbone.config.hidden_size), settings, label_type, feature_tokens,
                        time.time() - tf)


def head_trainee(dataset: list[dict], hidden_size: int, settings: dict, label_type: str, feature_tokens: int = 0,
                 feature_seconds: float = 0.0) -> Trainee:
    """Head mode: a fresh step head (init from the current torch seed) on step features, its
    standardisation fitted on `dataset`'s; the PRM's head and every resample head are built here."""
    head = StepHead(hidden_size, standardize=bool(settings["standardize_features"]))
    if head.standardize:
        head.fit_standardization(torch.cat([d["step_features"] for d in dataset]))
    return Trainee(HeadOnlyModel(head, label_type, settings["soft_loss"]), dataset, head, feature_tokens,
                   feature_seconds)


def train_resample_heads(trainee: Trainee, instances: list[dict], settings: dict, label_type: str, on_gpu: bool,
                         bf16: bool, tokenizer, ckpt: Path) -> tuple[list[dict] | None, list[dict]]:
    """Head mode, `training.resamples` R > 0: R more heads on the PRM's features, head r trained as the
    PRM's on bootstrap draw r of the instances (resamples.resample_draws), with its own seed and no
    checkpoints. One process: by `head_loop.train_head`, a plain torch loop that does what the Trainer
    does for such a head without its per-head set-up (~0.4 s here; the loop's docstring); several processes
    (DDP) keep the Trainer (head_trainee + run_trainer). Returns (their state dicts on rank 0, else None;
    one summary per resample for train_metrics.json)."""
    from transformers import set_seed  # lazy: as train_setup.trainer_class

    R = int(settings["resamples"])
    draws = resample_draws([it["instance_id"] for it in instances], int(settings["seed"]), R)
    heads: list[dict] = []
    summaries = []
    rank0 = True
    collator = StepCollator(pad_id(tokenizer))
    for r, draw in enumerate(draws):
        tr = time.time()
        seed = resample_seed(int(settings["seed"]), r)
        set_seed(seed)
        sub = head_trainee([trainee.dataset[i] for i in draw], trainee.head.hidden_size, settings, label_type)
        args = training_arguments({**settings, "seed": seed, "save_steps": 0}, ckpt / f"resample-{r}", on_gpu, bf16)
        if int(args.world_size) == 1:
            run = train_head(sub.model, sub.dataset, args, collator)
            head_sd, loss, loop = sub.head.state_dict(), run.training_loss, "plain"
        else:
            trainer, result, _ = run_trainer(sub, args, tokenizer, None, ckpt)
            _, full_sd = gather_trained(trainer, args)
            rank0 = trainer.is_world_process_zero()
            head_sd = ({k[len("head."):]: v for k, v in full_sd.items() if k.startswith("head.")} if rank0 else {})
            loss = float(result.training_loss) if result.training_loss is not None else None
            loop = "Trainer"
        if rank0:
            heads.append({k: v.detach().to("cpu", torch.float32, copy=True).contiguous() for k, v in head_sd.items()})
        summaries.append({"resample": r, "seed": seed, "distinct_instances": int(len(set(draw.tolist()))),
                          "final_train_loss": loss, "loop": loop, "seconds": time.time() - tr})
        log.info("resample head %d/%d: %d draws of %d instances (%d distinct), loss %s, %.2f s (%s loop)", r + 1, R,
                 len(draw), len(instances), summaries[-1]["distinct_instances"],
                 "n/a" if loss is None else f"{loss:.4f}", summaries[-1]["seconds"], loop)
    return (heads if rank0 else None), summaries


def run_trainer(trainee: Trainee, args, tokenizer, resume: str | None, ckpt: Path, callbacks: list | None = None,
                batch_tokens: int | None = None):
    """(trainer, train result, seconds) of the Trainer run, resumed from `resume` when given; micro-batches
    of `batch_tokens` padded tokens (training.batch_tokens) or of args' batch size. A run stopped before its
    last step (the JIT checkpoint callback, on SIGTERM) raises TrainingInterrupted."""
    trainer = trainer_class()(model=trainee.model, args=args, train_dataset=trainee.dataset,
                              data_collator=StepCollator(pad_id(tokenizer), packing=trainee.packing),
                              batch_tokens=batch_tokens,
                              callbacks=[log_last_step_callback(), progress_callback(), *(callbacks or [])])
    if resume:
        log.info("resuming from %s", resume)
    tt = time.time()
    result = trainer.train(resume_from_checkpoint=resume)
    seconds = time.time() - tt
    if trainer.state.global_step < trainer.state.max_steps:
        raise TrainingInterrupted(f"training stopped at step {trainer.state.global_step} of "
                                  f"{trainer.state.max_steps} (SIGTERM); checkpoint in {ckpt}, a rerun resumes")
    return trainer, result, seconds


def gather_trained(trainer, args) -> tuple[int, dict | None]:
    """Collectives, on every rank: (train tokens of all processes, the weights; under ZeRO-3 gathered from
    all ranks: the full dict on rank 0, None elsewhere)."""
    tokens = trainer.accelerator.reduce(trainer.train_tokens(args.device), reduction="sum")
    return int(tokens.item()), trainer.accelerator.get_state_dict(trainer.model_wrapped)


def save_trained(out: Path, full_sd: dict | None, trainer, backbone, tokenizer, fmt: StepFormat, settings: dict,
                 meta: dict, dtype: torch.dtype) -> str:
    """Rank 0: the PRM directory from the gathered weights (`prm.save_prm`); returns its layout."""
    if full_sd is None:  # pragma: no cover - accelerate/DeepSpeed contract
        raise RuntimeError("rank 0 got no gathered state dict to save")
    head_sd = {k[len("head."):]: v.detach().to("cpu", torch.float32, copy=True).contiguous()
               for k, v in full_sd.items() if k.startswith("head.")}  # copies: as prm._save_released
    backbone_sd = {k[len("backbone."):]: v for k, v in full_sd.items() if k.startswith("backbone.")}
    state_dict = None
    if settings["mode"] == "head":
        save_backbone = backbone
    elif settings["mode"] == "lora":
        # merged into a fresh copy of the base: under ZeRO-3 the trained model's own parameters are shards;
        # the unmerged adapter is kept beside it as a standard PEFT directory (LORA_DIR)
        save_backbone = _merged_lora_backbone(backbone_sd, meta["base"], dtype, fmt.step_token, settings["lora"],
                                              adapter_dir=out / LORA_DIR,
                                              trust_remote_code=settings.get("trust_remote_code", False))
    else:
        save_backbone = trainer.accelerator.unwrap_model(trainer.model).backbone
        state_dict = backbone_sd
    # a fully fine-tuned Qwen2 PRM is saved as Qwen2.5-Math-PRM is published (vLLM serves it); others keep
    # the project layout (models/prm.py docstring)
    released = settings["mode"] == "full" and released_layout_possible(save_backbone, head_sd)
    layout = "released" if released else "project"
    save_prm(out, save_backbone, tokenizer, head_sd, fmt, meta, state_dict=state_dict,
             dtype=torch.float32 if settings["precision"] == "fp32" else torch.bfloat16, layout=layout)
    return layout


PHASES = ("startup", "tokenize", "features", "train", "checkpoint", "resamples", "save")


def phase_seconds(marks: dict, checkpoint: float) -> dict:
    """Seconds per phase of a run, disjoint, so they add up to at most wall_seconds: startup (train_prm's
    entry to the data: settings, resume lookup, loading the base), tokenize (the trainset's tokenisation,
    or reading the tokens file of rule tokenize_trainset), features (head mode: the frozen base's pass or
    reading the shared one), train (the Trainer's loop without its checkpoint saves), checkpoint (those
    saves, periodic and JIT: PrmTrainer._save_checkpoint), resamples (head mode's resample heads), save
    (gathering the weights and writing the PRM directory). `marks`: phase -> (start, end) times."""
    out = {p: max(0.0, end - start) for p, (start, end) in marks.items()}
    out["checkpoint"] = min(float(checkpoint), out.get("train", 0.0))
    out["train"] = out.get("train", 0.0) - out["checkpoint"]
    return {p: out.get(p, 0.0) for p in PHASES}


def process_age_seconds(now: float) -> float | None:
    """Seconds since this process started (interpreter start-up and imports; under torchrun the rank's own
    start), before train_prm's wall_seconds begin; None without psutil (accelerate's dependency)."""
    try:
        import psutil  # lazy: only for this record
    except ImportError:  # pragma: no cover - accelerate requires it
        return None
    return max(0.0, now - psutil.Process().create_time())


def train_prm(trainset: str, base_dir: str, out_dir: str, settings: dict, label_type: str = "hard",
              checkpoint_dir: str | None = None, threads: int | None = None, callbacks: list | None = None,
              features: list[str] | None = None, tokens: str | None = None) -> dict:
    """Train one PRM on a trainset table; write the model directory + train_metrics.json; return the metrics.

    `checkpoint_dir` (default: a hidden sibling of out_dir) keeps Trainer checkpoints; a rerun with the same
    settings and data resumes from the last one. `callbacks` are extra transformers TrainerCallbacks.
    `features` (head mode only): the frozen base's step features of the responses the trainset was cut
    from (rule step_features), read instead of this job's own pass over them. `tokens`: the trainset
    tokenised by rule tokenize_trainset (`tokens.read_tokens`), read instead of tokenising it here."""
    from transformers import set_seed  # lazy: as train_setup.trainer_class

    settings = settings_from(settings)
    if label_type not in LABEL_TYPES:
        raise TrainingError(f"label_type {label_type!r} is not one of {LABEL_TYPES}")
    if features and settings["mode"] != "head":
        raise TrainingError(f"training.mode: {settings['mode']!r} trains the base; shared base features "
                            f"({features}) serve head mode only")
    if threads:
        torch.set_num_threads(max(1, int(threads)))
    t0 = time.time()
    started = process_age_seconds(t0)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    ckpt = Path(checkpoint_dir) if checkpoint_dir else out.parent / f".{out.name}.checkpoints"
    mode, fmt, bf16, on_gpu = settings["mode"], step_format(settings), use_bf16(settings), torch.cuda.is_available()
    set_seed(int(settings["seed"]))
    args = training_arguments(settings, ckpt, on_gpu, bf16)
    resume = resume_checkpoint(args, ckpt, run_fingerprint(settings, label_type, base_dir, trainset))

    dtype = base_dtype(settings, on_gpu, bf16)
    backbone, tokenizer = load_base(base_dir, dtype, settings.get("trust_remote_code", False))
    added = ensure_step_token(tokenizer, backbone, fmt.step_token)
    fingerprint = base_fingerprint(backbone, tokenizer, fmt.step_token) if mode == "head" else None
    marks = {"startup": (t0, time.time())}
    if tokens:
        instances, data_stats = read_tokens(tokens, tokenizer, fmt, settings["max_length"], label_type)
    else:
        instances, data_stats = training_instances(trainset, tokenizer, fmt, settings, label_type)
    marks["tokenize"] = (marks["startup"][1], time.time())
    shared = (training_features(features, instances, fingerprint, fmt, settings["max_length"])
              if features else None)
    set_seed(int(settings["seed"]))
    trainee = build_trainee(backbone, tokenizer, instances, settings, label_type, on_gpu, shared)
    marks["features"] = (marks["tokenize"][1], time.time())
    trainer, result, train_seconds = run_trainer(trainee, args, tokenizer, resume, ckpt, callbacks,
                                                 settings["batch_tokens"])
    marks["train"] = (marks["features"][1], time.time())
    train_tokens, full_sd = gather_trained(trainer, args)
    gathered = time.time() - marks["train"][1]
    rank0 = trainer.is_world_process_zero()
    tr = time.time()
    resampled, resample_runs = (train_resample_heads(trainee, instances, settings, label_type, on_gpu, bf16,
                                                     tokenizer, ckpt)
                                if mode == "head" and settings["resamples"] else (None, []))
    marks["resamples"] = (tr, time.time())

    history = [(h["step"], float(h["loss"])) for h in trainer.state.log_history if "loss" in h]
    metrics = {
        "mode": mode, "label_type": label_type, "soft_loss": settings["soft_loss"] if label_type == "soft" else None,
        "base": str(base_dir), "trainset": str(trainset), "step_token": fmt.step_token, "step_token_added": added,
        "loss_history": [loss for _, loss in history], "loss_history_steps": [s for s, _ in history],
        "final_train_loss": float(result.training_loss) if result.training_loss is not None else None,
        "global_steps": int(trainer.state.global_step), "epochs": float(trainer.state.epoch or 0.0),
        "resumed_from": resume, "world_size": int(args.world_size),
        "deepspeed": str(args.deepspeed) if trainer.is_deepspeed_enabled else None,
        "saved_by_rank": int(args.process_index) if rank0 else None,
        # non-padding tokens of the instances in all optimizer steps of all processes (x epochs); in head
        # mode each instance went through the frozen base once (feature_tokens, feature_seconds), or none
        # did here: their features were read from the shared pass (`features`)
        "train_tokens": train_tokens, "feature_tokens": int(trainee.feature_tokens),
        "features": [str(f) for f in features] if features else None,
        "train_seconds": train_seconds, "feature_seconds": trainee.feature_seconds,
        "tokens_file": str(tokens) if tokens else None,
        # head mode: accuracy of the trained head on its own training steps beside the majority-class
        # rate (a head that learnt nothing sits at the majority rate)
        "train_fit": step_fit(trainee.head, trainee.dataset) if mode == "head" else {},
        # training.resamples: R heads on bootstrap draws of the instances (resamples.py), in RESAMPLE_FILE
        "resamples": len(resample_runs), "resample_draw": DRAW_RULE if resample_runs else None,
        "resample_runs": resample_runs,
        "data": data_stats,
        # training.batch_tokens: the first epoch's token-sized micro-batches (batches.geometry), else null
        "batches": trainer.batch_geometry,
        "precision": "bf16" if bf16 else ("bf16-frozen-base" if dtype == torch.bfloat16 else "fp32"),
        "hardware": hardware(), "settings": settings,
    }
    if not rank0:
        return metrics
    meta = {"max_length": settings["max_length"], "label_type": label_type, "soft_loss": settings["soft_loss"],
            "mode": mode, "base": str(base_dir), "base_fingerprint": fingerprint}
    ts = time.time()
    metrics["layout"] = save_trained(out, full_sd, trainer, backbone, tokenizer, fmt, settings, meta, dtype)
    if resampled:
        save_resample_heads(out / RESAMPLE_FILE, resampled, {"draw": DRAW_RULE, "seed": int(settings["seed"])})
    marks["save"] = (ts - gathered, time.time())  # the gather (a collective, before the resamples) counts too
    metrics["wall_seconds"] = time.time() - t0
    # where the wall time went (phase_seconds); the process's own start before it, outside wall_seconds
    metrics["phase_seconds"] = phase_seconds(marks, getattr(trainer, "checkpoint_seconds", 0.0))
    metrics["process_start_seconds"] = started
    busy = train_seconds + trainee.feature_seconds
    metrics["tokens_per_second"] = train_tokens / busy if busy > 0 else None
    write_json(metrics, out / METRICS_FILE, default=str)
    if (ckpt / LOG_DIR).is_dir():  # training.report_to's local logs outlive the checkpoints, in the PRM's directory
        shutil.copytree(ckpt / LOG_DIR, out / LOG_DIR, dirs_exist_ok=True)
    if not settings["keep_checkpoints"]:
        shutil.rmtree(ckpt, ignore_errors=True)
    return metrics


def step_fit(head: StepHead, dataset: list[dict]) -> dict:
    """Training-set fit of a head-only PRM: step accuracy (P(good) >= 0.5 against labels >= 0.5),
    the majority-class rate and the share of positive steps."""
    feats = torch.cat([d["step_features"] for d in dataset])
    target = torch.tensor([t for d in dataset for t in d["step_targets"]], dtype=torch.float32) >= 0.5
    with torch.no_grad():
        good = torch.softmax(head.eval()(feats).float(), dim=-1)[:, 1] >= 0.5
    pos = float(target.float().mean()) if len(target) else float("nan")
    return {"steps": int(len(target)), "step_accuracy": float((good == target).float().mean()) if len(target) else None,
            "majority_rate": max(pos, 1 - pos) if len(target) else None, "positive_rate": pos,
            "predicted_positive_rate": float(good.float().mean()) if len(target) else None}


def _merged_lora_backbone(peft_state: dict, base_dir: str, dtype: torch.dtype, step_token: str, lora: dict,
                          adapter_dir: Path | None = None, trust_remote_code: bool = False):
    """The base with the trained LoRA adapters (a PeftModel state dict) merged in, built on CPU; with
    `adapter_dir`, the adapter is first saved there unmerged (PeftModel.save_pretrained: loadable with
    `PeftModel.from_pretrained(AutoModel.from_pretrained(base), adapter_dir)`)."""
    from peft import LoraConfig, get_peft_model  # lazy: lora mode only

    base, tokenizer = load_base(base_dir, dtype, trust_remote_code)
    added = ensure_step_token(tokenizer, base, step_token)  # same vocabulary size as the trained model
    peft_model = get_peft_model(base, LoraConfig(r=int(lora["r"]), lora_alpha=int(lora["alpha"]),
                                                 lora_dropout=float(lora["dropout"]),
                                                 target_modules=lora["target_modules"]))
    peft_model.load_state_dict(peft_state, strict=True)
    if adapter_dir is not None:
        # an added step token resized the embeddings: the adapter must carry them (the base lacks the row);
        # set explicitly, as peft's "auto" would look the base up on the Hub
        peft_model.save_pretrained(adapter_dir, save_embedding_layers=added)
    return peft_model.merge_and_unload()
