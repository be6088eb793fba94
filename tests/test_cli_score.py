"""`prm-lessons score` (prm_lessons.cli over prm_lessons.scoring.score_file) on a tiny PRM trained here and
on a released-format (Qwen2.5-Math-PRM layout) random-weight PRM with the real tokenizer: the scores are
checked against computations that do not go through the scoring adapters; bad rows stop the command
before any model is loaded. Row checks one by one: tests/scoring/test_score_file.py."""
from __future__ import annotations

import json

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from _prm_tiny import qwen2_prm, score_steps, signal_rows, tiny_base, write_trainset  # noqa: E402
from prm_lessons import cli  # noqa: E402
from prm_lessons.models import prm as P  # noqa: E402
from prm_lessons.steps import COT_SYSTEM_PROMPT, build_prm_input  # noqa: E402
from prm_lessons.training import train as T  # noqa: E402

FAST = {"epochs": 2, "batch_size": 4, "learning_rate": 3e-3, "save_steps": 0, "max_length": 256, "logging_steps": 1,
        "precision": "fp32"}


def _run(argv):
    args = cli.build_parser().parse_args(argv)
    return args.func(args)


def _jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _read(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A tiny full fine-tuned PRM in the project layout (a Llama body), trained here."""
    d = tmp_path_factory.mktemp("trained")
    base = tiny_base(d / "base")
    ts = write_trainset(d / "ts.parquet", signal_rows(12))
    T.train_prm(str(ts), str(base), str(d / "prm"), {**FAST, "mode": "full"}, "hard", checkpoint_dir=str(d / "ck"))
    return d / "prm"


def test_score_a_trained_prm_both_row_forms(tmp_path, trained):
    rows = signal_rows(4, seed=5)
    ours = [{"id": r["instance_id"], "problem": r["question"], "steps": r["steps"], "keep": k}
            for k, r in enumerate(rows)]
    trl = [{"prompt": r["question"], "completions": r["steps"], "labels": [True] * len(r["steps"])} for r in rows]
    out_a, out_b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    _run(["score", "--prm", str(trained), "--input", str(_jsonl(tmp_path / "a_in.jsonl", ours)),
          "--output", str(out_a)])
    _run(["score", "--prm", str(trained), "--input", str(_jsonl(tmp_path / "b_in.jsonl", trl)), "--output", str(out_b)])
    a, b = _read(out_a), _read(out_b)
    model, tok, fmt = P.load_prm(trained)
    want = score_steps(model, tok, fmt, [(r["question"], r["steps"]) for r in rows])  # the training path
    assert [r["id"] for r in a] == [r["instance_id"] for r in rows] and [r["keep"] for r in a] == [0, 1, 2, 3]
    assert all(r["labels"] == t["labels"] for r, t in zip(b, trl))  # input fields pass through
    for ra, rb, w, r in zip(a, b, want, rows):
        assert ra["n_steps_scored"] == len(r["steps"]) == len(ra["step_scores"])
        assert ra["step_scores"] == pytest.approx(w, abs=1e-5)
        assert rb["step_scores"] == ra["step_scores"]


def test_max_length_cuts_whole_steps_to_null(tmp_path, trained):
    r = signal_rows(1, seed=3)[0]
    rows = [{"problem": r["question"], "steps": r["steps"] * 4}]
    out = tmp_path / "o.jsonl"
    _, tok, fmt = P.load_prm(trained)
    full = len(build_prm_input(tok, rows[0]["problem"], rows[0]["steps"], fmt).input_ids)
    _run(["score", "--prm", str(trained), "--input", str(_jsonl(tmp_path / "i.jsonl", rows)), "--output", str(out),
          "--max-length", str(full // 2)])
    got = _read(out)[0]
    k = got["n_steps_scored"]
    assert 0 < k < len(rows[0]["steps"])
    assert all(x is not None for x in got["step_scores"][:k])
    assert got["step_scores"][k:] == [None] * (len(rows[0]["steps"]) - k)


def _card_qwen_prm_scores(path, question, steps):
    """Qwen2.5-Math-PRM's model card computation: the chat text with "<extra_0>" after every step, encoded
    whole, the body's hidden states through the `score` head (Linear-ReLU-Linear) read by name from the
    checkpoint, softmax index 1 where input_ids == <extra_0>'s id."""
    from safetensors.torch import load_file

    tok = transformers.AutoTokenizer.from_pretrained(path)
    body = transformers.AutoModel.from_pretrained(path, dtype=torch.float32).eval()
    sd = {k: v.float() for k, v in load_file(str(path / "model.safetensors")).items() if k.startswith("score.")}
    msgs = [{"role": "system", "content": "Please reason step by step, and put your final answer within \\boxed{}."},
            {"role": "user", "content": question},
            {"role": "assistant", "content": "<extra_0>".join(steps) + "<extra_0>"}]
    ids = tok.encode(tok.apply_chat_template(msgs, tokenize=False, add_generation_prompt=False))
    with torch.no_grad():
        h = body(input_ids=torch.tensor([ids])).last_hidden_state[0].float()
        h = torch.relu(h @ sd["score.0.weight"].T + sd["score.0.bias"])
        p = torch.softmax(h @ sd["score.2.weight"].T + sd["score.2.bias"], -1)[:, 1]
    return [float(p[i]) for i, x in enumerate(ids) if x == tok.convert_tokens_to_ids("<extra_0>")]


def test_score_a_released_format_prm(tmp_path, capsys):
    path = qwen2_prm(tmp_path / "qwen_prm", "qwen_prm", hidden=64, layers=2, heads=2, kv=1, inter=128)
    rows = [{"id": "a", "problem": "What is 2 + 3 * 4?", "steps": ["First 3 * 4 = 12.", "Then 2 + 12 = 14."]},
            {"id": "b", "problem": "Janet has 16 eggs. She eats 3. How many are left?",
             "steps": ["She starts with 16 eggs.", "She eats 3, so $16 - 3 = 13$.", "The answer is $\\boxed{13}$."]}]
    inp, out = _jsonl(tmp_path / "i.jsonl", rows), tmp_path / "o.jsonl"
    assert cli.main(["score", "--prm", str(path), "--input", str(inp), "--output", str(out)]) == 2
    assert "--adapter" in capsys.readouterr().err and not out.exists()  # a released format must be named
    _run(["score", "--prm", str(path), "--adapter", "qwen_prm", "--dtype", "float32", "--input", str(inp),
          "--output", str(out)])
    # the same PRM described by its options (adapter declared) gives the card's scores too
    declared = {"model_class": "process_reward", "prompt": "chat", "step_tag": "<extra_0>",
                "system_prompt": COT_SYSTEM_PROMPT}
    out2 = tmp_path / "o2.jsonl"
    _run(["score", "--prm", str(path), "--adapter", "declared", "--params", json.dumps(declared), "--dtype", "float32",
          "--input", str(inp), "--output", str(out2)])
    for got, got2, r in zip(_read(out), _read(out2), rows):
        assert got["id"] == got2["id"] == r["id"]
        card = _card_qwen_prm_scores(path, r["problem"], r["steps"])
        assert got["step_scores"] == pytest.approx(card, abs=1e-4)
        assert got2["step_scores"] == pytest.approx(card, abs=1e-4)


def test_bad_rows_stop_before_the_model_is_loaded(tmp_path, capsys):
    rows = [{"id": 1, "problem": "q", "steps": ["a"]}, {"id": 1, "problem": "q", "steps": ["b"]},
            {"problem": "q", "steps": "one step"}, {"prompt": "q", "steps": ["a"]}, {"question": "q"},
            {"id": "z", "problem": None, "steps": ["a", 3]}]
    out = tmp_path / "o.jsonl"
    # the PRM does not exist: the rows are checked first, so their errors are what the user sees
    rc = cli.main(["score", "--prm", str(tmp_path / "nope"), "--input", str(_jsonl(tmp_path / "i.jsonl", rows)),
                   "--output", str(out)])
    err = capsys.readouterr().err
    assert rc == 2 and not out.exists()
    for needle in ("row 2 (id=1): duplicate id (also row 1)", "row 3: `steps` is a JSON string",
                   "row 4: has both ['steps'] and ['prompt']", "row 5: lacks field(s) ['problem', 'steps']",
                   "row 6 (id='z'): `problem` is a JSON null", "row 6 (id='z'): `steps[1]` is a JSON number"):
        assert needle in err, err
    assert "nope" not in err
    good = _jsonl(tmp_path / "g.jsonl", rows[:1])
    assert cli.main(["score", "--prm", str(tmp_path / "nope"), "--input", str(good), "--output", str(out)]) == 2
    assert "no such directory, and not a Hub id" in capsys.readouterr().err
    model = tmp_path / "model"  # a folder beside the output (an output inside an input folder is refused)
    model.mkdir()
    assert cli.main(["score", "--prm", str(model), "--input", str(good), "--output", str(out),
                     "--adapter", "token_classification", "--params", "[1]"]) == 2
    assert "--params: expected a JSON object" in capsys.readouterr().err
