"""Does the training path learn? The parts of `learn_cpu.sh` that are Python.

  inputs OUT --mirrors DIR   instances (SWE-bench Lite rows of small repositories at hand),
                             teacher rollouts (`codegrep-model batch`, LexicalPolicy), SFT rows
                             (`codegrep-model dataset sft`, reward-filtered), GRPO rows
                             (`codegrep-model dataset grpo`), and a tiny Qwen3 (random weights,
                             a byte-level BPE trained here on those rows: no model hub)
  eval OUT NAME --model DIR [--adapter DIR]
                             greedy rollouts of the model on every GRPO row, through the
                             training scheduler's own hooks (`EpisodeHooks`: the prompts, tool
                             calls, follow-up messages and strict answer parse GRPO uses) and
                             ms-swift's qwen3 template; one JSON line per instance
  report OUT                 the table (mean reward, F0.5, calls per turn; paired bootstrap
                             intervals), the per-step curve (CSV and SVG) from the GRPO run's
                             rollout log, written to OUT/report/

Runs in the ms-swift venv (ci/swift-tier.sh's pins). Not a test: it prints figures and writes them.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPOS = ("psf/requests", "pallets/flask", "pytest-dev/pytest")
DATA = Path(__file__).resolve().parents[3] / ".." / "shared" / "data"
SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
# Qwen's tokenizer has these as added tokens that are *not* special: decoding with
# skip_special_tokens keeps them, so a generated `<tool_call>` block survives into the text the
# scheduler parses. A tokenizer that marks them special loses every call the model writes.
AGENT_TOKENS = [
    "<tool_call>",
    "</tool_call>",
    "<tool_response>",
    "</tool_response>",
    "<think>",
    "</think>",
]
VOCAB = 8000
MODEL_SHAPE = {
    "hidden_size": 128,
    "intermediate_size": 384,
    "num_hidden_layers": 4,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 32,
}


def _run(cmd: list[str]) -> None:
    print("+", " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True)


def inputs(out: Path, mirrors: str, data: Path, threshold: float, max_length: int) -> None:
    out.mkdir(parents=True, exist_ok=True)
    bindir = Path(sys.executable).parent
    inst = out / "instances.jsonl"
    rows = [
        line
        for line in (data / "swebench" / "lite.jsonl").read_text().splitlines()
        if line.strip() and json.loads(line)["repo"] in REPOS
    ]
    inst.write_text("".join(r + "\n" for r in rows))
    cache, source = str(out / "cache"), f"{mirrors}/{{owner}}+{{name}}/repo"
    teacher = out / "teacher" / "lexical.pred.jsonl"
    teacher.parent.mkdir(exist_ok=True)
    if not teacher.exists():
        _run([str(bindir / "codegrep-model"), "batch", str(inst), "-o", str(teacher),
              "--cache", cache, "--source", source, "-j", "2"])  # fmt: skip
    grpo = out / "grpo"
    if not (grpo / "train.jsonl").exists():
        _run([str(bindir / "codegrep-model"), "dataset", "grpo", "-i", str(inst), "-o", str(grpo),
              "--cache", cache, "--source", source, "--val-fraction", "0"])  # fmt: skip
    model = out / "tiny-qwen3"
    if not (model / "config.json").exists():
        corpus = (grpo / "train.jsonl").read_text().splitlines()
        corpus += teacher.with_suffix(".rollouts.jsonl").read_text().splitlines()
        tiny_qwen3(model, corpus)
    short = out / "teacher" / "confirm.pred.jsonl"
    if not short.exists():
        asyncio.run(confirm_teacher(inst, teacher, short, model, cache, source, max_length))
    sft = out / "sft.jsonl"
    rollouts = str(short.with_suffix(".rollouts.jsonl"))
    _run([str(bindir / "codegrep-model"), "dataset", "sft", rollouts,
          "-i", str(inst), "-o", str(sft), "--threshold", str(threshold)])  # fmt: skip


class ConfirmTeacher:
    """The SFT teacher: LexicalPolicy's answer (from its full rollout), reached in two turns a
    model of this size can imitate. Turn 1 globs the top answer file's name (`**/NAME`), turn 2
    answers with LexicalPolicy's files. The full rollouts (6 to 14 grep/read calls, 9k to 34k
    tokens) do not fit a CPU's context; these do, and their glob result holds the path the
    answer names, so the answer can be copied from what the call returned."""

    name = "lexical-confirm"

    def __init__(self, answers: dict[str, list[str]]) -> None:
        self.answers = answers

    async def reply(self, request: Any) -> Any:
        from codegrep_model import PolicyReply
        from codegrep_model.scripted import call

        files = self.answers.get(request.instance.instance_id) or []
        if request.turn == 1 and files:
            name = files[0].rsplit("/", 1)[-1]
            return PolicyReply(content=None, tool_calls=(call("glob", {"pattern": f"**/{name}"}),))
        return PolicyReply(content=json.dumps({"files": files}))


async def confirm_teacher(
    inst: Path, teacher: Path, dest: Path, model: Path, cache: str, source: str, max_length: int
) -> None:
    """Rollouts of `ConfirmTeacher` on every instance, under the GRPO run's token budget
    (`--max_length`, counted with the model's tokenizer), with the training rollout config."""
    from collections.abc import AsyncIterator
    from contextlib import asynccontextmanager

    import codegrep_records as records
    from codegrep_model.batch import run_batch
    from codegrep_model.budget import TokenizerCounter
    from codegrep_model.datasets import TRAINING_CONFIG
    from codegrep_model.train._scheduler_core import TRAINING_BUDGET
    from transformers import AutoTokenizer
    from worktree_sandbox import BareRepoCache, TreePool

    answers = {}
    for line in teacher.read_text().splitlines():
        if line.strip():
            pred = json.loads(line)
            answers[pred["instance_id"]] = list(pred.get("files") or [])
    instances = records.load_instances(inst).records
    budget = TRAINING_BUDGET.model_copy(update={"max_length": max_length})
    config = TRAINING_CONFIG.model_copy(update={"budget": budget})
    counter = TokenizerCounter(AutoTokenizer.from_pretrained(str(model)))
    async with TreePool(BareRepoCache(cache, source=source)) as pool:

        @asynccontextmanager
        async def open_tree(i: Any) -> AsyncIterator[Any]:
            async with pool.open(i.repo, i.base_commit, folders=False) as tree:
                yield tree

        summary = await run_batch(
            ConfirmTeacher(answers),
            instances,
            open_tree,
            predictions=dest,
            rollouts=dest.with_suffix(".rollouts.jsonl"),
            jobs=2,
            config=config,
            counter=counter,
        )
    print(f"confirm teacher: {summary.answered} answered, {summary.errors} errors", flush=True)


def tiny_qwen3(out: Path, corpus: list[str]) -> None:
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast, Qwen3Config, Qwen3ForCausalLM

    tok = Tokenizer(models.BPE(unk_token=None))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB,
        special_tokens=SPECIALS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(corpus, trainer)
    hf = PreTrainedTokenizerFast(
        tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>"
    )
    hf.add_special_tokens({"additional_special_tokens": SPECIALS[1:]})
    hf.add_tokens(AGENT_TOKENS, special_tokens=False)
    hf.save_pretrained(out)
    torch.manual_seed(0)
    config = Qwen3Config(
        vocab_size=len(hf),
        max_position_embeddings=40960,
        eos_token_id=hf.eos_token_id,
        pad_token_id=hf.pad_token_id,
        tie_word_embeddings=True,
        **MODEL_SHAPE,
    )
    model = Qwen3ForCausalLM(config)
    model.save_pretrained(out)
    n = sum(p.numel() for p in model.parameters())
    print(f"tiny-qwen3: {n} parameters, vocabulary {len(hf)}", flush=True)


# ------------------------------------------------------------------------------ evaluation


def evaluate(
    out: Path,
    name: str,
    model_dir: Path,
    adapter: Path | None,
    max_new: int,
    max_length: int,
    batch: int,
    limit: int | None = None,
) -> None:
    import torch
    from codegrep_model.datasets import fold_follow_up
    from codegrep_model.train._scheduler_core import EpisodeHooks
    from grpo_rewards import INFO_ANSWER_FILES, INFO_NUM_TOOL_CALLS, INFO_NUM_TURNS, set_scores
    from swift import get_processor, get_template
    from transformers import AutoModelForCausalLM

    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_pretrained(str(model_dir), torch_dtype=torch.float32)
    if adapter is not None:
        from peft import PeftModel

        model = PeftModel.from_pretrained(model, str(adapter))
    model.eval()
    processor = get_processor(str(model_dir), model_type="qwen3", use_hf=True)
    # as the GRPO run encodes its prompts: --max_length, and ms-swift's default for GRPO, 'left'
    template = get_template(
        processor,
        max_length=max_length,
        template_type="qwen3",
        truncation_strategy="left",
        agent_template="hermes",
    )
    template.set_mode("pt")
    tok = template.tokenizer
    stop = [tok.convert_tokens_to_ids("<|im_end|>"), tok.convert_tokens_to_ids("<|endoftext|>")]
    rows = [json.loads(x) for x in (out / "grpo" / "train.jsonl").read_text().splitlines() if x]
    rows = rows[:limit] if limit is not None else rows
    hooks = EpisodeHooks(max_turns=4)
    dest = out / "eval" / f"{name}.jsonl"
    dest.parent.mkdir(exist_ok=True)
    t0 = time.perf_counter()
    convs = [[dict(m) for m in row["messages"]] for row in rows]
    tools = [json.loads(row["tools"]) for row in rows]
    infos: list[dict[str, Any]] = [{} for _ in rows]
    first: list[str] = ["" for _ in rows]
    live = list(range(len(rows)))
    try:
        for i, row in enumerate(rows):
            asyncio.run(hooks.start(f"{name}-{i}", convs[i], row, tools=tools[i]))
        # turn by turn over every live rollout, a few at a time: one prompt at a time spends
        # most of its time in per-token overhead, not in the model
        for turn in range(1, 5):
            texts: dict[int, str] = {}
            for b in range(0, len(live), batch):
                chunk = live[b : b + batch]
                encs = [template.encode({"messages": convs[i], "tools": tools[i]}) for i in chunk]
                width = max(len(e["input_ids"]) for e in encs)
                ids = torch.full((len(chunk), width), stop[1])
                mask = torch.zeros((len(chunk), width), dtype=torch.long)
                for k, e in enumerate(encs):  # left padding
                    n = len(e["input_ids"])
                    ids[k, width - n :] = torch.tensor(e["input_ids"])
                    mask[k, width - n :] = 1
                with torch.no_grad():
                    gen = model.generate(
                        input_ids=ids, attention_mask=mask, max_new_tokens=max_new,
                        do_sample=False, eos_token_id=stop, pad_token_id=stop[1],
                    )  # fmt: skip
                for k, i in enumerate(chunk):
                    texts[i] = tok.decode(gen[k, width:], skip_special_tokens=True)
            still = []
            for i in live:
                uuid = f"{name}-{i}"
                if turn == 1:
                    first[i] = texts[i][:400]
                outcome = asyncio.run(hooks.turn(uuid, texts[i], None, current_turn=turn))
                infos[i] = dict(outcome.rollout_infos)
                convs[i].append({"role": "assistant", "content": texts[i]})
                if outcome.done:
                    continue
                follow = fold_follow_up(hooks.take_messages(uuid))
                if follow is not None:
                    convs[i].append(follow)
                still.append(i)
            live = still
            print(f"[{name}] turn {turn}: {len(live)} rollouts go on, "
                  f"{time.perf_counter() - t0:.0f} s", flush=True)  # fmt: skip
    finally:
        hooks.close()
    lines = []
    for i, row in enumerate(rows):
        files = list(infos[i].get(INFO_ANSWER_FILES) or [])
        turns = int(infos[i].get(INFO_NUM_TURNS) or 0)
        calls = int(infos[i].get(INFO_NUM_TOOL_CALLS) or 0)
        cbar = calls / turns if turns else 0.0
        f05 = set_scores(files, row["gold_files"]).fbeta if files else 0.0
        rec = {
            "instance_id": row["instance_id"],
            "reward": f05 if cbar > 0 else 0.0,  # v3: F0.5 x 1[c̄ > 0]
            "f05": f05,
            "calls_per_turn": cbar,
            "turns": turns,
            "answered": bool(files),
            "answer_files": files,
            "gold_files": row["gold_files"],
            "calls_by_turn": list(infos[i].get("tool_calls_per_turn") or []),
            "first_reply": first[i],
        }
        lines.append(json.dumps(rec))
        print(f"[{name}] {row['instance_id']} reward {rec['reward']:.3f} F0.5 {f05:.3f} "
              f"calls/turn {cbar:.2f} answer {files}", flush=True)  # fmt: skip
    dest.write_text("".join(x + "\n" for x in lines))


# --------------------------------------------------------------------------------- report

STAGES = (("base", "before SFT"), ("sft", "after SFT"), ("grpo", "after GRPO"))
METRICS = (("reward", "reward v3"), ("f05", "F0.5"), ("calls_per_turn", "calls/turn"))


def _boot_mean(xs: list[float], n: int = 2000, seed: int = 0) -> tuple[float, float]:
    """The 95% interval of the mean over instances: the project's one bootstrap
    (grpo-rewards' `ClusterBootstrap`, percentile interval)."""
    from grpo_rewards import ClusterBootstrap, percentile_interval

    dist = ClusterBootstrap(len(xs), n, seed).distribution(
        [xs], lambda cols: sum(cols[0]) / len(cols[0])
    )
    return percentile_interval(sum(xs) / len(xs), dist, 0.95)


def _fmt(mean: float, lo: float, hi: float) -> str:
    return f"{mean:.3f} [{lo:.3f}, {hi:.3f}]"


def report(out: Path) -> None:
    res = {s: {} for s, _ in STAGES}  # type: dict[str, dict[str, dict[str, Any]]]
    for stage, _ in STAGES:
        path = out / "eval" / f"{stage}.jsonl"
        if path.exists():
            for line in path.read_text().splitlines():
                r = json.loads(line)
                res[stage][r["instance_id"]] = r
    dest = out / "report"
    dest.mkdir(exist_ok=True)
    ids = sorted(set.intersection(*(set(v) for v in res.values() if v)))
    md = [
        f"n = {len(ids)} instances (in-sample: the GRPO rows), greedy decoding, "
        "95% bootstrap intervals over instances (2000 resamples, seed 0)",
        "",
        "| stage | "
        + " | ".join(label for _, label in METRICS)
        + " | answered | zero-call | `<tool_call>` in reply 1 |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for stage, label in STAGES:
        if not res[stage]:
            continue
        cells = []
        for key, _ in METRICS:
            xs = [float(res[stage][i][key]) for i in ids]
            cells.append(_fmt(sum(xs) / len(xs), *_boot_mean(xs)))
        answered = sum(res[stage][i]["answered"] for i in ids)
        zero = sum(res[stage][i]["calls_per_turn"] == 0 for i in ids)
        tagged = sum("<tool_call>" in res[stage][i]["first_reply"] for i in ids)
        md.append(f"| {label} | " + " | ".join(cells) + f" | {answered} | {zero} | {tagged} |")
    md += ["", "Paired differences (same instances):", ""]
    md += ["| difference | " + " | ".join(label for _, label in METRICS) + " |",
           "| --- | --- | --- | --- |"]  # fmt: skip
    for a, b in (("base", "sft"), ("sft", "grpo"), ("base", "grpo")):
        if not (res[a] and res[b]):
            continue
        cells = []
        for key, _ in METRICS:
            d = [float(res[b][i][key]) - float(res[a][i][key]) for i in ids]
            cells.append(_fmt(sum(d) / len(d), *_boot_mean(d)))
        md.append(f"| {b} − {a} | " + " | ".join(cells) + " |")
    curve = _curve(out)
    trainer = _trainer_log(out)
    if curve:
        md += ["", "GRPO, per step (the model's own rollouts, sampled at temperature 1; loss, "
               "grad norm, KL and the share of zero-variance groups from ms-swift's "
               "logging.jsonl):", ""]  # fmt: skip
        md += ["| step | mean reward | reward std | calls/turn | zero-call rollouts | "
               "loss | grad norm | KL | zero-std groups |",
               "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]  # fmt: skip
        for s, r, sd, c, z in curve:
            t = trainer.get(s, {})
            md.append(
                f"| {s} | {r:.3f} | {sd:.3f} | {c:.2f} | {z} | "
                f"{t.get('loss', '-')} | {t.get('grad_norm', '-')} | {t.get('kl', '-')} | "
                f"{t.get('frac_reward_zero_std', '-')} |"
            )
        (dest / "curve.csv").write_text(
            "step,mean_reward,reward_std,calls_per_turn,zero_call_rollouts,loss,grad_norm,kl\n"
            + "".join(
                f"{s},{r:.4f},{sd:.4f},{c:.4f},{z},{trainer.get(s, {}).get('loss', '')},"
                f"{trainer.get(s, {}).get('grad_norm', '')},{trainer.get(s, {}).get('kl', '')}\n"
                for s, r, sd, c, z in curve
            )
        )
        (dest / "curve.svg").write_text(_svg(curve))
    text = "\n".join(md) + "\n"
    (dest / "table.md").write_text(text)
    print(text)


def _trainer_log(out: Path) -> dict[int, dict[str, Any]]:
    """Per step: ms-swift's logged loss, grad norm, KL and zero-std share."""
    run = out / "grpo" / "run"
    steps: dict[int, dict[str, Any]] = {}
    log = run / "logging.jsonl"
    for line in log.read_text().splitlines() if log.exists() else []:
        e = json.loads(line)
        at = str(e.get("global_step/max_steps", ""))
        if "loss" in e and "/" in at:
            steps[int(at.split("/")[0])] = {
                k: e.get(k) for k in ("loss", "grad_norm", "kl", "frac_reward_zero_std")
            }
    return steps


def _curve(out: Path) -> list[tuple[int, float, float, float, int]]:
    paths = sorted((out / "grpo" / "run").rglob("codegrep_rollouts.jsonl"))
    by_step: dict[int, list[dict[str, Any]]] = {}
    for p in paths:
        for line in p.read_text().splitlines():
            try:
                e = json.loads(line)
            except ValueError:
                continue
            if isinstance(e, dict) and isinstance(e.get("step"), int):
                by_step.setdefault(e["step"], []).append(e)
    rows = []
    for step in sorted(by_step):
        es = by_step[step]
        rw = [float(e.get("reward") or 0.0) for e in es]
        mean = sum(rw) / len(rw)
        sd = (sum((x - mean) ** 2 for x in rw) / len(rw)) ** 0.5
        cb = [float(e.get("cbar") or 0.0) for e in es]
        zero = sum(1 for e in es if not e.get("num_tool_calls"))
        rows.append((step, mean, sd, sum(cb) / len(cb), zero))
    return rows


def _svg(curve: list[tuple[int, float, float, float, int]]) -> str:
    w, h, pad = 480, 240, 40
    steps = [c[0] for c in curve]
    lo, hi = min(steps), max(max(steps), min(steps) + 1)
    ymax = max(1.0, max(c[3] for c in curve) / 4)

    def xy(s: int, v: float) -> str:
        x = pad + (s - lo) / (hi - lo) * (w - 2 * pad)
        y = h - pad - v / ymax * (h - 2 * pad)
        return f"{x:.1f},{y:.1f}"

    reward = " ".join(xy(s, r) for s, r, _, _, _ in curve)
    calls = " ".join(xy(s, c / 4) for s, _, _, c, _ in curve)
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-size="11">'
        f'<rect width="{w}" height="{h}" fill="white"/>'
        f'<line x1="{pad}" y1="{h - pad}" x2="{w - pad}" y2="{h - pad}" stroke="black"/>'
        f'<line x1="{pad}" y1="{pad}" x2="{pad}" y2="{h - pad}" stroke="black"/>'
        f'<text x="{pad - 30}" y="{pad + 4}">{ymax:g}</text>'
        f'<text x="{pad - 12}" y="{h - pad + 4}">0</text>'
        f'<text x="{pad}" y="{h - pad + 16}">step {lo}</text>'
        f'<text x="{w - pad - 40}" y="{h - pad + 16}">step {hi}</text>'
        f'<polyline fill="none" stroke="steelblue" stroke-width="2" points="{reward}"/>'
        f'<polyline fill="none" stroke="orange" stroke-dasharray="4" points="{calls}"/>'
        f'<text x="{pad + 8}" y="{pad - 10}" fill="steelblue">mean reward per step</text>'
        f'<text x="{pad + 170}" y="{pad - 10}" fill="orange">calls per turn / 4 (dashed)</text>'
        "</svg>\n"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("inputs")
    a.add_argument("out", type=Path)
    a.add_argument("--mirrors", required=True)
    a.add_argument("--data", type=Path, default=DATA)
    a.add_argument("--threshold", type=float, default=0.5)
    a.add_argument("--max-length", type=int, default=6144)
    e = sub.add_parser("eval")
    e.add_argument("out", type=Path)
    e.add_argument("name")
    e.add_argument("--model", type=Path, required=True)
    e.add_argument("--adapter", type=Path)
    e.add_argument("--max-new-tokens", type=int, default=160)
    e.add_argument("--max-length", type=int, default=6144)
    e.add_argument("--batch", type=int, default=4)
    e.add_argument("--limit", type=int)
    r = sub.add_parser("report")
    r.add_argument("out", type=Path)
    args = ap.parse_args()
    if args.cmd == "inputs":
        inputs(args.out, args.mirrors, args.data, args.threshold, args.max_length)
    elif args.cmd == "eval":
        evaluate(
            args.out,
            args.name,
            args.model,
            args.adapter,
            args.max_new_tokens,
            args.max_length,
            args.batch,
            args.limit,
        )
    else:
        report(args.out)


if __name__ == "__main__":
    main()
