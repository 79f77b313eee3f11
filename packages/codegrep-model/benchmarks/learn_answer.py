"""Does GRPO teach SmolLM2-135M-Instruct to choose the file from a shortlist, on repositories it
never saw? The parts of `learn_answer.sh` that are Python (run in the ms-swift venv; a
benchmark, not a test). The design, decision rule and compute plan are in the README
("The answer turn, learned"), written before the run.

  splits OUT --splits JSON         held-out repositories by a salted hash (the rule below)
  rankers OUT --examples FILE      per repository, the ranker fitted on every other repository
                                   of the pool (the localizer's cross-validation); its answers
                                   (LexicalPolicy, the bar) as lexical.jsonl
  rows OUT -i FILE... --cache DIR --source TEMPLATE
                                   answer-task rows of every instance (`shortlist_rows`, each
                                   explored by LexicalPolicy with its repository's ranker)
  sft-data OUT NAME --rows N --seed S
                                   format SFT rows: the training prompts answered with a
                                   uniformly drawn candidate (teaches the schema, no choice)
  grpo-data OUT                    the GRPO prompts: training rows whose shortlist holds a gold
  eval OUT ARM SPLIT --model DIR [--shuffle]
                                   greedy answers of a merged checkpoint (float32, the prompt
                                   `ShortlistPolicy` renders); one JSON line per instance
  passk OUT --model DIR --k K --limit N
                                   sampled answers on training prompts: pass@k and the share
                                   of groups whose rewards do not vary
  bf16 SRC DST                      a LoRA adapter folder copied with its float tensors in
                                   bfloat16 (their training dtype; the form committed)
  report OUT                       summary.json, table.md (paired bootstrap intervals, sign
                                   tests, MDE), the GRPO curves

Figures are those of SmolLM2-135M-Instruct's dequantized Q4_1 weights (`codegrep-model
materialize`), not of the original bf16 release.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import math
import random
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from learn_cpu import _boot, _fmt, mde, write_curves  # noqa: E402

SALT = "codegrep-learn-answer-v1"
#: Held-out repositories are taken in the order of sha256(SALT + repo) until they hold at least
#: this many instances (fixed before any run; the rule is the README's).
MIN_HELDOUT = 100
SHORTLIST = {"size": 5, "lines_per_file": 1, "line_chars": 100, "issue_chars": 1000}
#: An answer of one path is 15-25 tokens of SmolLM2's tokenizer, of two 30-40.
MAX_NEW_TOKENS = 40
#: The effect the decision rule names (README): a paired reward difference of GRPO − SFT control.
EFFECT = 0.15
ARMS = (
    ("base", "SmolLM2-135M-Instruct, untrained"),
    ("format_sft", "format SFT (a uniformly drawn candidate as the answer)"),
    ("sft_control", "SFT control (format SFT, then SFT for GRPO's steps and sequences)"),
    ("grpo_s0", "GRPO from format SFT, seed 0"),
    ("grpo_s1", "GRPO from format SFT, seed 1"),
)


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _write_jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in rows))


def _config() -> Any:
    from codegrep_model.policies.shortlist import ShortlistConfig

    return ShortlistConfig(**SHORTLIST)


# ------------------------------------------------------------------------------- splits


def splits(out: Path, localizer_splits: Path) -> None:
    spec = json.loads(localizer_splits.read_text())
    ids = sorted(spec["cv_ids"])
    repo_of = {i: i.rsplit("-", 1)[0].replace("__", "/", 1) for i in ids}
    counts: dict[str, int] = {}
    for i in ids:
        counts[repo_of[i]] = counts.get(repo_of[i], 0) + 1
    order = sorted(counts, key=lambda r: hashlib.sha256((SALT + r).encode()).hexdigest())
    held: list[str] = []
    for r in order:
        if sum(counts[x] for x in held) >= MIN_HELDOUT:
            break
        held.append(r)
    doc = {
        "about": "Fixed before any run. The pool's cross-validation part (the localizer's "
        "localizer_splits.json cv_ids: 16 repositories); held-out repositories taken in the "
        f"order of sha256('{SALT}' + repo) until they hold at least {MIN_HELDOUT} instances. "
        "No held-out repository's instance is trained on, by SFT or GRPO.",
        "heldout_repos": sorted(held),
        "train_repos": sorted(set(counts) - set(held)),
        "counts": counts,
        "train_ids": [i for i in ids if repo_of[i] not in held],
        "heldout_ids": [i for i in ids if repo_of[i] in held],
    }
    (out / "splits.json").write_text(json.dumps(doc, indent=1) + "\n")
    print(f"held out {sorted(held)}: {len(doc['heldout_ids'])}; train {len(doc['train_ids'])}")


# ------------------------------------------------------------------------------- rankers


def rankers(out: Path, examples: Path) -> None:
    from codegrep_model.policies.lexical.ranker_cv import cross_validate, ranked_answer
    from codegrep_model.policies.lexical.ranker_train import read_examples

    spec = json.loads((out / "splits.json").read_text())
    wanted = set(spec["train_ids"]) | set(spec["heldout_ids"])
    rows = [r for r in read_examples(examples) if r.instance_id in wanted]
    missing = wanted - {r.instance_id for r in rows}
    if missing:
        sys.exit(f"{examples}: {len(missing)} instances have no candidates, e.g. {min(missing)}")
    dest = out / "rankers"
    dest.mkdir(exist_ok=True)
    lexical: list[dict[str, Any]] = []
    seen: set[str] = set()

    def keep(row: Any, fold: Any) -> None:
        ranker = fold["threshold"]
        name = row.repo.replace("/", "+")
        if name not in seen:
            ranker.dump(dest / f"{name}.json")
            seen.add(name)
        files, probs = ranked_answer(row, ranker)
        lexical.append({"instance_id": row.instance_id, "files": list(files), "scores": probs})

    cross_validate(rows, on_ranked=keep, on_fold=lambda r, n, t: print(f"fold {n}/{t}: {r}"))
    _write_jsonl(out / "lexical.jsonl", sorted(lexical, key=lambda r: r["instance_id"]))


# ------------------------------------------------------------------------------- rows


def rows(out: Path, instances: list[Path], cache: Path, source: str, jobs: int) -> None:
    from codegrep_model._grpo_rows import grpo_rows
    from codegrep_model._shortlist_rows import shortlist_rows
    from codegrep_model.policies.lexical.policy import LexicalPolicy
    from codegrep_model.policies.lexical.ranker import Ranker
    from codegrep_model.policies.lexical.ranker_train import load_training_instances
    from worktree_sandbox import BareRepoCache

    spec = json.loads((out / "splits.json").read_text())
    wanted = set(spec["train_ids"]) | set(spec["heldout_ids"])
    insts = [i for i in load_training_instances(instances).rows if i.instance_id in wanted]
    explorers = {
        p.stem.replace("+", "/", 1): LexicalPolicy(ranker=Ranker.load(p))
        for p in sorted((out / "rankers").glob("*.json"))
    }
    repo_cache = BareRepoCache(cache, source=source)

    def tick(done: int, total: int) -> None:
        if done % 20 == 0 or done == total:
            print(f"rows: {done}/{total}", flush=True)

    async def go() -> Any:
        made = await grpo_rows(insts, repo_cache, val_fraction=0.0, jobs=jobs)
        return await shortlist_rows(
            made, repo_cache, config=_config(), explorers=explorers, jobs=jobs, on_row=tick
        )

    data = asyncio.run(go())
    if data.report.dropped:
        for d in data.report.dropped:
            print(f"dropped {d.instance_id}: {d.reason} {d.detail}", file=sys.stderr)
    held = set(spec["heldout_ids"])
    train = [r for r in data.train if r.instance_id not in held]
    heldout = [r for r in data.train if r.instance_id in held]
    for name, part in (("train", train), ("heldout", heldout)):
        path = out / "rows" / f"{name}.jsonl"
        path.parent.mkdir(exist_ok=True)
        path.write_text("".join(r.model_dump_json() + "\n" for r in part))
    print(f"rows: train {len(train)}, heldout {len(heldout)}, dropped {len(data.report.dropped)}")


def _gold_rank(row: dict[str, Any]) -> int | None:
    gold = set(row["gold_files"])
    for n, e in enumerate(row["shortlist"], 1):
        if e["path"] in gold:
            return n
    return None


# ------------------------------------------------------------------------------- SFT, GRPO data


def sft_data(out: Path, name: str, n_rows: int, seed: int) -> None:
    """Training prompts answered with a uniformly drawn listed candidate: the format, no
    choice. Rows are drawn with replacement from the training rows when n_rows exceeds them."""
    train = _read_jsonl(out / "rows" / "train.jsonl")
    train = [r for r in train if r["shortlist"]]
    rng = random.Random(seed)
    picked = [train[i % len(train)] for i in rng.sample(range(len(train)), len(train))]
    while len(picked) < n_rows:
        picked.append(rng.choice(train))
    sft = []
    for r in picked[:n_rows]:
        answer = rng.choice(r["shortlist"])["path"]
        sft.append(
            {
                "messages": [
                    *r["messages"],
                    {"role": "assistant", "content": json.dumps({"files": [answer]})},
                ],
                "instance_id": r["instance_id"],
            }
        )
    _write_jsonl(out / f"sft-{name}.jsonl", sft)
    print(f"sft-{name}: {len(sft)} rows")


def grpo_data(out: Path) -> None:
    """The GRPO prompts: training rows whose shortlist holds a gold file (a group over a
    shortlist without one scores 0 whatever is sampled, and teaches nothing)."""
    train = _read_jsonl(out / "rows" / "train.jsonl")
    kept = [r for r in train if _gold_rank(r) is not None]
    _write_jsonl(out / "grpo-train.jsonl", kept)
    print(f"grpo prompts: {len(kept)} of {len(train)} training rows hold a gold file")


# ------------------------------------------------------------------------------- evaluation


def _score(text: str, gold: list[str]) -> dict[str, Any]:
    """The training reward (`fbeta_file`, strict parse) and the main job's answer (the
    episode's tolerant parse) of one reply."""
    from codegrep_model.answer import parse_answer
    from grpo_rewards import Gold, fbeta, score_completion

    reward = score_completion("fbeta_file", text, Gold.of(gold), None).reward
    parsed = parse_answer(text)
    files = list(parsed.files) if parsed is not None else []
    return {
        "reward": reward,
        "answered": parsed is not None,
        "files": files,
        "f05": fbeta(files, gold, beta=0.5) if files else 0.0,
    }


def evaluate(
    out: Path, arm: str, split: str, model: Path, shuffle: bool, k: int = 1, temp: float = 0.0
) -> None:
    from codegrep_model._grpo_rows import GrpoRow
    from codegrep_model._shortlist_rows import entries_of_row
    from codegrep_model.policies.local import LocalPolicy, render_chatml
    from codegrep_model.policies.shortlist import shortlist_messages, shuffled

    rows = [GrpoRow.model_validate(r) for r in _read_jsonl(out / "rows" / f"{split}.jsonl")]
    suffix = ".shuffled" if shuffle else ""
    dest = out / "eval" / f"{arm}.{split}{suffix}.jsonl"
    dest.parent.mkdir(exist_ok=True)
    done = {r["instance_id"] for r in _read_jsonl(dest)} if dest.exists() else set()
    todo = [r for r in rows if r.instance_id not in done]
    policy = LocalPolicy(
        model, max_new_tokens=MAX_NEW_TOKENS, temperature=temp, max_batch=8, dtype="float32"
    )
    cfg = _config()

    async def one(row: GrpoRow) -> dict[str, Any]:
        entries = entries_of_row(row)
        if shuffle:
            entries = shuffled(entries, row.instance_id)
        messages = shortlist_messages(row.repo, row.problem_statement, entries, cfg)
        text, usage = await policy.complete(render_chatml(messages, ()))
        res = _score(text, list(row.gold_files))
        res.update(
            instance_id=row.instance_id,
            repo=row.repo,
            text=text,
            shown=[e.path for e in entries],
            prompt_tokens=usage.prompt_tokens,
        )
        return res

    async def go() -> None:
        for start in range(0, len(todo), 8):
            chunk = todo[start : start + 8]
            got = await asyncio.gather(*(one(r) for r in chunk))
            with dest.open("a") as f:
                f.write("".join(json.dumps(g, sort_keys=True) + "\n" for g in got))
            print(f"{arm} {split}{suffix}: {len(done) + start + len(chunk)}/{len(rows)}",
                  flush=True)  # fmt: skip

    asyncio.run(go())
    print(json.dumps(policy.summary()))


def passk(out: Path, model: Path, k: int, limit: int, seed: int = 0) -> None:
    """pass@k (some of k sampled answers scores above 0) on `limit` GRPO prompts, and the share
    of groups whose k rewards are all equal (flat: GRPO learns nothing from them)."""
    from codegrep_model.policies.local import LocalPolicy, render_chatml

    prompts = _read_jsonl(out / "grpo-train.jsonl")
    rng = random.Random(seed)
    prompts = rng.sample(prompts, min(limit, len(prompts)))
    policy = LocalPolicy(
        model, max_new_tokens=MAX_NEW_TOKENS, temperature=1.0, max_batch=8, seed=seed
    )

    async def group(r: dict[str, Any]) -> list[float]:
        text = render_chatml(r["messages"], ())
        got = await asyncio.gather(*(policy.complete(text) for _ in range(k)))
        return [_score(t, r["gold_files"])["reward"] for t, _ in got]

    async def go() -> list[list[float]]:
        return [await group(r) for r in prompts]

    groups = asyncio.run(go())
    res = {
        "k": k,
        "prompts": len(groups),
        "pass_at_k": sum(any(x > 0 for x in g) for g in groups) / len(groups),
        "mean_reward": sum(map(sum, groups)) / (k * len(groups)),
        "zero_variance_groups": sum(len(set(g)) == 1 for g in groups) / len(groups),
        "temperature": 1.0,
    }
    (out / "passk.summary.json").write_text(json.dumps(res, indent=1) + "\n")
    print(json.dumps(res))


# ------------------------------------------------------------------------------- report


def _sign_test(d: list[float]) -> tuple[int, int, float]:
    """Wins, losses and the two-sided exact sign-test p (ties dropped)."""
    wins, losses = sum(x > 0 for x in d), sum(x < 0 for x in d)
    n = wins + losses
    if n == 0:
        return 0, 0, 1.0
    tail = sum(math.comb(n, i) for i in range(0, min(wins, losses) + 1)) / 2**n
    return wins, losses, min(1.0, 2 * tail)


def _load(out: Path, name: str) -> dict[str, dict[str, Any]]:
    path = out / "eval" / f"{name}.jsonl"
    return {r["instance_id"]: r for r in _read_jsonl(path)} if path.exists() else {}


def power(n: int, sd: float, effect: float, alpha: float = 0.05) -> float:
    """The chance a two-sided paired test at `alpha` detects a true mean difference `effect`
    over n pairs whose differences have standard deviation `sd` (normal approximation)."""
    from statistics import NormalDist

    if sd == 0:
        return 1.0
    z = NormalDist().inv_cdf(1 - alpha / 2)
    return NormalDist().cdf(effect * math.sqrt(n) / sd - z)


def decide(diffs: dict[str, dict[str, Any]], n: int) -> dict[str, Any] | None:
    """The README's decision rule, applied to GRPO − SFT control per seed: *learned* when both
    seeds' 95% intervals lie above 0; *inconclusive* when one does; otherwise *no effect of
    EFFECT or more* where the test had ≥ 80% power for EFFECT, else *underpowered*."""
    per = {s: diffs.get(f"grpo_s{s}-sft_control") for s in (0, 1)}
    if all(v is None for v in per.values()):
        return None
    seeds = {}
    for s, d in per.items():
        if d is None:
            continue
        lo, hi = d["interval"]
        seeds[f"grpo_s{s}"] = {
            "interval": [lo, hi],
            "above_0": lo > 0,
            "power_for_effect": power(n, d["sd"], EFFECT),
        }
    above = sum(v["above_0"] for v in seeds.values())
    powered = all(v["power_for_effect"] >= 0.8 for v in seeds.values())
    missing = [f"grpo_s{s}" for s, d in per.items() if d is None]
    if missing:
        verdict = "not decided"
        why = (f"The rule needs both seeds; {', '.join(missing)} has no held-out evaluation "
               f"yet. Of the seeds evaluated, {above} of {len(seeds)} lie above 0.")  # fmt: skip
    elif above == 2:
        verdict = "GRPO learned"
        why = "Both seeds' intervals for GRPO − SFT control lie above 0."
    elif above == 1:
        verdict = "inconclusive"
        why = "One seed's interval for GRPO − SFT control lies above 0, the other's does not."
    elif powered:
        verdict = f"no effect of {EFFECT} or more"
        why = (f"Neither seed's interval lies above 0, and each test had at least 80% power "
               f"for a difference of {EFFECT} (from the observed sd).")  # fmt: skip
    else:
        verdict = "underpowered"
        why = (f"Neither seed's interval lies above 0, and the tests had under 80% power for "
               f"a difference of {EFFECT}: the negative says little.")  # fmt: skip
    return {"verdict": verdict, "why": why, "effect": EFFECT, "seeds": seeds}


def report(out: Path) -> None:
    spec = json.loads((out / "splits.json").read_text())
    rows = {s: {r["instance_id"]: r for r in _read_jsonl(out / "rows" / f"{s}.jsonl")}
            for s in ("train", "heldout")}  # fmt: skip
    lexical = {r["instance_id"]: r for r in _read_jsonl(out / "lexical.jsonl")}
    from grpo_rewards import fbeta

    summary: dict[str, Any] = {
        "model": {"name": "SmolLM2-135M-Instruct", "weights": "Q4_1 GGUF, dequantized"},
        "task": {"shortlist": SHORTLIST, "max_new_tokens": MAX_NEW_TOKENS},
        "train_ids": sorted(rows["train"]),
        "heldout_ids": sorted(rows["heldout"]),
        "heldout_repos": spec["heldout_repos"],
        "arms": {},
    }
    md: list[str] = []
    split = "heldout"
    ids = sorted(rows[split])
    ranks = [_gold_rank(rows[split][i]) for i in ids]
    md += [f"### held out: {len(ids)} instances of {len(spec['heldout_repos'])} repositories "
           f"never trained on ({', '.join(spec['heldout_repos'])})", "",
           f"The gold file is in the shortlist for {sum(r is not None for r in ranks)} of "
           f"{len(ids)}; first for {sum(r == 1 for r in ranks)}.", "",
           "| arm | reward (fbeta_file) | F0.5, main job's parse | answered | reward > 0 |",
           "| --- | --- | --- | --- | --- |"]  # fmt: skip
    lex = {i: fbeta(lexical[i]["files"], rows[split][i]["gold_files"], beta=0.5) for i in ids}
    first = {i: fbeta([rows[split][i]["shortlist"][0]["path"]] if rows[split][i]["shortlist"]
                      else [], rows[split][i]["gold_files"], beta=0.5) for i in ids}  # fmt: skip
    summary["arms"]["lexical"] = {"heldout": lex}
    summary["arms"]["shortlist_first"] = {"heldout": first}
    lex_cell = _fmt(*_boot(list(lex.values())))
    md.append(f"| LexicalPolicy (its own answer, out-of-fold ranker) | {lex_cell} | same | "
              f"{len(ids)} | {sum(v > 0 for v in lex.values())} |")  # fmt: skip
    md.append(f"| the shortlist's first file | {_fmt(*_boot(list(first.values())))} | same | "
              f"{len(ids)} | {sum(v > 0 for v in first.values())} |")  # fmt: skip
    res: dict[str, dict[str, dict[str, Any]]] = {}
    for arm, title in ARMS:
        for variant in ("", ".shuffled"):
            got = _load(out, f"{arm}.{split}{variant}")
            if not got:
                continue
            if set(got) != set(ids):
                md.append(f"| {title}{variant}: {len(got)} of {len(ids)} run | | | | |")
                continue
            res[arm + variant] = got
            r = [float(got[i]["reward"]) for i in ids]
            f = [float(got[i]["f05"]) for i in ids]
            answered = sum(got[i]["answered"] for i in ids)
            md.append(f"| {title}{' (shortlist shuffled)' if variant else ''} | "
                      f"{_fmt(*_boot(r))} | {_fmt(*_boot(f))} | "
                      f"{answered} | {sum(x > 0 for x in r)} |")  # fmt: skip
            summary["arms"].setdefault(arm, {})[f"{split}{variant}"] = {
                i: got[i]["reward"] for i in ids
            }
    md += ["", "Paired differences of the reward, same instances (95% bootstrap intervals, 2,000 "
           "resamples, seed 0; sign test two-sided, ties dropped; MDE at 80% power from the "
           "observed sd):", "",
           "| difference | mean [95% interval] | wins / losses | sign p | MDE |",
           "| --- | --- | --- | --- | --- |"]  # fmt: skip
    base_of: dict[str, dict[str, float]] = {"lexical": lex, "shortlist_first": first}
    for name, got in res.items():
        base_of[name] = {i: float(got[i]["reward"]) for i in ids}
    pairs = [(f"grpo_s{s}", b) for s in (0, 1) for b in ("sft_control", "format_sft", "lexical",
             "shortlist_first")] + [("grpo_s0.shuffled", "grpo_s0"), ("grpo_s1.shuffled",
             "grpo_s1"), ("format_sft", "base")]  # fmt: skip
    for a, b in pairs:
        if a not in base_of or b not in base_of:
            continue
        d = [base_of[a][i] - base_of[b][i] for i in ids]
        m = sum(d) / len(d)
        sd = math.sqrt(sum((x - m) ** 2 for x in d) / max(1, len(d) - 1))
        w, lo_, p = _sign_test(d)
        mean, lo, hi = _boot(d)
        md.append(f"| {a} − {b} | {_fmt(mean, lo, hi)} | {w} / {lo_} | {p:.2g} | "
                  f"{mde(len(d), sd):.3f} |")  # fmt: skip
        summary.setdefault("differences", {})[f"{a}-{b}"] = {
            "mean": m, "interval": [lo, hi], "sd": sd, "wins": w, "losses": lo_, "sign_p": p,
        }  # fmt: skip
    for other in ("sft_control", "format_sft"):
        if not all(k in base_of for k in ("grpo_s0", "grpo_s1", other)):
            continue
        # the two seeds on the same instances: the mean of the seeds' differences per instance
        per = [(base_of["grpo_s0"][i] + base_of["grpo_s1"][i]) / 2 - base_of[other][i]
               for i in ids]  # fmt: skip
        mean, lo, hi = _boot(per)
        sp = _sign_test(per)
        md.append(f"| pooled seeds (mean of the two) − {other} | {_fmt(mean, lo, hi)} | "
                  f"{sp[0]} / {sp[1]} | {sp[2]:.2g} | |")  # fmt: skip
        summary.setdefault("differences", {})[f"grpo_pooled-{other}"] = {
            "mean": mean, "interval": [lo, hi], "wins": sp[0], "losses": sp[1],
            "sign_p": sp[2]}  # fmt: skip
    verdict = decide(summary.get("differences", {}), len(ids))
    if verdict is not None:
        summary["verdict"] = verdict
        md += ["", f"**Verdict by the decision rule: {verdict['verdict']}.** {verdict['why']}"]
    md.append("")
    pk = out / "passk.summary.json"
    if pk.exists():
        summary["passk_train"] = json.loads(pk.read_text())
    dest = out / "report"
    dest.mkdir(exist_ok=True)
    for seed in (0, 1):
        steps = write_curves(out / f"grpo-s{seed}", dest, seed, "fbeta_file")
        if steps:
            summary.setdefault("grpo_steps", {})[f"s{seed}"] = steps
    (dest / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    (dest / "table.md").write_text("\n".join(md) + "\n")
    print("\n".join(md))


def bf16_adapter(src: Path, dst: Path) -> None:
    """Copy the LoRA adapter folder `src` to `dst` with its float tensors in bfloat16 (the
    dtype they trained in; ms-swift saves them as float32), with its configs and state."""
    import shutil

    import torch
    from safetensors.torch import load_file, save_file

    weights = load_file(src / "adapter_model.safetensors")
    dst.mkdir(parents=True, exist_ok=True)
    save_file(
        {k: v.to(torch.bfloat16) if v.is_floating_point() else v for k, v in weights.items()},
        dst / "adapter_model.safetensors",
        metadata={"format": "pt"},
    )
    kept = ("adapter_config.json", "additional_config.json", "args.json", "trainer_state.json")
    for name in kept:
        if (src / name).exists():
            shutil.copy(src / name, dst / name)
    print(f"{dst}: {sum(v.numel() for v in weights.values()):,} parameters in bfloat16")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("splits")
    s.add_argument("out", type=Path)
    s.add_argument("--splits", type=Path, default=HERE / "localizer_splits.json")
    r = sub.add_parser("rankers")
    r.add_argument("out", type=Path)
    r.add_argument("--examples", type=Path, required=True)
    w = sub.add_parser("rows")
    w.add_argument("out", type=Path)
    w.add_argument("-i", "--instances", type=Path, action="append", required=True)
    w.add_argument("--cache", type=Path, required=True)
    w.add_argument("--source", required=True)
    w.add_argument("-j", "--jobs", type=int, default=2)
    f = sub.add_parser("sft-data")
    f.add_argument("out", type=Path)
    f.add_argument("name")
    f.add_argument("--rows", type=int, required=True)
    f.add_argument("--seed", type=int, default=0)
    g = sub.add_parser("grpo-data")
    g.add_argument("out", type=Path)
    e = sub.add_parser("eval")
    e.add_argument("out", type=Path)
    e.add_argument("arm")
    e.add_argument("split", choices=("train", "heldout"))
    e.add_argument("--model", type=Path, required=True)
    e.add_argument("--shuffle", action="store_true")
    p = sub.add_parser("passk")
    p.add_argument("out", type=Path)
    p.add_argument("--model", type=Path, required=True)
    p.add_argument("--k", type=int, default=8)
    p.add_argument("--limit", type=int, default=16)
    b = sub.add_parser("bf16")
    b.add_argument("src", type=Path)
    b.add_argument("dst", type=Path)
    t = sub.add_parser("report")
    t.add_argument("out", type=Path)
    a = ap.parse_args()
    if a.cmd == "splits":
        splits(a.out, a.splits)
    elif a.cmd == "rankers":
        rankers(a.out, a.examples)
    elif a.cmd == "rows":
        rows(a.out, a.instances, a.cache, a.source, a.jobs)
    elif a.cmd == "sft-data":
        sft_data(a.out, a.name, a.rows, a.seed)
    elif a.cmd == "grpo-data":
        grpo_data(a.out)
    elif a.cmd == "eval":
        evaluate(a.out, a.arm, a.split, a.model, a.shuffle)
    elif a.cmd == "passk":
        passk(a.out, a.model, a.k, a.limit)
    elif a.cmd == "bf16":
        bf16_adapter(a.src, a.dst)
    else:
        report(a.out)


if __name__ == "__main__":
    main()
