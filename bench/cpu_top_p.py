"""Nucleus sampling on vLLM's CPU backend: vLLM's full-vocabulary sort per decode step against
prm_lessons.generation.cpu_top_p's top-K selection, side by side in one process on one engine (the same seeded
requests), with how many of the completions come out identical.

    PYTHONPATH=src .venv/bin/python bench/cpu_top_p.py [--model resources/models/smollm2] [--seqs 64] [--tokens 96]
(on the slowest host's ISA: prefix ATEN_CPU_CAPABILITY=avx2 ONEDNN_MAX_CPU_ISA=AVX2, or bash bench/slow_host.sh)
"""
import argparse
import os
import platform
import time


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="resources/models/smollm2")
    ap.add_argument("--seqs", type=int, default=64)
    ap.add_argument("--tokens", type=int, default=96)
    ap.add_argument("--top-p", type=float, default=0.8)
    ap.add_argument("--dtype", default="float32")
    a = ap.parse_args()
    from prm_lessons.jobs.hardware import vllm_cpu_setup

    os.environ.setdefault("OMP_NUM_THREADS", "2")
    vllm_cpu_setup({})
    from vllm import LLM, SamplingParams

    from prm_lessons.generation import cpu_top_p

    llm = LLM(model=a.model, dtype=a.dtype, max_model_len=2048, enforce_eager=True, seed=0,
              enable_chunked_prefill=False, max_num_batched_tokens=8192)
    prompts = [f"Solve step by step: {i} + {2 * i + 3} * {i % 7 + 1} = ?" for i in range(a.seqs)]
    params = [SamplingParams(max_tokens=a.tokens, min_tokens=a.tokens, temperature=0.7, top_p=a.top_p, seed=i)
              for i in range(a.seqs)]
    llm.generate(prompts[:2], params[:2], use_tqdm=False)  # warm-up

    def run():
        t = time.perf_counter()
        outs = llm.generate(prompts, params, use_tqdm=False)
        dt = time.perf_counter() - t
        return [o.outputs[0].token_ids for o in outs], sum(len(o.outputs[0].token_ids) for o in outs) / dt

    vllm_ids, vllm_rate = run()
    assert cpu_top_p.install(), "this vLLM has no apply_top_k_top_p_pytorch to replace"
    ours_ids, ours_rate = run()
    same = sum(list(x) == list(y) for x, y in zip(vllm_ids, ours_ids))
    print(f"host: {platform.processor() or platform.machine()}, torch threads {os.environ['OMP_NUM_THREADS']}, "
          f"ATEN_CPU_CAPABILITY={os.environ.get('ATEN_CPU_CAPABILITY', '(native)')}, {a.dtype}")
    print(f"{a.seqs} sequences x {a.tokens} tokens, T 0.7, top_p {a.top_p}: vLLM sort {vllm_rate:.0f} tokens/s, "
          f"top-K selection {ours_rate:.0f} tokens/s: ratio {ours_rate / vllm_rate:.2f}x; "
          f"identical completions {same}/{a.seqs}")


if __name__ == "__main__":
    main()
