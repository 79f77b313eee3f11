"""ms-swift plugin for CodeGrep GRPO: pass this file to `swift rlhf --external_plugins`.

    swift rlhf --rlhf_type grpo --external_plugins "$(python -c 'import codegrep_model.train as t;
    print(t.swift_plugin_path())')" --multi_turn_scheduler codegrep_tools --max_turns 4
    --reward_funcs codegrep_v3 ...

Importing it registers, in ms-swift 4.6's registries:

- rewards (`--reward_funcs`): `codegrep_v1`, `codegrep_v2`, `codegrep_v3`, `colgrep_file_f1` and
  the other `grpo_rewards.swift_orm.SWIFT_ORMS`; they read the parsed answer and the counts the
  scheduler records in `rollout_infos`;
- the multi-turn scheduler `codegrep_tools` (`--multi_turn_scheduler`): a thin wrapper around
  the RL environment, `codegrep_model.train.RolloutEnvironment` (one `Episode` per rollout, its
  stop rules, its record); its async `on_turn_end` runs the turn's calls concurrently on the
  rollout's tree and hands ms-swift the record's JSON form, its `step` appends the tool results
  and the episode's next user prompt;
- `TrainerFactory.TRAINER_MAPPING['grpo']` -> `CodegrepGRPOTrainer`, whose `_compute_advantages`
  multiplies each group-normalized advantage by the factor `grpo_rewards.advantage_scales`
  gives it (sqrt(min(c̄/4, 1)) when the reward's spec declares that advantage-layer term, v2
  and v3; v1 is left unscaled) and writes one JSON line per
  rollout (`RolloutLogEntry`) to `$CODEGREP_ROLLOUT_LOG`, else
  `<output_dir>/codegrep_rollouts.jsonl`.

A reply cut at `--max_completion_length` (finish reason `length`) ends its rollout, as ms-swift's
own `check_finished` would: the scheduler's `done` overrides that check.

Token budget (`codegrep_model.budget`): the scheduler counts each rollout with the trainer's
tokenizer (a reply by its token ids; the tool schemas as the trainer's template writes them into
the system prompt) and holds it to the template's `max_length` (else
`$CODEGREP_MAX_LENGTH`, else 32768) and to `$CODEGREP_MAX_COMPLETION_TOKENS` (default 2048) of
model output over all turns; `$CODEGREP_MAX_TURN_TOKENS` (default 2048) is the per-round
`--max_completion_length` it keeps room for. Tool results are cut to fit; a rollout that cannot
fit ends with `overflow` in its `rollout_infos` and log line, and `codegrep/overflow_rate` is
logged per batch.

Environment: `CODEGREP_ZERO_UNANSWERED=1` zeroes the advantage of rollouts that called tools and
never answered (default: kept, the paper's A_i · s(c̄), negative below the group mean).

TEST ONLY: `--multi_turn_scheduler codegrep_tools_test_lexical` (or
`codegrep_tools_test_lexical_alternate`, every other rollout of an instance) names a scheduler
that replaces the model's replies with `LexicalPolicy`'s (`codegrep_model.train.TEST_POLICIES`),
so that a random tiny model on a CPU still makes real tool calls; it is logged loudly and
recorded in every rollout's `rollout_infos` and log line.

This is the only file of codegrep-model that imports ms-swift (and, through it, torch); it sits
in a folder that is not a Python package, so `import codegrep_model` never reaches it.
"""

from __future__ import annotations

import asyncio
import atexit
import math
import os
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

# ms-swift, torch and accelerate ship no type information, and the workspace's type check runs
# where they are not installed: either way their names are Any here.
import torch  # type: ignore[import-not-found, import-untyped, unused-ignore]
from accelerate.utils import gather_object  # type: ignore[import-not-found, import-untyped, unused-ignore]
from codegrep_model.budget import CharEstimate, SystemWithTools, TokenBudget, TokenizerCounter
from codegrep_model.train import (
    CHATML_TURN_BREAK,
    ROLLOUT_LOG_ENV,
    ROLLOUT_LOG_FILE,
    TEST_POLICIES,
    TRAINING_BUDGET,
    RolloutEnvironment,
    RolloutLogEntry,
    TrainingSetupError,
    advantage_scales,
    efficiency_reward,
    fold_follow_up,
    named_test_override,
    scheduler_with_test_policy,
    set_aside_log,
)
from grpo_rewards import RolloutInfo
from grpo_rewards.swift_orm import register_swift_orms
from swift.rewards import orms  # type: ignore[import-not-found, import-untyped, unused-ignore]
from swift.rlhf_trainers.grpo_trainer import GRPOTrainer  # type: ignore[import-not-found, import-untyped, unused-ignore]
from swift.rollout.multi_turn import MultiTurnScheduler, multi_turns  # type: ignore[import-not-found, import-untyped, unused-ignore]
from swift.template import StdTemplateInputs  # type: ignore[import-not-found, import-untyped, unused-ignore]
from swift.trainers import TrainerFactory  # type: ignore[import-not-found, import-untyped, unused-ignore]
from swift.utils import get_logger  # type: ignore[import-not-found, import-untyped, unused-ignore]

logger = get_logger()

SCHEDULER_NAME = "codegrep_tools"
ZERO_UNANSWERED_ENV = "CODEGREP_ZERO_UNANSWERED"
MAX_LENGTH_ENV = "CODEGREP_MAX_LENGTH"
MAX_COMPLETION_TOKENS_ENV = "CODEGREP_MAX_COMPLETION_TOKENS"
MAX_TURN_TOKENS_ENV = "CODEGREP_MAX_TURN_TOKENS"


def _env_int(name: str, default: int | None) -> int | None:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    if not raw.isascii() or not raw.isdigit() or int(raw) < 1:
        raise TrainingSetupError(f"{name}={raw!r}: a positive number of tokens")
    return int(raw)


register_swift_orms(orms)


def _sample_key(sample: Any) -> str:
    """A sample's identity across ranks and pickling: ms-swift's per-sample `request_id`."""
    return str(getattr(sample, "request_id", "") or "")


def _sample_view(sample: Any) -> tuple[str, dict[str, Any], Any]:
    """What the set-aside log needs of a sample: its key, its rollout infos, its instance."""
    extra = getattr(sample, "extra", None) or {}
    return _sample_key(sample), dict(sample.rollout_infos or {}), extra.get("instance_id")


class CodegrepToolsScheduler(MultiTurnScheduler):  # type: ignore[misc]
    """`--multi_turn_scheduler codegrep_tools`: the CodeGrep agent's turns on real trees."""

    #: TEST ONLY: the `TEST_POLICIES` entry whose replies replace the model's; set by the
    #: schedulers registered under `scheduler_with_test_policy`, never by `codegrep_tools`.
    test_policy: ClassVar[str | None] = None

    def __init__(
        self, infer_engine: Any = None, max_turns: int | None = None, *args: Any, **kwargs: Any
    ):
        super().__init__(infer_engine, max_turns, *args, **kwargs)
        override = None if self.test_policy is None else named_test_override(self.test_policy)
        if override is not None:
            logger.warning(
                "--multi_turn_scheduler %s: TEST ONLY. The model's replies are REPLACED by the "
                "%s policy's replies (%s; real tool calls on the real repository, but NOT the "
                "model's text). Never train a real model like this.",
                scheduler_with_test_policy(SCHEDULER_NAME, self.test_policy or ""),
                override.policy.name,
                "every other rollout of each instance" if override.alternate else "every rollout",
            )
        self.environment = RolloutEnvironment(
            max_turns=max_turns, policy_name="ms-swift", test_override=override
        )
        atexit.register(self.environment.close)
        self._budget_set = False

    def _set_budget(self) -> None:
        """The budget from the trainer's template and tokenizer, once they are known."""
        if self._budget_set:
            return
        template = self._template or getattr(self.infer_engine, "template", None)
        budget = TokenBudget(
            max_length=_env_int(MAX_LENGTH_ENV, getattr(template, "max_length", None))
            or TRAINING_BUDGET.max_length,
            max_completion_tokens=_env_int(
                MAX_COMPLETION_TOKENS_ENV, TRAINING_BUDGET.max_completion_tokens
            ),
            max_turn_tokens=_env_int(MAX_TURN_TOKENS_ENV, TRAINING_BUDGET.max_turn_tokens),
        )
        try:  # the scheduler's tokenizer comes from its template, which a bare scheduler lacks
            tokenizer = self.tokenizer or getattr(template, "tokenizer", None)
        except AttributeError:
            tokenizer = getattr(template, "tokenizer", None)
        counter = TokenizerCounter(tokenizer) if tokenizer is not None else CharEstimate()
        self.environment.set_budget(budget, counter, tools_system=_template_system(template))
        self._budget_set = True
        logger.info("codegrep: rollout token budget %s, counted by %s", budget, counter.name)

    async def on_trajectory_start(self, requests: list[Any]) -> None:
        self._set_budget()
        await asyncio.gather(
            *(
                self.environment.start(r.uuid, r.messages, r.data_dict, tools=r.tools)
                for r in requests
            )
        )

    async def on_turn_end(
        self, infer_request: Any, response_choice: Any, current_turn: int
    ) -> dict[str, Any]:
        message = response_choice.message
        ids = getattr(response_choice, "token_ids", None)
        out = await self.environment.turn(
            infer_request.uuid,
            message.content,
            message.tool_calls,
            current_turn=current_turn,
            completion_tokens=len(ids) if ids else None,
            # `done` overrides ms-swift's check_finished, which ends a rollout on a reply cut
            # at --max_completion_length: the episode ends it the same way
            length_cut=getattr(response_choice, "finish_reason", None) == "length",
        )
        if out.replaced_content is not None:
            self._replace_reply(infer_request, response_choice, out.replaced_content)
        return {"done": out.done, "rollout_infos": out.rollout_infos}

    def step(self, infer_request: Any, response_choice: Any, current_turn: int) -> dict[str, Any]:
        # ms-swift encodes (query, reply) pairs: the tool results and the episode's next prompt
        # go in as one user turn, in the tokens the chat template makes of them (fold_follow_up,
        # as the SFT rows of codegrep_model.datasets have them)
        try:
            folded = fold_follow_up(
                self.environment.take_messages(infer_request.uuid), turn_break=self._turn_break()
            )
        except ValueError as exc:
            raise TrainingSetupError(f"request {infer_request.uuid}: {exc}") from exc
        if folded is not None:
            infer_request.messages.append(folded)
        return {"infer_request": infer_request}

    def _turn_break(self) -> str:
        """The template's end of one user turn and start of the next (ChatML's by default)."""
        template = self._template or getattr(self.infer_engine, "template", None)
        meta = getattr(template, "template_meta", None)
        if meta is None:
            return CHATML_TURN_BREAK
        sep = "".join(x for x in meta.chat_sep or () if isinstance(x, str))
        for part in meta.prompt:
            if isinstance(part, str) and "{{QUERY}}" in part:
                return sep + part.split("{{QUERY}}", 1)[0]
        return CHATML_TURN_BREAK

    def _replace_reply(self, infer_request: Any, response_choice: Any, text: str) -> None:
        """TEST ONLY: make the test policy's text the turn's reply everywhere ms-swift reads it:
        the conversation, the choice, and the token ids the loss is computed on."""
        last = infer_request.messages[-1]
        if last.get("role") != "assistant":
            raise RuntimeError("the reply to replace is not the last message")
        last["content"] = text
        response_choice.message.content = text
        response_choice.message.tool_calls = None
        response_choice.finish_reason = "stop"
        response_choice.logprobs = None
        tokenizer = self.tokenizer
        if response_choice.token_ids is not None and tokenizer is not None:
            ids = list(tokenizer.encode(text, add_special_tokens=False))
            if tokenizer.eos_token_id is not None:
                ids.append(tokenizer.eos_token_id)
            response_choice.token_ids = ids


def _template_system(template: Any) -> SystemWithTools | None:
    """The system message with the tools as the trainer's template writes it into every
    encoding of a rollout (`Template._get_system`, which `_swift_encode` calls: the hermes agent
    template's `_format_tools` for Qwen3); None without a template."""
    get_system = getattr(template, "_get_system", None)
    if get_system is None:
        return None

    def render(system: str, tools: Sequence[Mapping[str, Any]]) -> str:
        inputs = StdTemplateInputs(
            messages=[{"role": "user", "content": ""}],
            system=system,
            tools=[dict(t) for t in tools],
        )
        return str(get_system(inputs) or "")

    return render


multi_turns[SCHEDULER_NAME] = CodegrepToolsScheduler
for _name in TEST_POLICIES:  # TEST ONLY: chosen by name on the command line, never by default
    multi_turns[scheduler_with_test_policy(SCHEDULER_NAME, _name)] = type(
        "CodegrepToolsTestScheduler", (CodegrepToolsScheduler,), {"test_policy": _name}
    )


class CodegrepGRPOTrainer(GRPOTrainer):  # type: ignore[misc]
    """ms-swift's GRPOTrainer with CodeGrep's advantage-layer efficiency scale."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.codegrep_zero_unanswered = os.environ.get(ZERO_UNANSWERED_ENV, "0") == "1"
        # the reward's spec decides whether advantages are scaled (v2/v3) or not (v1)
        self.codegrep_reward = efficiency_reward(
            list(self.reward_funcs), list(self.reward_func_names)
        )
        path = os.environ.get(ROLLOUT_LOG_ENV) or str(Path(self.args.output_dir) / ROLLOUT_LOG_FILE)
        self.codegrep_rollout_log = Path(path)
        self.codegrep_set_aside_log = set_aside_log(self.codegrep_rollout_log)
        if self.accelerator.is_main_process:
            logger.info("codegrep: per-rollout log at %s", self.codegrep_rollout_log)

    def _dynamic_sampling(
        self, samples: list[Any], rewards_per_func: torch.Tensor
    ) -> tuple[list[Any], torch.Tensor]:
        """ms-swift's DAPO resampling, with every rollout it drew and did not train on logged
        beside the rollout log (`*.set_aside.jsonl`, the same records with advantage 0): the
        groups without reward variance it replaced, or the resamples it dropped when none had
        any (it then trains on the first batch). Without this, those episodes ran and left no
        trace."""
        drawn: list[tuple[list[Any], torch.Tensor]] = [(samples, rewards_per_func)]
        compute: Any = getattr(self, "_compute_rewards_per_func")  # noqa: B009  (ms-swift, untyped)

        def recording(batch: list[Any]) -> torch.Tensor:
            rewards = compute(batch)
            drawn.append((batch, rewards))
            return rewards

        self._compute_rewards_per_func = recording  # shadows the method for this call only
        try:
            kept, kept_rewards = super()._dynamic_sampling(samples, rewards_per_func)
        finally:
            del self._compute_rewards_per_func
        # ms-swift's resampling loop and its stop are decided on gathered (global) rewards, so
        # every rank drew the same number of batches: each enters the same gathers below
        if len(drawn) > 1:
            self._log_drawn_not_trained(drawn, kept)
        return kept, kept_rewards

    def _log_drawn_not_trained(
        self, drawn: list[tuple[list[Any], torch.Tensor]], kept: list[Any]
    ) -> None:
        """Log the drawn rollouts that are not among `kept` (this rank's trained samples).

        `gather_object` is a collective (torch's `all_gather_object` under a process group):
        every rank calls it, in the same order, and rank 0 writes. Samples are matched by the
        `request_id` ms-swift gives each one (`chatcmpl-<uuid4>`, `_add_prompt_id_to_inputs`),
        which survives the pickling of a gather, as object identity does not; counted as a
        multiset, so a trajectory split into several samples (`dynamic_num_samples`) matches
        sample for sample. Only what the log needs crosses ranks, not the conversations.
        """
        trained = Counter(gather_object([_sample_key(s) for s in kept]))
        for batch, rewards in drawn:
            everyone = gather_object([_sample_view(s) for s in batch])
            aside = []
            for i, (key, _, _) in enumerate(everyone):
                if trained[key] > 0:
                    trained[key] -= 1
                else:
                    aside.append(i)
            if aside and self.accelerator.is_main_process:
                self._log_set_aside(
                    [everyone[i][1] for i in aside], [everyone[i][2] for i in aside], rewards[aside]
                )

    def _log_set_aside(
        self, rollout_infos: list[dict[str, Any]], ids: list[Any], rewards_per_func: torch.Tensor
    ) -> None:
        infos = [RolloutInfo.from_infos(i) for i in rollout_infos]
        scales = advantage_scales(
            infos, reward=self.codegrep_reward, zero_unanswered=self.codegrep_zero_unanswered
        )
        zeros = torch.zeros(len(infos), dtype=rewards_per_func.dtype)
        self._write_rollout_log(
            infos, ids, scales, rewards_per_func, zeros, path=self.codegrep_set_aside_log
        )

    def _compute_advantages(
        self, samples: list[Any], rewards_per_func: torch.Tensor, batch_encoded_inputs: list[Any]
    ) -> torch.Tensor:
        advantages = super()._compute_advantages(samples, rewards_per_func, batch_encoded_inputs)
        # `samples` are this rank's, the advantages every rank's in gather order
        gathered = gather_object([dict(s.rollout_infos or {}) for s in samples])
        infos = [RolloutInfo.from_infos(i) for i in gathered]  # ms-swift carries dicts
        ids = gather_object([s.extra.get("instance_id") for s in samples])
        if len(infos) != advantages.shape[0]:
            raise RuntimeError(f"{len(infos)} rollouts for {advantages.shape[0]} advantages")
        # the rule's one home (grpo_rewards.advantage_scales): no known reward means factor 1.0
        scales = advantage_scales(
            infos, reward=self.codegrep_reward, zero_unanswered=self.codegrep_zero_unanswered
        )
        factors = torch.tensor(
            [s.factor for s in scales], dtype=advantages.dtype, device=advantages.device
        )
        scaled = advantages * factors
        mode = "train" if self.model.training else "eval"
        self._metrics[mode]["codegrep/advantage_scale"].append(float(factors.mean()))
        self._metrics[mode]["codegrep/calls_per_turn"].append(
            sum(s.cbar for s in scales) / max(len(scales), 1)
        )
        self._metrics[mode]["codegrep/overflow_rate"].append(
            sum(bool(i.overflow) for i in infos) / max(len(infos), 1)
        )
        if self.accelerator.is_main_process:
            self._write_rollout_log(infos, ids, scales, rewards_per_func, advantages)
        return scaled

    def _write_rollout_log(
        self,
        infos: list[RolloutInfo],
        ids: list[Any],
        scales: list[Any],
        rewards_per_func: torch.Tensor,
        advantages: torch.Tensor,
        *,
        path: Path | None = None,
    ) -> None:
        weights = self.reward_weights.to(rewards_per_func.device)
        totals = (rewards_per_func * weights.unsqueeze(0)).nansum(dim=1).tolist()
        per_func = rewards_per_func.tolist()
        names = list(self.reward_func_names)
        # The step these rollouts train, numbered as ms-swift's logging.jsonl numbers it: the
        # optimizer step they feed has not happened yet, so it is global_step + 1.
        step = int(self.state.global_step) + 1
        lines = []
        for i, (info, scale) in enumerate(zip(infos, scales, strict=True)):
            entry = RolloutLogEntry.of(
                step=step,
                index=i,
                info=info,
                scale=scale,
                reward=float(totals[i]),
                rewards={n: float(v) for n, v in zip(names, per_func[i], strict=True)},
                advantage_group=float(advantages[i]),
                instance_id=None if ids[i] is None else str(ids[i]),
            )
            lines.append(entry.to_json_line())
            logger.info(
                "codegrep rollout step=%d #%d reward=%.4f calls/turn=%s c̄=%.3f factor=%.4f%s%s",
                step,
                i,
                totals[i] if not math.isnan(totals[i]) else float("nan"),
                list(entry.tool_calls_per_turn),
                scale.cbar,
                scale.factor,
                f" degenerate={scale.degenerate}" if scale.degenerate else "",
                f" TEST POLICY={entry.test_policy}" if entry.test_policy else "",
            )
        target = path or self.codegrep_rollout_log
        target.parent.mkdir(parents=True, exist_ok=True)
        with target.open("a", encoding="utf-8") as fh:
            fh.writelines(lines)


TrainerFactory.TRAINER_MAPPING["grpo"] = f"{__name__}.{CodegrepGRPOTrainer.__name__}"
