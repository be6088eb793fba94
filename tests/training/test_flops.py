"""The FLOP / MFU formula (prm_lessons.training.flops) against hand counts for two real configs.

Sizes from the configs on the Hub (config.json): Qwen/Qwen2.5-0.5B (hidden 896, intermediate 4864, 24 layers,
14 heads, 2 kv heads, vocab 151936, tied embeddings) and Qwen/Qwen2.5-Math-7B-Instruct (hidden 3584,
intermediate 18944, 28 layers, 28 heads, 4 kv heads, vocab 152064, untied): the same numbers as
bench/train_throughput.py's QWEN25_05B and bench/gpu_check.py's slice. Their published parameter counts
(494,032,768 and 7,615,616,512: the model cards' 0.49B and 7.62B) are rebuilt below from the matmul
weights plus what the formula leaves out (embedding, biases, norms), so a wrong matmul count cannot pass.
"""
import pytest

from prm_lessons.training import flops

Q05 = dict(hidden_size=896, intermediate_size=4864, num_hidden_layers=24, num_attention_heads=14,
           num_key_value_heads=2, vocab_size=151936)
Q7 = dict(hidden_size=3584, intermediate_size=18944, num_hidden_layers=28, num_attention_heads=28,
          num_key_value_heads=4, vocab_size=152064)


def _published(cfg, s: flops.Shape, tied: bool) -> int:
    """Total parameters as transformers counts them, from the formula's matmul weights (with the LM head,
    without the step head) + the pieces it does not count."""
    h, L, kv = cfg["hidden_size"], cfg["num_hidden_layers"], s.kv_heads * s.hd
    embed = cfg["vocab_size"] * h
    biases = L * (s.attn_width + 2 * kv)  # Qwen2 has q, k, v biases
    norms = L * 2 * h + h
    lm = flops.Shape(**{**s.__dict__, "lm_head": True, "step_head": False})
    return flops.matmul_weights(lm) - (embed if tied else 0) + embed + biases + norms


def test_hand_counts_7b():
    s = flops.shape_of(Q7)
    # per layer: q, o 3584 x 3584; k, v 3584 x (4 x 128); gate, up, down 3 x 3584 x 18944
    per_layer = 2 * 3584 * 3584 + 2 * 3584 * 512 + 3 * 3584 * 18944
    assert per_layer == 233_046_016 == flops.layer_weights(s)
    step_head = 3584 * 3584 + 3584 * 2
    assert flops.matmul_weights(s) == 28 * per_layer + step_head == 6_538_140_672  # no vocab term at all
    assert _published(Q7, s, tied=False) == 7_615_616_512
    # attention at T = 2048, causal: 28 layers x 2 matmuls x 2 x 3584 x 2048 / 2
    assert flops.attention_flops(s, 2048) == 28 * 2 * 2 * 3584 * 2048 / 2 == 411_041_792
    assert flops.attention_flops(s, 2048, causal=False) == 2 * 411_041_792
    model = flops.train_flops(s, 2048)
    assert model == 6 * 6_538_140_672 + 3 * 411_041_792
    # gradient checkpointing recomputes the layers' forward, not the head's
    assert flops.train_flops(s, 2048, recompute=True) == model + 2 * 28 * per_layer + 411_041_792


def test_hand_counts_05b():
    s = flops.shape_of(Q05)
    per_layer = 2 * 896 * 896 + 2 * 896 * (2 * 64) + 3 * 896 * 4864
    assert per_layer == 14_909_440 == flops.layer_weights(s)
    assert flops.matmul_weights(s) == 24 * per_layer + 896 * 896 + 2 * 896
    assert _published(Q05, s, tied=True) == 494_032_768
    # a policy (LM head runs, tied or not) counts the output projection; the PRM does not
    policy = flops.shape_of(Q05, lm_head=True, step_head=False)
    assert flops.matmul_weights(policy) == 24 * per_layer + 896 * 151936
    assert flops.forward_flops(policy, 1000) == 2 * (24 * per_layer + 896 * 151936) + 24 * 4 * 896 * 1000 / 2


def test_formula_matches_the_transformers_module():
    torch = pytest.importorskip("torch")
    from transformers import AutoModel, Qwen2Config

    cfg = Qwen2Config(**{**Q7, "num_hidden_layers": 2})
    with torch.device("meta"):
        model = AutoModel.from_config(cfg)
    linear = sum(m.weight.numel() for m in model.modules() if isinstance(m, torch.nn.Linear))
    s = flops.shape_of(cfg, step_head=False)
    assert linear == flops.matmul_weights(s) == 2 * flops.layer_weights(s)


def test_mixed_lengths_and_utilisation():
    assert flops.attention_context([1000, 3000]) == (1000**2 + 3000**2) / 4000  # not the mean length 2000
    assert flops.attention_context([]) == 0.0
    s = flops.shape_of(Q7)
    u = flops.training_utilisation(s, 5000.0, 2048, 989e12, gradient_checkpointing=True)
    assert u["mfu"] == pytest.approx(5000 * flops.train_flops(s, 2048) / 989e12)
    assert u["hfu"] > u["mfu"] and u["hfu"] == pytest.approx(5000 * u["flops_per_token_hardware"] / 989e12)
    off = flops.training_utilisation(s, 5000.0, 2048, 989e12, gradient_checkpointing=False)
    assert off["hfu"] == off["mfu"]
    assert flops.peak_bf16("NVIDIA H200") == 989e12 and flops.peak_bf16("NVIDIA H100 PCIe") == 756e12
    assert flops.peak_bf16("cpu") is None
