"""training.packing (StepCollator packing=True): a tiny random-weight Qwen2-shaped PRM in float32 gives the
packed micro-batch (one row, position_ids restarting at 0, no attention mask) the same step logits, loss and
gradients as the padded one, for the attention implementations run on CPU; no instance attends to another
in the packed row; and the checks notice a packed row whose position_ids do not restart (transformers then
sees one sequence and attends across). Attention implementations that would attend across are refused."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from prm_lessons.models import prm as P  # noqa: E402
from prm_lessons.training import settings as train_settings  # noqa: E402
from prm_lessons.training import train as T  # noqa: E402

PAD = 0
# different lengths, steps in the middle and at the end (the step token's position), hard and soft targets
LENGTHS = (9, 17, 5, 12)
STEPS = ((3, 8), (4, 10, 16), (4,), (2, 6, 11))
TARGETS = ((1.0, 0.0), (1.0, 1.0, 0.0), (0.0,), (0.25, 1.0, 0.75))
ATOL = 1e-5


def _instances(seed: int = 0) -> list[dict]:
    g = torch.Generator().manual_seed(seed)
    return [{"instance_id": f"i{k}", "input_ids": torch.randint(1, 64, (n,), generator=g).tolist(),
             "step_pos": list(sp), "step_targets": list(t)}
            for k, (n, sp, t) in enumerate(zip(LENGTHS, STEPS, TARGETS, strict=True))]


def _prm(attn: str, label_type: str = "hard") -> P.ProcessRewardModel:
    """tests/support/_prm_tiny.tiny_base's shape (hidden 32, 2 layers, GQA 4/2), Qwen2, built in memory."""
    cfg = transformers.Qwen2Config(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                   num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512,
                                   pad_token_id=PAD)
    torch.manual_seed(0)
    backbone = transformers.AutoModel.from_config(cfg, attn_implementation=attn, dtype=torch.float32)
    assert backbone.config._attn_implementation == attn
    assert backbone.config.use_cache  # Qwen2's default: a KV cache would hide the packing from transformers
    return P.ProcessRewardModel(backbone, P.StepHead(32), label_type, "bce").eval()


def _run(model, batch: dict):
    """(step logits, loss, gradients of the head and of a first-layer attention weight) of one batch."""
    model.zero_grad(set_to_none=True)
    out = model(**{k: v for k, v in batch.items() if k != "n_tokens"})
    out["loss"].backward()
    grads = {n: p.grad.detach().clone() for n, p in model.named_parameters()
             if n.startswith("head.") or n == "backbone.layers.0.self_attn.q_proj.weight"}
    return out["logits"].detach(), out["loss"].detach(), grads


def _unpacked_positions(batch: dict) -> dict:
    """The packed row with position_ids 0..T-1 (not restarting): one sequence to transformers."""
    return {**batch, "position_ids": torch.arange(batch["input_ids"].shape[1]).unsqueeze(0)}


def test_packed_batch_layout():
    items = _instances()
    b = P.StepCollator(PAD, packing=True)(items)
    total = sum(LENGTHS)
    assert b["input_ids"].shape == (1, total) and "attention_mask" not in b
    assert b["input_ids"][0].tolist() == [t for it in items for t in it["input_ids"]]
    assert b["position_ids"][0].tolist() == [i for n in LENGTHS for i in range(n)]
    starts = [sum(LENGTHS[:k]) for k in range(len(LENGTHS))]
    assert b["step_pos"].tolist() == [s + p for s, sp in zip(starts, STEPS, strict=True) for p in sp]
    assert b["step_batch"].tolist() == [0] * sum(map(len, STEPS))
    assert b["step_targets"].tolist() == [t for ts in TARGETS for t in ts]
    assert int(b["n_tokens"]) == total == int(P.StepCollator(PAD)(items)["n_tokens"])


@pytest.mark.parametrize("label_type", ["hard", "soft"])
@pytest.mark.parametrize("attn", ["sdpa", "eager"])
def test_packed_equals_padded(attn, label_type):
    items = _instances()
    if label_type == "hard":
        items = [{**it, "step_targets": [float(t >= 0.5) for t in it["step_targets"]]} for it in items]
    model = _prm(attn, label_type)
    padded = P.StepCollator(PAD)(items)
    packed = P.StepCollator(PAD, packing=True)(items)
    assert bool((padded["attention_mask"] == 0).any())  # the padded batch has padding to mask
    lg_pad, loss_pad, g_pad = _run(model, padded)
    lg_pack, loss_pack, g_pack = _run(model, packed)
    torch.testing.assert_close(lg_pack, lg_pad, atol=ATOL, rtol=0)
    torch.testing.assert_close(loss_pack, loss_pad, atol=ATOL, rtol=0)
    assert set(g_pack) == set(g_pad) and len(g_pad) == 5
    for name in g_pad:
        torch.testing.assert_close(g_pack[name], g_pad[name], atol=ATOL, rtol=0, msg=name)
    # the same comparison sees a packed row whose positions do not restart (attention across, RoPE shifted)
    lg_bad, _, _ = _run(model, _unpacked_positions(packed))
    assert (lg_bad - lg_pad).abs().max() > 1e-3


@pytest.mark.parametrize("attn", ["sdpa", "eager"])
def test_packed_instances_do_not_attend_across(attn):
    model = _prm(attn)
    items = _instances()
    other = [dict(it) for it in items]
    other[0]["input_ids"] = [(t % 63) + 1 for t in (x + 7 for x in items[0]["input_ids"])]  # new tokens, same length
    collate = P.StepCollator(PAD, packing=True)
    n0 = len(STEPS[0])
    with torch.no_grad():
        a = model(**{k: v for k, v in collate(items).items() if k != "n_tokens"})["logits"]
        b = model(**{k: v for k, v in collate(other).items() if k != "n_tokens"})["logits"]
        assert (a[:n0] - b[:n0]).abs().max() > 1e-3  # instance 1's own steps did change
        torch.testing.assert_close(b[n0:], a[n0:], atol=1e-6, rtol=0)  # the later instances' did not
        # with positions that do not restart, the same change reaches the later instances
        bad_a = model(**{k: v for k, v in _unpacked_positions(collate(items)).items() if k != "n_tokens"})["logits"]
        bad_b = model(**{k: v for k, v in _unpacked_positions(collate(other)).items() if k != "n_tokens"})["logits"]
        assert (bad_a[n0:] - bad_b[n0:]).abs().max() > 1e-3


def test_other_attention_implementations_are_refused():
    for impl in P.PACKED_ATTENTION:
        P.check_packed_attention(SimpleNamespace(_attn_implementation=impl))
    with pytest.raises(ValueError, match="training.packing: attention implementation 'paged|eager'"):
        P.check_packed_attention(SimpleNamespace(_attn_implementation="paged|eager"))
    model = _prm("sdpa")
    model.backbone.config._attn_implementation = "my-kernel"  # a custom kernel: masking_utils builds it no mask
    batch = P.StepCollator(PAD, packing=True)(_instances())
    with pytest.raises(ValueError, match="would attend across"):
        model(**{k: v for k, v in batch.items() if k != "n_tokens"})
    # before training starts (TrainingError, naming the key); the padded default is not checked
    settings = train_settings.settings_from({"mode": "full", "packing": True, "gradient_checkpointing": False})
    with pytest.raises(train_settings.TrainingError, match="training.packing"):
        T.trainable_model(model.backbone, model.head, settings, "hard")
    T.trainable_model(model.backbone, model.head, {**settings, "packing": False}, "hard")


def test_head_mode_refuses_packing():
    with pytest.raises(train_settings.TrainingError, match="training.packing: head mode"):
        train_settings.settings_from({"mode": "head", "packing": True})
    assert train_settings.settings_from({"mode": "head"})["packing"] is False  # the default
