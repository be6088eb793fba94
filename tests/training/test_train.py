"""PRM training on tiny random-weight models (no downloads): the loss goes down in every mode, the saved
directory loads and scores, hard/soft losses, bad rows fail naming the row, truncation is reported,
checkpoints resume after an interruption, and the defaults agree with the config schema."""
from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from _prm_tiny import score_steps, signal_rows, tiny_base, write_trainset  # noqa: E402
from prm_lessons.models import prm as P  # noqa: E402
from prm_lessons.rules import training as rules_training  # noqa: E402
from prm_lessons.steps import build_prm_input  # noqa: E402
from prm_lessons.training import checkpoints as train_checkpoints  # noqa: E402
from prm_lessons.training import data as train_data  # noqa: E402
from prm_lessons.training import launch as train_launch  # noqa: E402
from prm_lessons.training import settings as train_settings  # noqa: E402
from prm_lessons.training import train as T  # noqa: E402
from prm_lessons.training import trainer as train_setup  # noqa: E402

FAST = {"epochs": 6, "batch_size": 4, "learning_rate": 3e-3, "save_steps": 0, "max_length": 256,
        "logging_steps": 1, "gradient_checkpointing": True}


@pytest.fixture(scope="module")
def base_plain(tmp_path_factory):
    """SmolLM2-like: the tokenizer has no <extra_0>, training must add it."""
    return tiny_base(tmp_path_factory.mktemp("base_plain"), with_step_token=False)


@pytest.fixture(scope="module")
def base_qwen(tmp_path_factory):
    """Qwen-like: <extra_0> already in the vocabulary."""
    return tiny_base(tmp_path_factory.mktemp("base_qwen"), with_step_token=True, arch="qwen2")


@pytest.fixture(scope="module")
def trainset(tmp_path_factory):
    return write_trainset(tmp_path_factory.mktemp("ts") / "hard.parquet", signal_rows(24))


def _went_down(hist, k=4):
    assert len(hist) >= 2 * k, hist
    first, last = sum(hist[:k]) / k, sum(hist[-k:]) / k
    return last < first - 0.05


@pytest.mark.parametrize("mode,lr", [("head", 1e-2), ("lora", 3e-3), ("full", 1e-3)])
def test_loss_goes_down_and_dir_loads(tmp_path, base_plain, trainset, mode, lr):
    out = tmp_path / "prm"
    m = T.train_prm(str(trainset), str(base_plain), str(out), {**FAST, "mode": mode, "learning_rate": lr},
                    "hard", checkpoint_dir=str(tmp_path / "ckpt"), threads=1)
    assert _went_down(m["loss_history"]), m["loss_history"]
    for f in ("config.json", "model.safetensors", "tokenizer.json", P.HEAD_FILE, P.FORMAT_FILE, T.METRICS_FILE):
        assert (out / f).exists(), f
    saved = json.loads((out / T.METRICS_FILE).read_text())
    for k in ("loss_history", "train_tokens", "tokens_per_second", "wall_seconds", "hardware"):
        assert k in saved
    assert saved["train_tokens"] > 0 and saved["tokens_per_second"] > 0 and saved["hardware"]["device"] == "cpu"
    assert saved["mode"] == mode and saved["data"]["steps_dropped"] == 0
    assert not (tmp_path / "ckpt").exists()  # checkpoints removed after success (keep_checkpoints false)

    model, tok, fmt = P.load_prm(out)
    assert fmt.step_token == "<extra_0>" and "<extra_0>" in tok.get_vocab()
    rows = signal_rows(5, seed=7)
    scores = score_steps(model, tok, fmt, [(r["question"], r["steps"]) for r in rows])
    assert [len(s) for s in scores] == [len(r["steps"]) for r in rows]
    assert all(0.0 <= x <= 1.0 for s in scores for x in s)
    # one forward per batch == one forward per response (padding does not change scores)
    alone = [score_steps(model, tok, fmt, [(r["question"], r["steps"])])[0] for r in rows]
    for a, b in zip(scores, alone):
        assert a == pytest.approx(b, abs=2e-2 if mode == "head" else 1e-4)
    # per-token logits (the scoring adapters' call) agree with score_steps at the step positions
    enc = build_prm_input(tok, rows[0]["question"], rows[0]["steps"], fmt, None)
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([enc.input_ids]))
    probs = torch.softmax(logits[0, enc.step_positions], -1)[:, 1].tolist()
    assert probs == pytest.approx(alone[0], abs=1e-4)


def test_head_is_the_released_architecture(tmp_path, base_plain, trainset):
    out = tmp_path / "prm"
    # the paper's head exactly when the head-only standardisation is off (full/LoRA never have it)
    T.train_prm(str(trainset), str(base_plain), str(out),
                {**FAST, "mode": "head", "epochs": 1, "standardize_features": False}, "hard")
    from safetensors.torch import load_file

    head = load_file(str(out / P.HEAD_FILE))
    h = json.loads((out / "config.json").read_text())["hidden_size"]
    assert {k: tuple(v.shape) for k, v in head.items()} == {
        "net.0.weight": (h, h), "net.0.bias": (h,), "net.2.weight": (2, h), "net.2.bias": (2,)}
    meta = json.loads((out / P.FORMAT_FILE).read_text())
    assert meta["head"] == {"type": "linear-relu-linear", "hidden_size": h, "num_labels": 2, "positive_index": 1}


def test_step_token_added_only_when_missing(tmp_path, base_plain, base_qwen, trainset):
    from transformers import AutoTokenizer

    n_plain = len(AutoTokenizer.from_pretrained(base_plain))
    rows_plain = json.loads((base_plain / "config.json").read_text())["vocab_size"]
    rows_qwen = json.loads((base_qwen / "config.json").read_text())["vocab_size"]
    assert rows_plain == n_plain  # no spare embedding rows: adding the token must resize
    m1 = T.train_prm(str(trainset), str(base_plain), str(tmp_path / "a"), {**FAST, "mode": "head", "epochs": 1})
    m2 = T.train_prm(str(trainset), str(base_qwen), str(tmp_path / "b"), {**FAST, "mode": "head", "epochs": 1})
    assert m1["step_token_added"] and not m2["step_token_added"]
    cfg_a = json.loads((tmp_path / "a" / "config.json").read_text())
    cfg_b = json.loads((tmp_path / "b" / "config.json").read_text())
    tok_a = AutoTokenizer.from_pretrained(tmp_path / "a")
    assert cfg_a["vocab_size"] == n_plain + 1 and len(tok_a) == n_plain + 1
    assert tok_a.convert_tokens_to_ids("<extra_0>") == n_plain
    assert cfg_b["vocab_size"] == rows_qwen


@pytest.mark.parametrize("soft_loss", ["bce", "mse"])
def test_soft_labels_train(tmp_path, base_plain, soft_loss):
    ts = write_trainset(tmp_path / "soft.parquet", signal_rows(24, soft=True))
    m = T.train_prm(str(ts), str(base_plain), str(tmp_path / "prm"),
                    {**FAST, "mode": "head", "learning_rate": 1e-2, "soft_loss": soft_loss}, "soft")
    assert m["label_type"] == "soft" and m["soft_loss"] == soft_loss
    assert _went_down(m["loss_history"], k=4)


def test_loss_definitions():
    logits = torch.tensor([[0.3, 1.2], [2.0, -1.0], [0.0, 0.0]])
    hard = torch.tensor([1.0, 0.0, 1.0])
    ce = P.step_loss(logits, hard, "hard")
    assert float(ce) == pytest.approx(float(torch.nn.functional.cross_entropy(logits, hard.long())))
    # BCE on P(good) equals 2-class CE for 0/1 targets
    assert float(P.step_loss(logits, hard, "soft", "bce")) == pytest.approx(float(ce), abs=1e-6)
    soft = torch.tensor([0.25, 0.5, 1.0])
    p = torch.softmax(logits, -1)[:, 1]
    assert float(P.step_loss(logits, soft, "soft", "mse")) == pytest.approx(float(((p - soft) ** 2).mean()))
    bce = -(soft * p.log() + (1 - soft) * (1 - p).log()).mean()
    assert float(P.step_loss(logits, soft, "soft", "bce")) == pytest.approx(float(bce), abs=1e-6)


@pytest.mark.parametrize("labels,label_type,match", [
    ([1.0, 0.0], "hard", "2 steps but 3 labels"),
    ([1.0, 0.5, 1.0], "hard", "hard-label"),
    ([1.0, 1.5, 1.0], "soft", "outside"),
    ([1.0, float("nan"), 1.0], "soft", "outside"),
    ([1.0, "x", 1.0], "soft", "not a number"),
])
def test_bad_rows_name_the_instance(labels, label_type, match, base_plain):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(base_plain)
    P.ensure_step_token(tok, None, "<extra_0>")
    steps = ["a", "b"] if len(labels) == 2 else ["a", "b", "c"]
    if match.startswith("2 steps"):
        steps, labels = ["a", "b"], [1.0, 0.0, 1.0]
    rows = [{"instance_id": "ok-1", "question": "q", "steps": ["a"], "labels": [1.0]},
            {"instance_id": "bad-7", "question": "q", "steps": steps, "labels": labels}]
    with pytest.raises(train_settings.TrainingError, match=f"bad-7.*{match}"):
        train_data.prepare_instances(rows, tok, P.step_format(train_settings.settings_from({})), None, label_type)


# -- the parts of train_prm, each on its own ----------------------------------------------------------

def test_base_dtype_per_mode():
    s = train_settings.settings_from
    assert T.base_dtype(s({"mode": "full"}), True, True) == torch.float32
    assert T.base_dtype(s({"mode": "lora"}), True, True) == torch.bfloat16
    assert T.base_dtype(s({"mode": "lora"}), False, True) == torch.float32
    assert T.base_dtype(s({"mode": "lora"}), True, False) == torch.float32
    head = s({"mode": "head", "precision": "bf16"})
    assert T.base_dtype(head, False, False) == P.head_base_dtype(head)


def test_token_batches_train_every_epoch_to_the_scheduled_step(tmp_path, base_qwen, trainset):
    """training.batch_tokens through train_prm: the Trainer schedules len(loader) micro-batches per epoch
    and gets exactly that many in every epoch (each epoch's shuffle is padded to the planned count), so a
    several-epoch run reaches its last step; the geometry is recorded in train_metrics.json."""
    from prm_lessons.training.batches import TokenBatchSampler

    settings = {**FAST, "mode": "full", "epochs": 3, "batch_tokens": 400, "learning_rate": 1e-3}
    m = T.train_prm(str(trainset), str(base_qwen), str(tmp_path / "prm"), settings, "hard",
                    checkpoint_dir=str(tmp_path / "ck"), threads=1)
    b = m["batches"]
    assert b["batch_tokens"] == 400 and b["rows_p50"] >= 2 and b["padded_tokens_max"] <= 400
    _, tok = P.load_base(str(base_qwen), torch.float32)
    instances, _ = train_data.prepare_instances(signal_rows(24), tok, P.step_format(train_settings.settings_from(
        settings)), settings["max_length"], "hard")
    per_epoch = len(TokenBatchSampler([len(it["input_ids"]) for it in instances], 400, 0, 1, epochs=3))
    assert b["padded_count"] == per_epoch and m["global_steps"] == 3 * per_epoch
    assert m["train_tokens"] >= 3 * sum(len(it["input_ids"]) for it in instances)  # every instance, each epoch


def test_a_full_fine_tune_under_zero2_loads_its_base_in_bf16():
    """ZeRO-1/2 casts the module to bf16 and keeps fp32 masters itself, and nothing partitions the load: each
    rank holds the whole base, so it is loaded in bf16 (half the host RAM); ZeRO-3 (zero.Init) and plain
    DDP (autocast over fp32 weights) keep fp32, and so does every CPU run."""
    s = train_settings.settings_from
    root = Path(__file__).resolve().parents[2] / "config" / "deepspeed"
    zero2 = s({"mode": "full", "deepspeed": str(root / "zero2.json")})
    zero3 = s({"mode": "full", "deepspeed": str(root / "zero3.json")})
    assert T.base_dtype(zero2, True, True) == torch.bfloat16
    assert T.base_dtype(zero2, False, False) == torch.float32  # deepspeed_on_cpu: fp32 on CPU
    assert T.base_dtype(zero2, True, False) == torch.float32  # precision fp32
    assert T.base_dtype(zero3, True, True) == torch.float32
    assert train_setup.deepspeed_stage(zero2["deepspeed"]) == 2 and train_setup.deepspeed_stage(zero3["deepspeed"]) == 3


def test_resume_checkpoint_rank_zero_prepares_the_others_only_read(tmp_path):
    import contextlib

    ck = tmp_path / "ck"
    (ck / "checkpoint-3").mkdir(parents=True)
    (ck / "checkpoint-3" / "trainer_state.json").write_text("{}")
    (ck / "checkpoint-5").mkdir()  # cut off mid-save: no trainer_state.json
    (ck / train_checkpoints.FINGERPRINT_FILE).write_text(json.dumps({"fingerprint": "fp"}))

    class OtherRank:  # the rank-1 view of TrainingArguments: waits for rank 0, then reads
        process_index = 1

        @contextlib.contextmanager
        def main_process_first(self, local=True, desc=""):
            yield

    assert train_checkpoints.resume_checkpoint(OtherRank(), ck, "fp").endswith("checkpoint-3")
    assert (ck / "checkpoint-5").exists()  # a reader changes nothing
    args = train_setup.training_arguments(train_settings.settings_from(FAST), ck, on_gpu=False)
    assert args.process_index == 0
    assert train_checkpoints.resume_checkpoint(args, ck, "fp").endswith("checkpoint-3")
    assert not (ck / "checkpoint-5").exists()  # rank 0 removes the incomplete one
    assert train_checkpoints.resume_checkpoint(args, ck, "other settings") is None and not list(ck.glob("checkpoint-*"))
    # the directory now belongs to the new run
    assert train_checkpoints.resume_checkpoint(OtherRank(), ck, "fp") is None


@pytest.fixture(scope="module")
def base_and_tokenizer(base_plain):
    backbone, tok = P.load_base(str(base_plain), torch.float32)
    P.ensure_step_token(tok, backbone, "<extra_0>")
    return backbone, tok


def test_training_instances_and_none_left(trainset, base_and_tokenizer):
    _, tok = base_and_tokenizer
    fmt = P.step_format(train_settings.settings_from({}))
    instances, stats = train_data.training_instances(str(trainset), tok, fmt, train_settings.settings_from(FAST),
                                                     "hard")
    assert len(instances) == stats["instances_used"] == 24 and all(it["input_ids"] for it in instances)
    with pytest.raises(train_settings.TrainingError, match=f"{trainset.name}: no trainable instance"):
        train_data.training_instances(str(trainset), tok, fmt, train_settings.settings_from({**FAST, "max_length": 5}),
                                      "hard")


def test_build_trainee_head_mode_runs_the_frozen_base_once_and_other_modes_train_it(trainset, base_and_tokenizer):
    backbone, tok = base_and_tokenizer
    fmt = P.step_format(train_settings.settings_from({}))
    settings = train_settings.settings_from({**FAST, "mode": "head"})
    instances, _ = train_data.training_instances(str(trainset), tok, fmt, settings, "hard")
    head = T.build_trainee(backbone, tok, instances, settings, "hard", on_gpu=False)
    assert isinstance(head.model, P.HeadOnlyModel) and head.model.head is head.head and head.head.standardize
    assert not any(p.requires_grad for p in backbone.parameters())  # frozen
    assert len(head.dataset) == len(instances) and all("step_features" in d for d in head.dataset)
    assert head.feature_tokens == sum(len(it["input_ids"]) for it in instances) and head.feature_seconds > 0
    for p in backbone.parameters():  # the module-scoped base, as load_base gave it
        p.requires_grad_(True)
    full = T.build_trainee(backbone, tok, instances, train_settings.settings_from({**FAST, "mode": "full"}), "hard",
                           on_gpu=False)
    assert isinstance(full.model, P.ProcessRewardModel) and full.dataset is instances
    assert full.model.head is full.head and not full.head.standardize and full.feature_tokens == 0


def test_bad_settings_name_the_key():
    with pytest.raises(train_settings.TrainingError, match="training.mode"):
        train_settings.settings_from({"mode": "qlora"})
    with pytest.raises(train_settings.TrainingError, match="training.soft_loss"):
        train_settings.settings_from({"soft_loss": "hinge"})


def test_truncation_is_reported_not_silent(tmp_path, base_plain, trainset):
    m = T.train_prm(str(trainset), str(base_plain), str(tmp_path / "prm"),
                    {**FAST, "mode": "head", "epochs": 1, "max_length": 100}, "hard")
    d = m["data"]
    assert d["steps_dropped"] > 0 and d["instances_truncated"] > 0
    assert d["steps_used"] + d["steps_dropped"] == d["steps"]
    saved = json.loads((tmp_path / "prm" / T.METRICS_FILE).read_text())
    assert saved["data"]["steps_dropped"] == d["steps_dropped"]
    with pytest.raises(train_settings.TrainingError, match="no trainable instance"):
        T.train_prm(str(trainset), str(base_plain), str(tmp_path / "prm2"),
                     {**FAST, "mode": "head", "max_length": 5}, "hard")


def test_score_steps_marks_cut_steps_nan(tmp_path, base_plain, trainset):
    out = tmp_path / "prm"
    T.train_prm(str(trainset), str(base_plain), str(out), {**FAST, "mode": "head", "epochs": 1})
    model, tok, fmt = P.load_prm(out)
    r = signal_rows(1, seed=3)[0]
    full = score_steps(model, tok, fmt, [(r["question"], r["steps"])], max_length=10_000)[0]
    enc = build_prm_input(tok, r["question"], r["steps"], fmt, None)
    cut = score_steps(model, tok, fmt, [(r["question"], r["steps"])], max_length=enc.step_positions[0] + 2)[0]
    assert len(cut) == len(full) and cut[0] == pytest.approx(full[0], abs=2e-2)
    assert all(math.isnan(x) for x in cut[1:])


def test_seeded_runs_repeat(tmp_path, base_plain, trainset):
    a = T.train_prm(str(trainset), str(base_plain), str(tmp_path / "a"), {**FAST, "mode": "head", "epochs": 2})
    b = T.train_prm(str(trainset), str(base_plain), str(tmp_path / "b"), {**FAST, "mode": "head", "epochs": 2})
    assert a["loss_history"] == b["loss_history"]


class _Preempt(Exception):
    pass


def _preempt_at(step):
    from transformers import TrainerCallback

    class Preempt(TrainerCallback):
        def on_step_end(self, args, state, control, **kw):
            if state.global_step == step:
                raise _Preempt(f"preempted at step {step}")

    return Preempt()


def test_resume_after_preemption(tmp_path, base_plain, trainset):
    """A job killed after checkpoint-4 resumes there when rerun with the same settings and data (what a
    SLURM requeue does); changed settings never resume a stale checkpoint."""
    s = {**FAST, "mode": "lora", "epochs": 2, "save_steps": 4, "keep_checkpoints": False}
    ckpt = tmp_path / "ckpt"
    with pytest.raises(_Preempt):
        T.train_prm(str(trainset), str(base_plain), str(tmp_path / "prm"), s, "hard", checkpoint_dir=str(ckpt),
                    callbacks=[_preempt_at(6)])
    assert (ckpt / "checkpoint-4").is_dir()
    m = T.train_prm(str(trainset), str(base_plain), str(tmp_path / "prm"), s, "hard", checkpoint_dir=str(ckpt))
    assert m["resumed_from"].endswith("checkpoint-4")
    assert m["global_steps"] == 12
    assert m["loss_history_steps"] == list(range(1, 13))  # history restored from the checkpoint, no repeats
    # stale checkpoint + different settings: start over
    with pytest.raises(_Preempt):
        T.train_prm(str(trainset), str(base_plain), str(tmp_path / "prm"), s, "hard", checkpoint_dir=str(ckpt),
                    callbacks=[_preempt_at(5)])
    m2 = T.train_prm(str(trainset), str(base_plain), str(tmp_path / "prm"), {**s, "learning_rate": 1e-3}, "hard",
                     checkpoint_dir=str(ckpt))
    assert m2["resumed_from"] is None and m2["global_steps"] == 12
    assert m["train_tokens"] < m2["train_tokens"]  # the resumed run trained only steps 5-12


def test_rule_function_writes_declared_outputs(tmp_path, base_plain, trainset):
    out = tmp_path / "results" / "prms" / "v1"
    rules_training.train_prm(inputs={"trainset": str(trainset)},
                             outputs={"model": str(out), "metrics": str(out / T.METRICS_FILE)},
                             params={"base_dir": str(base_plain), "training": {**FAST, "mode": "head", "epochs": 1},
                                     "label_type": "hard", "checkpoint_dir": str(tmp_path / "ck")},
                             wildcards={"variant": "v1"}, threads=1)
    assert (out / T.METRICS_FILE).exists() and (out / P.FORMAT_FILE).exists()


def test_multi_gpu_launch_command():
    cmd = train_launch.distributed_command("/x/spec.json", 4, 23456)
    assert cmd[1:3] == ["-m", "torch.distributed.run"]
    assert cmd[cmd.index("--nproc_per_node") + 1] == "4" and cmd[cmd.index("--nnodes") + 1] == "1"
    assert cmd[cmd.index("--master_port") + 1] == "23456"
    assert cmd[-4:] == ["-m", "prm_lessons.training.launch", "--spec", "/x/spec.json"]


def test_free_port_is_free_and_per_job(monkeypatch):
    """Two trainings on one node must not meet on the same rendezvous port (the old launcher used 29500)."""
    import socket

    monkeypatch.setenv("SLURM_JOB_ID", "1234567")
    derived = 20000 + 1234567 % 20000
    with socket.socket() as held:
        try:
            held.bind(("", derived))
        except OSError:  # pragma: no cover - someone else holds it: then it must not be returned either
            pass
        port = train_launch.free_port()
        assert port != derived  # taken: another one
        with socket.socket() as s:
            s.bind(("", port))  # and that one is free
    assert train_launch.free_port() == derived  # free again: the job's own port
    monkeypatch.delenv("SLURM_JOB_ID")
    assert train_launch.free_port() > 0


def test_launched_processes_import_the_checkout(tmp_path):
    """The launcher's children run `-m prm_lessons.training.launch` in environments where the package is not
    installed (conda envs): the launch environment alone must make it importable, from any directory."""
    import subprocess
    import sys

    clean = {k: v for k, v in __import__("os").environ.items() if k != "PYTHONPATH"}
    probe = [sys.executable, "-S", "-c", "import prm_lessons, sys; print(prm_lessons.__file__)"]  # -S: no site, no .pth
    without = subprocess.run(probe, cwd=tmp_path, env=clean, capture_output=True, text=True)
    assert without.returncode != 0  # the control: this environment lacks the package
    env = train_launch.launcher_env(cpu=True, base=clean)
    ok = subprocess.run(probe, cwd=tmp_path, env=env, capture_output=True, text=True)
    assert ok.returncode == 0, ok.stderr
    assert Path(ok.stdout.strip()).resolve() == Path(T.__file__).resolve().parents[1] / "__init__.py"
    assert env["CUDA_VISIBLE_DEVICES"] == ""  # CPU ranks never grab a GPU


def test_run_training_launches_with_the_package_env(tmp_path, monkeypatch, base_plain, trainset):
    """processes > 1 on CPU goes through the launcher, with PYTHONPATH and a free port."""
    seen = {}

    def fake_launcher(cmd, env):
        seen.update(cmd=cmd, env=env)
        out = Path(json.loads(Path(cmd[-1]).read_text())["out_dir"])
        out.mkdir(parents=True, exist_ok=True)
        (out / T.METRICS_FILE).write_text(json.dumps({"world_size": 2}))

    monkeypatch.setattr(train_launch, "run_launcher", fake_launcher)
    m = train_launch.run_training(str(trainset), str(base_plain), str(tmp_path / "prm"), {**FAST, "processes": 2},
                                  "hard", checkpoint_dir=str(tmp_path / "ck"), threads=2)
    assert m == {"world_size": 2}
    assert seen["cmd"][seen["cmd"].index("--nproc_per_node") + 1] == "2"
    src = str(Path(T.__file__).resolve().parents[2])
    assert seen["env"]["PYTHONPATH"].split(__import__("os").pathsep)[0] == src


def test_gpus_asked_and_none_found_stops(tmp_path, base_plain, trainset):
    """No silent CPU fallback: the old code warned and trained on CPU."""
    from prm_lessons.jobs.hardware import GPUNotFoundError

    asked = torch.cuda.device_count() + 2
    with pytest.raises(GPUNotFoundError, match=rf"train_prm.*{asked} GPU"):
        train_launch.run_training(str(trainset), str(base_plain), str(tmp_path / "prm"), {**FAST, "gpus": asked},
                                  "hard", checkpoint_dir=str(tmp_path / "ck"))
    assert not (tmp_path / "prm").exists()


def test_rank_nonzero_gathers_but_does_not_write(tmp_path, monkeypatch, base_plain, trainset):
    """Under ZeRO-3 `get_state_dict` is a collective that returns the weights on rank 0 and None on the
    other ranks: those must take part in it, then write nothing and not fail."""
    import accelerate
    import transformers

    calls = []

    def gather(self, model, unwrap=True):
        calls.append(type(model).__name__)
        return None

    monkeypatch.setattr(accelerate.Accelerator, "get_state_dict", gather)
    monkeypatch.setattr(transformers.Trainer, "is_world_process_zero", lambda self: False)
    out = tmp_path / "prm"
    m = T.train_prm(str(trainset), str(base_plain), str(out), {**FAST, "mode": "full", "max_steps": 2}, "hard",
                    checkpoint_dir=str(tmp_path / "ck"))
    assert calls  # took part in the gather
    assert m["saved_by_rank"] is None and m["world_size"] == 1 and m["global_steps"] == 2
    assert not out.exists() or not list(out.iterdir())  # wrote nothing


def test_rank_zero_records_who_saved(tmp_path, base_plain, trainset):
    out = tmp_path / "prm"
    T.train_prm(str(trainset), str(base_plain), str(out), {**FAST, "mode": "lora", "max_steps": 2}, "hard",
                checkpoint_dir=str(tmp_path / "ck"))
    saved = json.loads((out / T.METRICS_FILE).read_text())
    assert saved["world_size"] == 1 and saved["saved_by_rank"] == 0
    model, tok, fmt = P.load_prm(out, device="cpu")
    assert all(0 <= p <= 1 for p in score_steps(model, tok, fmt, [("What is 1 + 2?", ["1 + 2 = 3."])])[0])


def test_save_steps_fraction_of_the_run(tmp_path, base_plain, trainset):
    """save_steps 0.25 of 12 steps: checkpoints at 3, 6, 9, 12 (int(0.25) == 0 used to mean: never)."""
    ckpt = tmp_path / "ck"
    T.train_prm(str(trainset), str(base_plain), str(tmp_path / "prm"),
                {**FAST, "mode": "head", "epochs": 2, "save_steps": 0.25, "save_total_limit": 10,
                 "keep_checkpoints": True}, "hard", checkpoint_dir=str(ckpt))
    assert sorted(p.name for p in ckpt.glob("checkpoint-*")) == [f"checkpoint-{i}" for i in (12, 3, 6, 9)]
    with pytest.raises(train_settings.TrainingError, match="save_steps"):
        train_settings.settings_from({"save_steps": 1.5})


def test_phase_seconds_account_for_the_wall_time(tmp_path, base_plain, trainset):
    """train_metrics.json says where the wall time went: disjoint phases, checkpoint saves out of the
    training loop, adding up to at most wall_seconds (consistency only, no time bound)."""
    m = T.train_prm(str(trainset), str(base_plain), str(tmp_path / "prm"),
                    {**FAST, "mode": "lora", "epochs": 1, "save_steps": 4}, "hard",
                    checkpoint_dir=str(tmp_path / "ck"), threads=1)
    saved = json.loads((tmp_path / "prm" / T.METRICS_FILE).read_text())
    phases = saved["phase_seconds"]
    assert list(phases) == list(T.PHASES) and all(v >= 0 for v in phases.values())
    # a model loaded, a trainset tokenised, steps trained, 2 checkpoints (steps 4 and 6) and a PRM saved
    assert all(phases[p] > 0 for p in ("startup", "tokenize", "train", "checkpoint", "save")), phases
    assert sum(phases.values()) <= saved["wall_seconds"]
    # the loop's phase holds the Trainer's train() (train_seconds) and the saves made inside it
    assert phases["checkpoint"] <= m["train_seconds"] <= phases["train"] + phases["checkpoint"]
    assert saved["process_start_seconds"] is None or saved["process_start_seconds"] >= 0


def test_phase_seconds_take_the_checkpoint_saves_out_of_the_loop():
    marks = {"startup": (0.0, 2.0), "tokenize": (2.0, 3.0), "features": (3.0, 3.0), "train": (3.0, 13.0),
             "resamples": (13.0, 13.0), "save": (13.0, 15.0)}
    assert T.phase_seconds(marks, 4.0) == {"startup": 2.0, "tokenize": 1.0, "features": 0.0, "train": 6.0,
                                           "checkpoint": 4.0, "resamples": 0.0, "save": 2.0}
    assert T.phase_seconds(marks, 99.0)["train"] == 0.0  # never negative: a save is inside the loop


def test_incomplete_checkpoint_is_never_resumed(tmp_path):
    """A save cut off by SIGKILL (after SLURM's KillWait) leaves a checkpoint without trainer_state.json or
    with the JIT sentinel: resume from the last complete one, and only rank 0 changes the directory."""
    ck = tmp_path / "ck"
    for name, files in {"checkpoint-4": ["trainer_state.json"],
                        "checkpoint-6": ["trainer_state.json", train_checkpoints.JIT_SENTINEL],
                        "checkpoint-8": ["model.safetensors"]}.items():
        (ck / name).mkdir(parents=True)
        for f in files:
            (ck / name / f).write_text("{}")
    (ck / train_checkpoints.FINGERPRINT_FILE).write_text(json.dumps({"fingerprint": "fp"}))
    assert train_checkpoints.find_checkpoint(ck, "fp").endswith("checkpoint-4")
    # readers change nothing
    assert train_checkpoints.find_checkpoint(ck, "other") is None and (ck / "checkpoint-8").exists()
    assert train_checkpoints.prepare_checkpoint_dir(ck, "fp").endswith("checkpoint-4")
    assert sorted(p.name for p in ck.glob("checkpoint-*")) == ["checkpoint-4"]
    assert train_checkpoints.prepare_checkpoint_dir(ck, "other") is None and not list(ck.glob("checkpoint-*"))


_KILLED_CHILD = """
import json, os, signal, sys, time
from transformers import TrainerCallback
from prm_lessons.training import train as T

trainset, base, out, ckpt, settings = sys.argv[1:6]

class SigtermAt6(TrainerCallback):
    def on_step_end(self, args, state, control, **kw):
        if state.global_step == 6:
            os.kill(os.getpid(), signal.SIGTERM)  # what SLURM sends on preemption / requeue
            time.sleep(3.5)  # transformers' JIT handler waits 3 s before it asks for the checkpoint

T.train_prm(trainset, base, out, json.loads(settings), "hard", checkpoint_dir=ckpt, callbacks=[SigtermAt6()])
"""


@pytest.mark.slow
@pytest.mark.parametrize("jit", [True, False])
def test_sigterm_mid_run_then_rerun_resumes(tmp_path, base_plain, trainset, jit):
    """A training killed by SIGTERM at step 6 of 12 (a separate process, as a SLURM job) fails without
    saving a PRM; its rerun resumes from the last checkpoint (the JIT one at 6, else the periodic one at 4)
    and completes all steps."""
    import subprocess
    import sys

    s = {**FAST, "mode": "lora", "epochs": 2, "save_steps": 4, "jit_checkpoint": jit}
    out, ckpt = tmp_path / "prm", tmp_path / "ck"
    script = tmp_path / "child.py"
    script.write_text(_KILLED_CHILD)
    src = str(Path(T.__file__).resolve().parents[2])
    env = {**__import__("os").environ, "PYTHONPATH": src, "CUDA_VISIBLE_DEVICES": ""}
    r = subprocess.run([sys.executable, str(script), str(trainset), str(base_plain), str(out), str(ckpt),
                        json.dumps(s)], env=env, capture_output=True, text=True)
    assert r.returncode != 0, r.stderr[-2000:]
    if jit:
        assert "TrainingInterrupted" in r.stderr
    else:
        assert r.returncode == -15  # killed by the signal itself
    assert not (out / T.METRICS_FILE).exists()  # no half-trained PRM passes for a result
    m = T.train_prm(str(trainset), str(base_plain), str(out), s, "hard", checkpoint_dir=str(ckpt))
    assert m["resumed_from"] is not None and m["resumed_from"].endswith("checkpoint-6" if jit else "checkpoint-4")
    assert m["global_steps"] == 12 and m["loss_history_steps"] == list(range(1, 13))


def test_defaults_are_what_validation_fills_in():
    """settings_from({}) (library callers and tests pass partial settings) equals the `training` block the
    workflow gets from a config that sets none: the schema's defaults, nested `lora` included."""
    import yaml

    from prm_lessons.config import validate_config

    raw = yaml.safe_load((Path(__file__).resolve().parents[2] / "config" / "config.yaml").read_text())
    assert train_settings.settings_from({}) == validate_config({**raw, "training": {}})["training"]


def test_deepspeed_zero3_config_is_valid_json():
    root = Path(__file__).resolve().parents[2]
    cfg = json.loads((root / "config" / "deepspeed" / "zero3.json").read_text())
    assert cfg["zero_optimization"]["stage"] == 3
    assert cfg["zero_optimization"]["stage3_gather_16bit_weights_on_model_save"] is True
    assert cfg["bf16"]["enabled"] == "auto" and cfg["train_micro_batch_size_per_gpu"] == "auto"


def test_paper_trains_with_the_zero2_config():
    """config/paper.yaml's 7B full fine-tunes use ZeRO-2 (weights replicated, gradients and optimizer state
    partitioned, gradient communication overlapped with backward, buckets sized by the Trainer)."""
    import yaml

    root = Path(__file__).resolve().parents[2]
    train = yaml.safe_load((root / "config" / "paper.yaml").read_text())["training"]
    assert train["deepspeed"] == "config/deepspeed/zero2.json"
    cfg = json.loads((root / train["deepspeed"]).read_text())
    zo = cfg["zero_optimization"]
    assert zo["stage"] == 2 and zo["overlap_comm"] is True and zo["contiguous_gradients"] is True
    assert zo["reduce_bucket_size"] == "auto" and cfg["bf16"]["enabled"] == "auto"
    assert zo["offload_optimizer"]["device"] == "none"


def test_trained_prm_scoring_jobs_ask_for_gpus_scoring(tmp_path):
    """A trained PRM is scored on as many GPUs as training.gpus_scoring says (default: its base's tensor-
    parallel size); the old rule always asked for the policy's. Released models keep their own."""
    import os
    import re
    import subprocess
    import sys

    import yaml

    root = Path(__file__).resolve().parents[2]
    overlay = tmp_path / "o.yaml"
    overlay.write_text("training:\n  gpus_scoring: 3\n")
    r = subprocess.run([sys.executable, "-m", "snakemake", "-n", "--cores", "2", "--forceall", "--configfile",
                        "config/paper.yaml", str(overlay)], cwd=root, capture_output=True, text=True,
                       env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    gpu_of = {}
    for block in re.split(r"^(?=rule )", r.stdout + r.stderr, flags=re.M):  # the job list goes to stderr
        rule = re.match(r"rule (score_\w+):", block)
        prm = re.search(r"wildcards: prm=([\w.\-]+)", block)
        gpu = re.search(r"resources: .*\bgpu=(\d+)", block)
        if rule and prm and gpu:
            gpu_of.setdefault(prm.group(1), set()).add(int(gpu.group(1)))
    variants = yaml.safe_load((root / "config/paper.yaml").read_text())["trainsets"]["variants"]
    for v in variants:
        assert gpu_of.get(v) == {3}, (v, gpu_of.get(v))
    assert gpu_of["skywork_prm_1_5b"] == {1}


def test_load_prm_spreads_over_several_gpus(tmp_path, monkeypatch, base_plain, trainset):
    """With more than one visible GPU a trained PRM is placed by device_map auto (a 72B-size PRM needs
    several); with one, or an explicit device, it is moved as a whole."""
    import transformers

    out = tmp_path / "prm"
    T.train_prm(str(trainset), str(base_plain), str(out), {**FAST, "mode": "head", "max_steps": 1}, "hard")
    real = transformers.AutoModel.from_pretrained
    seen = []

    def fake_from_pretrained(path, **kw):
        seen.append(kw.pop("device_map", None))
        return real(path, **kw)  # placed on the CPU here; the call is what matters

    monkeypatch.setattr(transformers.AutoModel, "from_pretrained", fake_from_pretrained)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    model, tok, fmt = P.load_prm(out)
    assert seen == ["auto"]
    assert next(model.head.parameters()).device == next(model.backbone.parameters()).device
    P.load_prm(out, device="cpu")
    assert seen == ["auto", None]


def test_head_fits_above_the_majority_rate_and_keeps_its_standardisation(tmp_path, base_plain, trainset):
    """Head mode: the standardised head learns the fixture's signal (training accuracy above the
    majority-class rate, recorded in train_fit), and the saved head carries its standardisation, which
    load_prm and the features path read back (same scores as the in-memory head)."""
    out = tmp_path / "prm"
    m = T.train_prm(str(trainset), str(base_plain), str(out),
                    {**FAST, "mode": "head", "epochs": 30, "learning_rate": 1e-2}, "hard",
                    checkpoint_dir=str(tmp_path / "ckpt"), threads=1)
    fit = m["train_fit"]
    assert fit["steps"] == m["data"]["steps_used"]
    assert fit["majority_rate"] == pytest.approx(max(fit["positive_rate"], 1 - fit["positive_rate"]))
    assert fit["step_accuracy"] > fit["majority_rate"] + 0.1, fit
    from safetensors.torch import load_file

    head = load_file(str(out / P.HEAD_FILE))
    assert {"feature_mean", "feature_std"} <= set(head) and bool((head["feature_std"] > 0).all())
    meta = json.loads((out / P.FORMAT_FILE).read_text())
    assert meta["head"]["type"] == "standardize-linear-relu-linear"
    model, _, _ = P.load_prm(out)
    assert model.head.standardize and torch.equal(model.head.feature_mean, head["feature_mean"])


def test_standardisation_is_the_training_features_moments():
    torch.manual_seed(0)
    x = torch.randn(50, 8) * torch.tensor([1000.0, 1, 1, 1, 1, 1, 1, 0.001]) + 5
    h = P.StepHead(8, standardize=True)
    h.fit_standardization(x)
    z = (x - h.feature_mean) / h.feature_std
    assert torch.allclose(z.mean(0), torch.zeros(8), atol=1e-3)
    assert torch.allclose(z.std(0, unbiased=False), torch.ones(8), atol=1e-3)
    with pytest.raises(ValueError):
        P.StepHead(8).fit_standardization(x)


def test_last_step_loss_logged_when_logging_steps_exceed_the_run(tmp_path, base_plain, trainset):
    """24 rows, batch 4, 1 epoch = 6 steps < logging_steps 10: the final loss is still in the history
    (the SLURM CI job and any short ablation read it)."""
    m = T.train_prm(str(trainset), str(base_plain), str(tmp_path / "prm"),
                    {**FAST, "mode": "head", "epochs": 1, "logging_steps": 10}, "hard", threads=1)
    assert m["global_steps"] == 6
    assert m["loss_history_steps"] == [6] and len(m["loss_history"]) == 1
    assert math.isfinite(m["loss_history"][0])
