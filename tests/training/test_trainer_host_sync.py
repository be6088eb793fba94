"""No host sync per micro-step on the training hot path (prm_lessons.training.trainer): a few optimizer steps of
a tiny random-weight Qwen2 PRM through the project's Trainer path (build_trainee, training_arguments,
run_trainer: PrmTrainer, StepCollator) under a TorchDispatchMode that counts aten._local_scalar_dense (what
.item(), int(), float() and bool() of a tensor resolve to: on a GPU each waits for the device). At most one
per optimizer step may happen; with gradient accumulation 2 a read per micro-step (PrmTrainer's former
int(n_tokens), the Trainer's NaN/inf loss filter) makes 2 and fails.

What is counted: everything between two optimizer steps' ends (TrainerCallback.on_step_end), so the
Trainer's loop, the collator, the project's model wrapper and loss, backward, clipping and the optimizer.
What is not: the Trainer's loss logging, which reads the loss at logging steps (logging_steps is set past
the run, so no step of it logs); its end-of-run reads; the base model's own attention-mask building
(transformers' SDPA path reads on the host whether a batch has padding, twice per forward: 2 per
micro-step; the base here runs eager attention, whose mask needs no such read, so that the rest of the
path is measured)."""
from __future__ import annotations

import traceback

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from torch.utils._python_dispatch import TorchDispatchMode  # noqa: E402

from _prm_tiny import signal_rows, tiny_base  # noqa: E402
from prm_lessons.models import prm as P  # noqa: E402
from prm_lessons.training import data as train_data  # noqa: E402
from prm_lessons.training import settings as train_settings  # noqa: E402
from prm_lessons.training import train as T  # noqa: E402
from prm_lessons.training import trainer as train_setup  # noqa: E402


class ScalarReads(TorchDispatchMode):
    """Counts tensor -> Python scalar reads, with where each came from (the innermost frame outside torch)."""

    def __init__(self):
        super().__init__()
        self.origins: list[str] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if func is torch.ops.aten._local_scalar_dense.default:
            frames = [f for f in traceback.extract_stack()[:-1] if "/torch/" not in f.filename]
            self.origins.append(f"{frames[-1].filename}:{frames[-1].lineno} {frames[-1].name}" if frames else "?")
        return func(*args, **(kwargs or {}))


def per_step_reads(reads: ScalarReads):
    from transformers import TrainerCallback

    class PerStep(TrainerCallback):
        marks: list[int] = []

        def on_step_end(self, args, state, control, **kwargs):
            self.marks.append(len(reads.origins))

    return PerStep()


@pytest.fixture(scope="module")
def base_qwen(tmp_path_factory):
    return tiny_base(tmp_path_factory.mktemp("base_qwen"), with_step_token=True, arch="qwen2")


@pytest.mark.parametrize("batch_tokens", [None, 300])
def test_at_most_one_host_read_per_optimizer_step(tmp_path, base_qwen, batch_tokens):
    from transformers import AutoModel

    settings = train_settings.settings_from({
        "mode": "full", "batch_size": 2, "batch_tokens": batch_tokens, "gradient_accumulation_steps": 2,
        "max_steps": 5, "learning_rate": 1e-3, "max_length": 256, "save_steps": 0,
        "logging_steps": 1000,  # past the run: the Trainer's loss logging (.item() of the loss) stays out
        "gradient_checkpointing": True})
    backbone = AutoModel.from_pretrained(str(base_qwen), dtype=torch.float32, attn_implementation="eager")
    _, tokenizer = P.load_base(str(base_qwen), torch.float32)
    P.ensure_step_token(tokenizer, backbone, settings["step_token"])
    instances, _ = train_data.prepare_instances(signal_rows(24), tokenizer, P.step_format(settings),
                                                settings["max_length"], "hard")
    trainee = T.build_trainee(backbone, tokenizer, instances, settings, "hard", on_gpu=False)
    args = train_setup.training_arguments(settings, tmp_path / "ck", on_gpu=False)
    reads = ScalarReads()
    step_ends = per_step_reads(reads)
    step_ends.marks = []
    with reads:
        trainer, _, _ = T.run_trainer(trainee, args, tokenizer, None, tmp_path / "ck", [step_ends],
                                      batch_tokens=settings["batch_tokens"])
    assert trainer.state.global_step == 5 and len(step_ends.marks) == 5
    per_step = [b - a for a, b in zip(step_ends.marks, step_ends.marks[1:])]
    assert max(per_step) <= 1, (per_step, reads.origins[step_ends.marks[0]:step_ends.marks[-1]])
    # the token count is still right: summed on the device, read once at the end
    tokens, _ = T.gather_trained(trainer, args)
    assert tokens > 0
