"""The pins of a downstream run plan and why each is what it is: the runner's and the
harness's commits and versions, the template names, the model name the harness writes.
Not for: building or writing a plan (`plan`).
"""

from __future__ import annotations

import re

__all__ = [
    "BENCHMARKS_COMMIT",
    "BENCHMARKS_PLACEHOLDER",
    "BENCHMARKS_REPO",
    "DEFAULT_HARNESS_DATASET",
    "HARNESS_IMAGES",
    "HARNESS_IMAGES_MODAL",
    "HARNESS_MODEL_NAME",
    "HARNESS_TIMEOUT_S",
    "PLAN_KIND",
    "PLAN_SCHEMA_VERSION",
    "SDK_COMMIT",
    "STOCK_TEMPLATE",
    "SWEBENCH_VERSION",
    "TEMPLATE_NAME",
    "WHY",
    "agent_images",
    "harness_images",
]

PLAN_KIND = "swe-eval-downstream-plan"
PLAN_SCHEMA_VERSION = 1

# The runner: OpenHands/benchmarks, the V1 evaluation on openhands-sdk (V0's evaluation/ folder
# left the OpenHands repository). Read at this commit: benchmarks/swebench/run_infer.py renders
# --prompt-path with the dataset row as `instance`; its lock pins swebench 4.1.0 and the
# vendored software-agent-sdk (openhands-sdk 1.27.0) at SDK_COMMIT.
BENCHMARKS_REPO = "https://github.com/OpenHands/benchmarks"
BENCHMARKS_COMMIT = "4e5469e0caaf54d1ad827d18b524bdfb79d58430"
SDK_COMMIT = "43376f1868ffd702746080714a59c16d3f69ec12"
SWEBENCH_VERSION = "4.1.0"
# Stands for the runner's checkout in the commands until --benchmarks names it.
BENCHMARKS_PLACEHOLDER = "$BENCHMARKS"
# benchmarks.utils.constants.MODEL_NAME_OR_PATH: the converter writes it into every prediction,
# and swebench 4.1.0 names its run report `<model_name_or_path>.<run_id>.json` in the cwd.
HARNESS_MODEL_NAME = "OpenHands"
HARNESS_IMAGES = "swebench defaults: namespace swebench, instance image tag latest"
# What grades under --modal true: swebench 4.1.0's Modal path builds each instance's environment
# in a sandbox from ubuntu:22.04 and the instance's setup scripts (no prebuilt instance image is
# pulled), inside a function image that pip-installs swebench without a version pin.
HARNESS_IMAGES_MODAL = (
    "Modal sandboxes: each instance built from ubuntu:22.04 plus its swebench 4.1.0 setup "
    "scripts (no prebuilt image); the Modal function image installs swebench unpinned"
)


def harness_images(backend: str) -> str:
    """The images the harness really grades in, for `backend` (docker or modal)."""
    return HARNESS_IMAGES_MODAL if backend == "modal" else HARNESS_IMAGES


def agent_images(workspace: str) -> str:
    """The images the agent runs in: chosen by the runner at its pinned commit, not here."""
    where = (
        "the remote runtime's agent-server image"
        if workspace == "remote"
        else (f"the agent-server image of the {workspace} workspace")
    )
    return (
        f"{where}, as the runner at {BENCHMARKS_COMMIT[:7]} chooses it: not pinned by this plan "
        "(its tag or digest is in the runner's own logs)"
    )


HARNESS_TIMEOUT_S = 1800  # swebench's own default per instance, written out so it is seen
DEFAULT_HARNESS_DATASET = "princeton-nlp/SWE-bench_Verified"
TEMPLATE_NAME = "prompt.j2"  # not `default.j2`: the runner resolves a bare name in its prompts/
# The runner's own SWE-bench template, in its checkout (read when the run starts).
STOCK_TEMPLATE = "benchmarks/swebench/prompts/default.j2"

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
# swebench 4.1.0's make_test_spec reads these (version through its repo/version spec table).
_HARNESS_FIELDS = ("version", "environment_setup_commit", "test_patch", "FAIL_TO_PASS")

WHY = {
    "runner": (
        "OpenHands/benchmarks (V1, openhands-sdk) renders --prompt-path with the dataset row as "
        "`instance`, so the candidate_files column reaches the prompt with no patch to the "
        "runner; V0's evaluation/ harness is no longer in the OpenHands repository"
    ),
    "swebench": (
        "swebench 4.1.0 is what OpenHands/benchmarks pins (`swebench==4.1.0`), so its converter "
        "and the harness share one environment; swebench 5.x builds each test spec from per-row "
        "image, eval_script, log_parser and eval_type fields and raises KeyError on classic "
        "rows (princeton-nlp/SWE-bench_Verified, and SWE-bench-style instance files), while "
        "4.1.0 builds it from the repo/version spec table"
    ),
    "harness_dataset_hub": (
        "the instances lack fields swebench 4.1.0 builds a test spec from (version, "
        "environment_setup_commit, test_patch, FAIL_TO_PASS), so the harness reads the classic "
        "rows of the same instances from the hub (classic form: see swebench)"
    ),
    "harness_dataset_local": (
        "every instance carries the fields swebench 4.1.0 builds a test spec from (version, "
        "environment_setup_commit, test_patch, FAIL_TO_PASS), so the harness grades against "
        "the configuration's own dataset.jsonl, offline"
    ),
    "select": (
        "--select instances.txt and never --n-limit: the runner's --n-limit draws a random "
        "sample (pandas sample, random_state=42), not the first N; the plan fixes the instances "
        "and their order in dataset.jsonl itself"
    ),
    "critic": (
        "--n-critic-runs 1: by default the runner retries an instance its critic rejects "
        "(finish_with_patch, up to 3 attempts), a second chance the paper's frozen agent did "
        "not get and that would differ between configurations"
    ),
    "condenser": (
        "the runner summarises long histories with extra LLM calls by default, which would "
        "enter Table 3's rounds and tokens; off unless --condenser (the Claude 3.5 Verified "
        "reference run had none)"
    ),
    "iterations": (
        "the paper's Table 3 ran OpenHands at temperature 0 with a 100-round cap (the Claude 3.5 "
        "Verified reference run in shared/data used 50); one cap for every configuration"
    ),
    "llm": (
        "one LLM config for every configuration: the same model at temperature 0; no API key is "
        "written (LiteLLM reads the provider's key from the environment)"
    ),
    "prompt_stock": (
        "the paper's baseline is the unmodified agent: the runner's own template, byte for byte, "
        "read from the pinned checkout when the run starts; an injected run gets the same "
        "template with one block after the issue that prints the row's `injection` column "
        "(render(files, 'openhands')), so the two differ in that section only"
    ),
    "prompt": (
        "codegrep-gate's template: the SWE-bench instruction plus, when the row's candidate_files "
        "is not empty, the section render(files, 'openhands') writes; the baseline uses it too, "
        "so configurations differ only in that section"
    ),
    "sampling": (
        "every sampling knob the server reads is written out, so nothing falls to a provider "
        "default that can change: openhands-sdk's LLM sends temperature, top_p, top_k, "
        "max_output_tokens and seed; drop_params false turns a parameter the provider refuses "
        "into an error instead of a silent drop; repeats differ only in the seed"
    ),
    "serving": (
        "a self-hosted model's weights revision, server version and tool-call parser change "
        "the agent as much as a prompt does; recorded in each run's manifest.json, which "
        "`report` compares across runs"
    ),
    "skills": (
        "the runner loads public skills from another repository at run time, at the ref its "
        "EXTENSIONS_REF environment variable names (main when unset): --skills COMMIT sets it "
        "on the runner's command, so every run reads the same skills"
    ),
    "retries": (
        "--max-retries 0: the runner re-runs an instance that crashed (3 times by default), a "
        "second chance that is not the same across configurations; a crash is a failure"
    ),
    "round_cap": (
        "--max-iterations caps each run of the conversation, and the runner answers an agent "
        "that stops without finishing with up to 10 'please continue' messages "
        "(run_conversation_with_fake_user_response, max_fake_responses=10, no flag), each "
        "starting a new segment; `report` counts every LLM call of a run and names the runs "
        "above this total"
    ),
    "backend": (
        "swebench 4.x grades in Modal sandboxes with --modal true, the same test specs and "
        "report; the runner's --workspace remote runs the agent off this host"
    ),
    "images": (
        "the harness's own image defaults, written down: a moving tag, so two runs months apart "
        "may grade in different images; no digest is pinned (record `docker images --digests` "
        "beside a run to show which)"
    ),
    "run_id": (
        "<config>-<hash of its dataset and LLM settings>: the harness caches verdicts per "
        "(run_id, instance), so a changed plan gets a new run id and an unchanged one resumes"
    ),
    "columns": (
        "dataset.jsonl keeps the SWE-bench columns the runner and the harness read; other "
        "columns (e.g. nested span maps) are left out: the runner loads the file with "
        "datasets/pyarrow, which must infer one type per column"
    ),
}
