"""Does SmolLM2-135M-Instruct learn to localize on instances it was not trained on? The parts
of `learn_cpu.sh` that are Python (run in the ms-swift venv; a benchmark, not a test).

  splits OUT --data DIR      the fixed splits of `learn_cpu_splits.json` as instance files
  inputs OUT --mirrors DIR   GRPO rows of every split (`codegrep-model dataset grpo`, one tool
                             turn of up to 4 calls, the issue cut to 1,500 bytes), teacher
                             rollouts on the training split and the SFT rows made from them
  eval OUT ARM SPLIT --model DIR [--adapter DIR]
                             greedy rollouts of the checkpoint through `LocalPolicy` and the
                             batch runner (the main job's path: `Episode`, strict answers, the
                             training rendering); one JSON line per instance
  passk OUT --model DIR [--adapter DIR] --k K --temperature T --limit N
                             sampled rollouts on the training split: pass@k and the share of
                             groups whose rewards do not vary (what GRPO can learn from)
  report OUT                 summary.json, table.md (paired bootstrap intervals), curve.csv/svg

Figures are those of SmolLM2-135M-Instruct's dequantized Q4_1 weights (`codegrep-model
materialize`), not of the original bf16 release.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import math
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
DATA = HERE.parents[2] / ".." / "shared" / "data"
SPLITS = HERE / "learn_cpu_splits.json"
#: The episode the rows, the teacher, the trainer and the evaluation share.
SHAPE = {"exploration_turns": 1, "max_calls_per_turn": 4, "max_issue_bytes": 1500}
SPLIT_NAMES = ("train", "heldout", "heldout_verified")
# in-sample, labelled so: the training instances a GRPO seed trained on (its rollout log's ids)
TRAINED_SPLITS = ("trained_s0", "trained_s1")
#: Tokens of one reply and of all replies of a rollout (the trainer's --max_completion_length
#: per round and $CODEGREP_MAX_COMPLETION_TOKENS): a call or an answer is 15-40 tokens.
TURN_TOKENS, COMPLETION_TOKENS = 64, 160
#: Training and evaluation run in bfloat16: on this machine's bf16 instructions a forward and
#: backward pass over 2,048 tokens takes ~16 s against ~27 s in float32.
DTYPE = "bfloat16"
ARMS = (
    ("base", "SmolLM2-135M-Instruct, untrained"),
    ("sft", "after SFT"),
    ("sft_control", "SFT control (SFT, then SFT again for GRPO's compute)"),
    ("grpo_s0", "after GRPO, seed 0"),
    ("grpo_s1", "after GRPO, seed 1"),
)


def _config(max_length: int) -> Any:
    from codegrep_model.datasets import config_from_row
    from codegrep_model.train._scheduler_core import TRAINING_BUDGET

    budget = TRAINING_BUDGET.model_copy(
        update={"max_length": max_length, "max_turn_tokens": TURN_TOKENS,
                "max_completion_tokens": COMPLETION_TOKENS}
    )  # fmt: skip
    return config_from_row(json.dumps(SHAPE)).model_copy(update={"budget": budget})


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def _instances(split: str, data: Path) -> list[dict[str, Any]]:
    """The rows of the fixed split `split` (ids from `learn_cpu_splits.json`), in id order."""
    ids = json.loads(SPLITS.read_text())["splits"][split]["ids"]
    rows: dict[str, dict[str, Any]] = {}
    for name in (
        "swebench/lite.jsonl",
        "swebench/verified_dev.jsonl",
        "locbench/locbench_gt.jsonl",
    ):
        for r in _read_jsonl(data / name):
            rows.setdefault(r["instance_id"], r)
    missing = [i for i in ids if i not in rows]
    if missing:
        sys.exit(f"error: {len(missing)} ids of split {split} are not in {data}: {missing[:3]}")
    return [rows[i] for i in ids]


def splits(out: Path, data: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    spec = json.loads(SPLITS.read_text())["splits"]
    seen: dict[str, str] = {}
    for split in SPLIT_NAMES:
        for i in spec[split]["ids"]:
            if i in seen:
                sys.exit(f"error: {i} is in both {seen[i]} and {split}")
            seen[i] = split
        rows = _instances(split, data)
        (out / f"{split}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
        print(f"{split}: {len(rows)} instances", flush=True)


# ------------------------------------------------------------------------------ teacher


class ConfirmTeacher:
    """The SFT teacher, in the episode's two turns: turn 1 globs the file name of the answer's
    first file (`**/NAME`), turn 2 answers with the files. `answers` per instance: the
    LexicalPolicy answer ("lexical-confirm") or the gold files ("gold-confirm", training split
    only). A 135M model cannot imitate LexicalPolicy's 6-14 grep and read calls in a CPU
    context; it can learn to name a file from the issue, look it up and copy the path it got."""

    def __init__(self, name: str, answers: dict[str, list[str]]) -> None:
        self.name = name
        self.answers = answers

    async def reply(self, request: Any) -> Any:
        from codegrep_model import PolicyReply
        from codegrep_model.policies.scripted import call

        files = self.answers.get(request.instance.instance_id) or []
        if request.turn == 1 and files:
            stem = files[0].rsplit("/", 1)[-1]
            return PolicyReply(content=None, tool_calls=(call("glob", {"pattern": f"**/{stem}"}),))
        return PolicyReply(content=json.dumps({"files": files}))


async def _run(policy: Any, insts: Path, dest: Path, cache: str, source: str, **kw: Any) -> Any:
    from collections.abc import AsyncIterator
    from contextlib import asynccontextmanager

    import codegrep_records as records
    from codegrep_model.batch import run_batch
    from worktree_sandbox import BareRepoCache, TreePool

    instances = records.load_instances(insts).records
    async with TreePool(BareRepoCache(cache, source=source)) as pool:

        @asynccontextmanager
        async def open_tree(i: Any) -> AsyncIterator[Any]:
            async with pool.open(i.repo, i.base_commit, folders=False) as tree:
                yield tree

        return await run_batch(
            policy,
            instances,
            open_tree,
            predictions=dest,
            rollouts=dest.with_suffix(".rollouts.jsonl"),
            **kw,
        )


def _cli(*args: str) -> None:
    import subprocess

    cmd = [str(Path(sys.executable).parent / "codegrep-model"), *args]
    print("+", " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True)


def inputs(out: Path, mirrors: str, model: Path, max_length: int) -> None:
    from codegrep_model.budget import TokenizerCounter
    from transformers import AutoTokenizer

    cache, source = str(out / "cache"), f"{mirrors}/{{owner}}+{{name}}/repo"
    shape = [f"--exploration-turns={SHAPE['exploration_turns']}",
             f"--max-calls={SHAPE['max_calls_per_turn']}",
             f"--max-issue-bytes={SHAPE['max_issue_bytes']}"]  # fmt: skip
    for split in SPLIT_NAMES:
        if not (out / f"grpo-{split}" / "train.jsonl").exists():
            _cli("dataset", "grpo", "-i", str(out / f"{split}.jsonl"), "-o",
                 str(out / f"grpo-{split}"), "--cache", cache, "--source", source,
                 "--val-fraction", "0", "-j", "2", *shape)  # fmt: skip
    teacher = out / "teacher"
    teacher.mkdir(exist_ok=True)
    lexical = teacher / "lexical.pred.jsonl"
    if not lexical.exists():
        _cli("batch", str(out / "train.jsonl"), "-o", str(lexical), "--cache", cache,
             "--source", source, "-j", "2")  # fmt: skip
    counter = TokenizerCounter(AutoTokenizer.from_pretrained(str(model)))
    gold = {r["instance_id"]: list(r["gold_files"])
            for r in _read_jsonl(out / "grpo-train" / "train.jsonl")}  # fmt: skip
    answers = {
        "lexical-confirm": {p["instance_id"]: list(p.get("files") or [])
                            for p in _read_jsonl(lexical)},
        "gold-confirm": gold,
    }  # fmt: skip
    for name, ans in answers.items():
        dest = teacher / f"{name}.pred.jsonl"
        if not dest.exists():
            summary = asyncio.run(
                _run(ConfirmTeacher(name, ans), out / "train.jsonl", dest, cache, source,
                     jobs=2, config=_config(max_length), counter=counter)
            )  # fmt: skip
            print(f"{name}: {summary.describe()}", flush=True)
        _cli("dataset", "sft", str(dest.with_suffix(".rollouts.jsonl")), "-i",
             str(out / "train.jsonl"), "-o", str(teacher / f"{name}.sft.jsonl"),
             "--threshold", "0.5")  # fmt: skip
    # every gold-confirm row, and the lexical-confirm rows that teach another answer
    rows = _read_jsonl(teacher / "gold-confirm.sft.jsonl")
    have = {json.dumps(r["messages"]) for r in rows}
    extra = [r for r in _read_jsonl(teacher / "lexical-confirm.sft.jsonl")
             if json.dumps(r["messages"]) not in have]  # fmt: skip
    sft = rows + extra
    (out / "sft.jsonl").write_text("".join(json.dumps(r) + "\n" for r in sft))
    print(f"sft rows: {len(rows)} gold-confirm + {len(extra)} lexical-confirm = {len(sft)}")


# --------------------------------------------------------------------------- evaluation


def _score(record: dict[str, Any], gold: list[str]) -> dict[str, Any]:
    """Reward v3 (F0.5 over files x 1[c̄ > 0]) of a rollout record as the trainer scores it,
    with F0.5, calls per turn, the answer and the tokens and seconds the model spent."""
    import grpo_rewards as rewards

    msgs = record.get("messages") or []
    final = next((m.get("content") for m in reversed(msgs) if m.get("role") == "assistant"), None)
    st = record["stats"]
    stats = rewards.RolloutStats(turns=st["turns"], tool_calls=st["tool_calls"])
    parsed = rewards.parse_answer(final)
    result = rewards.score_parsed("codegrep_v3", parsed, rewards.Gold.of(gold), stats)
    files = list(parsed.answer.files) if parsed.answer is not None else []
    return {
        "instance_id": record["instance_id"],
        "repo": record["repo"],
        "reward": result.reward,
        "f05": rewards.set_scores(files, gold).fbeta if files else 0.0,
        "calls_per_turn": stats.cbar,
        "answered": bool(files),
        "answer_files": files,
        "gold_files": gold,
        "status": record["status"],
        "overflow": record.get("overflow"),
        "prompt_tokens": record["usage"]["prompt_tokens"],
        "completion_tokens": record["usage"]["completion_tokens"],
        "model_s": record.get("model_s", 0.0),
        "first_reply": next((m.get("content") or json.dumps(m.get("tool_calls"))
                             for m in msgs if m.get("role") == "assistant"), "")[:300],
    }  # fmt: skip


def trained_split(out: Path, split: str) -> Path:
    """`trained_sN.jsonl`: the training rows of the instances GRPO seed N trained on."""
    dest = out / f"{split}.jsonl"
    log = out / f"grpo-s{split.removeprefix('trained_s')}" / "codegrep_rollouts.jsonl"
    ids = {r["instance_id"] for r in _read_jsonl(log)}
    rows = [r for r in _read_jsonl(out / "train.jsonl") if r["instance_id"] in ids]
    dest.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return dest


def evaluate(out: Path, arm: str, split: str, model: Path, adapter: Path | None, **kw: Any) -> None:
    from codegrep_model.budget import TokenizerCounter
    from codegrep_model.policies.local import LocalPolicy

    if split in TRAINED_SPLITS:
        trained_split(out, split)
    dest = out / "eval" / f"{arm}.{split}.jsonl"
    raw = out / "eval" / "raw" / f"{arm}.{split}.pred.jsonl"
    if dest.exists():
        print(f"{dest} exists", flush=True)
        return
    raw.parent.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    policy = LocalPolicy(
        model, adapter=adapter, max_new_tokens=kw["max_new"], max_batch=8, dtype=DTYPE,
        temperature=kw.get("temperature", 0.0), seed=kw.get("seed", 0), threads=kw["threads"],
    )  # fmt: skip
    counter = TokenizerCounter(policy.tokenizer)
    summary = asyncio.run(
        _run(policy, out / f"{split}.jsonl", raw, str(out / "cache"), kw["source"],
             jobs=8, config=_config(kw["max_length"]), counter=counter)
    )  # fmt: skip
    lines = score_raw(out, arm, split)
    s = policy.summary()
    print(f"[{arm}/{split}] {summary.describe()}; mean reward "
          f"{sum(x['reward'] for x in lines) / max(1, len(lines)):.3f}; {s['replies']} replies, "
          f"{s['seconds_per_reply']:.2f} s and {s['completion_tokens'] / max(1, s['replies']):.0f}"
          f" output tokens per reply; {time.perf_counter() - t0:.0f} s", flush=True)  # fmt: skip


def score_raw(out: Path, arm: str, split: str) -> list[dict[str, Any]]:
    """Score the rollouts an evaluation wrote (all of them, or the ones a stopped run got to)
    into eval/ARM.SPLIT.jsonl; the report marks an arm that covers part of a split."""
    raw = out / "eval" / "raw" / f"{arm}.{split}.pred.jsonl"
    gold = {r["instance_id"]: list(r["gold_files"]) for s in SPLIT_NAMES
            for r in _read_jsonl(out / f"grpo-{s}" / "train.jsonl")}  # fmt: skip
    rollouts = _read_jsonl(raw.with_suffix(".rollouts.jsonl"))
    lines = [_score(r, gold[r["instance_id"]]) for r in rollouts]
    lines.sort(key=lambda r: r["instance_id"])
    (out / "eval" / f"{arm}.{split}.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    return lines


def passk(out: Path, model: Path, adapter: Path | None, k: int, temperature: float,
          limit: int, **kw: Any) -> None:  # fmt: skip
    """k sampled rollouts of `limit` training instances: pass@k and zero-variance groups."""
    rows = _read_jsonl(out / "train.jsonl")
    step = max(1, len(rows) // limit)
    pick = rows[::step][:limit]  # spread over the split (it is sorted by id, so by repository)
    tag = f"passk-t{temperature:g}"
    (out / f"{tag}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in pick))
    runs = []
    for seed in range(k):
        arm = f"{tag}-s{seed}"
        evaluate(out, arm, tag, model, adapter, temperature=temperature, seed=seed, **kw)
        got = _read_jsonl(out / "eval" / f"{arm}.{tag}.jsonl")
        runs.append({r["instance_id"]: r["reward"] for r in got})
    ids = sorted(runs[0])
    groups = [[run[i] for run in runs] for i in ids]
    res = {
        "k": k, "temperature": temperature, "instances": len(ids),
        "pass_at_k": sum(max(g) > 0 for g in groups) / len(groups),
        "pass_at_1": sum(sum(x > 0 for x in g) / k for g in groups) / len(groups),
        "zero_variance_groups": sum(max(g) == min(g) for g in groups) / len(groups),
        "rewarded_share": sum(x > 0 for g in groups for x in g) / (k * len(groups)),
    }  # fmt: skip
    (out / f"{tag}.summary.json").write_text(json.dumps(res, indent=2) + "\n")
    print(json.dumps(res), flush=True)


# ------------------------------------------------------------------------------- report


def _boot(xs: list[float], n: int = 2000, seed: int = 0) -> tuple[float, float, float]:
    """The mean over instances and its 95% percentile interval (the project's one bootstrap)."""
    from codegrep_records.stats import ClusterBootstrap, percentile_interval

    mean = sum(xs) / len(xs)
    dist = ClusterBootstrap(len(xs), n, seed).distribution([xs], lambda c: sum(c[0]) / len(c[0]))
    lo, hi = percentile_interval(mean, dist, 0.95)
    return mean, lo, hi


def mde(n: int, sd: float, alpha: float = 0.05, power: float = 0.8) -> float:
    """The smallest paired mean difference a two-sided test at `alpha` detects with `power`,
    for n pairs whose differences have standard deviation `sd` (normal approximation)."""
    from statistics import NormalDist

    z = NormalDist().inv_cdf(1 - alpha / 2) + NormalDist().inv_cdf(power)
    return z * sd / math.sqrt(n)


def _load(out: Path, arm: str, split: str) -> dict[str, dict[str, Any]]:
    path = out / "eval" / f"{arm}.{split}.jsonl"
    return {r["instance_id"]: r for r in _read_jsonl(path)} if path.exists() else {}


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else ""


def report(out: Path, model: Path) -> None:
    spec = json.loads(SPLITS.read_text())
    res = {a: {s: _load(out, a, s) for s in (*SPLIT_NAMES, *TRAINED_SPLITS)} for a, _ in ARMS}
    md: list[str] = []
    summary: dict[str, Any] = {
        "model": {"name": "SmolLM2-135M-Instruct", "weights": "Q4_1 GGUF, dequantized to float32",
                  "source": json.loads((model / "codegrep-model-source.json").read_text())
                  if (model / "codegrep-model-source.json").exists() else None,
                  "safetensors_sha256": _sha256(model / "model.safetensors")},
        "episode": SHAPE,
        "train_ids": spec["splits"]["train"]["ids"],
        "heldout_ids": spec["splits"]["heldout"]["ids"],
        "heldout_verified_ids": spec["splits"]["heldout_verified"]["ids"],
        "arms": {},
    }  # fmt: skip
    metrics = (("reward", "reward v3"), ("f05", "F0.5"), ("calls_per_turn", "calls/turn"))
    labels = (
        ("heldout", "held out: Lite, repositories never trained on"),
        ("heldout_verified", "held out: Verified dev, training repositories, instances never "
         "trained on"),
        ("train", "in-sample: the training split"),
        ("trained_s0", "in-sample: the training instances GRPO seed 0 trained on"),
        ("trained_s1", "in-sample: the training instances GRPO seed 1 trained on"),
    )  # fmt: skip
    for split, label in labels:
        if split in TRAINED_SPLITS:
            drawn = out / f"{split}.jsonl"
            full = len(_read_jsonl(drawn)) if drawn.is_file() else 0
        else:
            full = len(spec["splits"][split]["ids"]) if split in spec["splits"] else 0
        arms = [(a, t) for a, t in ARMS if len(res[a][split]) >= full > 0]
        # an arm stopped part way (for compute) is shown on its own instances, never pooled
        for a, t in ARMS:
            if 0 < len(res[a][split]) < full:
                part = sorted(res[a][split])
                solved = sum(res[a][split][i]["reward"] > 0 for i in part)
                answered = sum(res[a][split][i]["answered"] for i in part)
                md += [f"*{t}: {len(part)} of the {full} instances run (the run was stopped "
                       f"for compute); on those: {answered} answered, {solved} with reward > 0, "
                       f"reward v3 {_fmt(*_boot([res[a][split][i]['reward'] for i in part]))}.*",
                       ""]  # fmt: skip
                summary.setdefault("partial_arms", {}).setdefault(split, {})[a] = {
                    "instances": part, "of": full, "answered": answered, "solved": solved,
                }  # fmt: skip
        if not arms:
            continue
        ids = sorted(set.intersection(*(set(res[a][split]) for a, _ in arms)))
        md += [f"### {label} (n = {len(ids)})", "",
               "| arm | " + " | ".join(m for _, m in metrics) + " | answered | pass (reward > 0) |",
               "| --- | --- | --- | --- | --- | --- |"]  # fmt: skip
        for a, t in arms:
            cells = [_fmt(*_boot([float(res[a][split][i][k]) for i in ids])) for k, _ in metrics]
            answered = sum(res[a][split][i]["answered"] for i in ids)
            solved = sum(res[a][split][i]["reward"] > 0 for i in ids)
            md.append(f"| {t} | " + " | ".join(cells) + f" | {answered} | {solved} |")
            arm = summary["arms"].setdefault(a, {})
            arm[split] = {i: res[a][split][i]["reward"] for i in ids}
            arm[f"{split}_f05"] = {i: res[a][split][i]["f05"] for i in ids}
        md += ["", "Paired differences of reward v3, same instances (95% bootstrap intervals, "
               "2,000 resamples, seed 0):", "", "| difference | mean [95% interval] | MDE "
               "(80% power, from the observed sd) |", "| --- | --- | --- |"]  # fmt: skip
        for b, a in (("sft", "base"), ("grpo_s0", "sft_control"), ("grpo_s1", "sft_control"),
                     ("grpo_s0", "sft"), ("grpo_s1", "sft")):  # fmt: skip
            if res[a][split] and res[b][split]:
                d = [res[b][split][i]["reward"] - res[a][split][i]["reward"] for i in ids]
                m = sum(d) / len(d)
                sd = math.sqrt(sum((x - m) ** 2 for x in d) / max(1, len(d) - 1))
                # an sd of 0 (no instance scored differently) gives no MDE to speak of
                size = f"{mde(len(d), sd):.3f}" if sd > 0 else "– (no instance differs)"
                md.append(f"| {b} − {a} | {_fmt(*_boot(d))} | {size} |")
                summary.setdefault("differences", {}).setdefault(split, {})[f"{b}-{a}"] = {
                    "mean": m,
                    "interval": list(_boot(d)[1:]),
                    "sd": sd,
                }
        md.append("")
    for pk in sorted(out.glob("passk-*.summary.json")):
        summary.setdefault("passk_train", []).append(json.loads(pk.read_text()))
    dest = out / "report"
    dest.mkdir(exist_ok=True)
    for seed in (0, 1):
        steps = write_curves(out / f"grpo-s{seed}", dest, seed)
        if not steps:
            continue
        summary.setdefault("grpo_steps", {})[f"s{seed}"] = steps
        md += [f"GRPO seed {seed}, per step (ms-swift's logging.jsonl; sampled at temperature 1):",
               "", "| step | mean reward | reward std | zero-std groups | KL | loss | grad norm |",
               "| --- | --- | --- | --- | --- | --- | --- |"]  # fmt: skip
        md += [f"| {st['step']} | {st.get('reward', '-')} | {st.get('reward_std', '-')} | "
               f"{st.get('frac_reward_zero_std', '-')} | {st.get('kl', '-')} | "
               f"{st.get('loss', '-')} | {st.get('grad_norm', '-')} |" for st in steps]  # fmt: skip
        md.append("")
    (dest / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    (dest / "table.md").write_text("\n".join(md) + "\n")
    print("\n".join(md))


def write_curves(
    run: Path, dest: Path, seed: int, metric: str = "reward v3"
) -> list[dict[str, Any]]:
    """A GRPO run's per-step figures as `dest/curve-sSEED.csv` and `.svg`; its steps ([] and
    nothing written when the run logged none)."""
    steps = _grpo_steps(run)
    if not steps:
        return steps
    keys = ("step", "reward", "reward_std", "frac_reward_zero_std", "kl", "loss", "grad_norm")
    (dest / f"curve-s{seed}.csv").write_text(
        ",".join(keys)
        + "\n"
        + "".join(",".join(str(st.get(k, "")) for k in keys) + "\n" for st in steps)
    )
    (dest / f"curve-s{seed}.svg").write_text(_svg(steps, f"GRPO seed {seed}", metric))
    return steps


def _grpo_steps(run: Path) -> list[dict[str, Any]]:
    """Per step of a GRPO run: ms-swift's logged reward, its std, the zero-std share, KL, loss
    and grad norm (`logging.jsonl`, the keys ms-swift 4.6 writes)."""
    log = run / "logging.jsonl"
    steps = []
    for line in log.read_text().splitlines() if log.is_file() else []:
        e = json.loads(line)
        at = str(e.get("global_step/max_steps", ""))
        if "loss" not in e or "/" not in at:
            continue
        row: dict[str, Any] = {"step": int(at.split("/")[0])}
        for key, name in (("reward", "reward"), ("reward_std", "reward_std"),
                          ("frac_reward_zero_std", "frac_reward_zero_std"), ("kl", "kl"),
                          ("loss", "loss"), ("grad_norm", "grad_norm")):  # fmt: skip
            if key in e:
                row[name] = e[key]
        steps.append(row)
    return steps


def _svg(steps: list[dict[str, Any]], title: str, metric: str = "reward v3") -> str:
    """Mean sampled reward per step, with both axes labelled and ticked."""
    w, h, pad = 480, 260, 48
    xs = [int(st["step"]) for st in steps]
    ys = [float(st.get("reward", 0.0)) for st in steps]
    lo, hi = min(xs), max(max(xs), min(xs) + 1)
    top = max(0.25, max(ys))

    def x(v: float) -> float:
        return pad + (v - lo) / (hi - lo) * (w - 2 * pad)

    def y(v: float) -> float:
        return h - pad - v / top * (h - 2 * pad)

    ticks = "".join(
        f'<line x1="{pad - 4}" y1="{y(t):.1f}" x2="{pad}" y2="{y(t):.1f}" stroke="black"/>'
        f'<text x="{pad - 8}" y="{y(t) + 4:.1f}" text-anchor="end">{t:.2f}</text>'
        for t in (0.0, top / 2, top)
    ) + "".join(
        f'<text x="{x(s):.1f}" y="{h - pad + 16}" text-anchor="middle">{s}</text>' for s in xs
    )
    points = " ".join(f"{x(s):.1f},{y(r):.1f}" for s, r in zip(xs, ys, strict=True))
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-size="11">'
        f'<rect width="{w}" height="{h}" fill="white"/>'
        f'<text x="{w / 2}" y="16" text-anchor="middle">{title}: mean sampled {metric}</text>'
        f'<line x1="{pad}" y1="{h - pad}" x2="{w - pad}" y2="{h - pad}" stroke="black"/>'
        f'<line x1="{pad}" y1="{pad}" x2="{pad}" y2="{h - pad}" stroke="black"/>{ticks}'
        f'<text x="{w / 2}" y="{h - 8}" text-anchor="middle">step</text>'
        f'<polyline fill="none" stroke="steelblue" stroke-width="2" points="{points}"/>'
        + "".join(
            f'<circle cx="{x(s):.1f}" cy="{y(r):.1f}" r="3" fill="steelblue"/>'
            for s, r in zip(xs, ys, strict=True)
        )
        + "</svg>\n"
    )


def _fmt(mean: float, lo: float, hi: float) -> str:
    return f"{mean:.3f} [{lo:.3f}, {hi:.3f}]"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("splits")
    p.add_argument("out", type=Path)
    p.add_argument("--data", type=Path, default=DATA)
    p = sub.add_parser("inputs")
    p.add_argument("out", type=Path)
    p.add_argument("--mirrors", required=True)
    p.add_argument("--model", type=Path, required=True)
    p.add_argument("--max-length", type=int, default=3072)
    for name in ("eval", "passk"):
        p = sub.add_parser(name)
        p.add_argument("out", type=Path)
        if name == "eval":
            p.add_argument("arm")
            p.add_argument("split", choices=(*SPLIT_NAMES, *TRAINED_SPLITS))
        else:
            p.add_argument("--k", type=int, default=4)
            p.add_argument("--temperature", type=float, default=1.0)
            p.add_argument("--limit", type=int, default=8)
        p.add_argument("--model", type=Path, required=True)
        p.add_argument("--adapter", type=Path)
        p.add_argument("--mirrors", required=True)
        p.add_argument("--max-new-tokens", type=int, default=TURN_TOKENS)
        p.add_argument("--max-length", type=int, default=3072)
        p.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's own)")
    p = sub.add_parser("score", help="score what an evaluation (perhaps stopped) wrote")
    p.add_argument("out", type=Path)
    p.add_argument("arm")
    p.add_argument("split", choices=(*SPLIT_NAMES, *TRAINED_SPLITS))
    p = sub.add_parser("report")
    p.add_argument("out", type=Path)
    p.add_argument("--model", type=Path, required=True)
    a = ap.parse_args()
    if a.cmd == "splits":
        splits(a.out, a.data)
    elif a.cmd == "inputs":
        inputs(a.out, a.mirrors, a.model, a.max_length)
    elif a.cmd in ("eval", "passk"):
        kw = {"max_new": a.max_new_tokens, "max_length": a.max_length, "threads": a.threads,
              "source": f"{a.mirrors}/{{owner}}+{{name}}/repo"}  # fmt: skip
        if a.cmd == "eval":
            evaluate(a.out, a.arm, a.split, a.model, a.adapter, **kw)
        else:
            passk(a.out, a.model, a.adapter, a.k, a.temperature, a.limit, **kw)
    elif a.cmd == "score":
        print(f"{len(score_raw(a.out, a.arm, a.split))} rollouts scored", flush=True)
    else:
        report(a.out, a.model)


if __name__ == "__main__":
    main()
