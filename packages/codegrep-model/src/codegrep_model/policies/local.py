"""`LocalPolicy`: a checkpoint (a full model folder, or a base folder plus a LoRA adapter) run
on this machine with transformers, through the same `Episode` as every other policy.

The conversation is rendered token for token as the ms-swift GRPO run renders it (`chatml`
template, `hermes` agent template): the tools in the system message as hermes `<tools>` JSON
lines, each earlier reply as the text the model wrote, and what followed it (tool results, the
episode's prompts) folded into one user turn by `fold_follow_up`, the function the training
scheduler appends with. Tool calls are read from the reply's `<tool_call>` blocks with the
parser the scheduler uses (`split_hermes`). So a model trained with `codegrep_model.train`
meets, at `codegrep localize`, the prompt it was trained on.

Greedy by default, in float32 (`dtype="bfloat16"` cuts the CPU time where the processor has
bf16 instructions; a model trained in bf16 is best run in bf16). Replies of episodes that run
at the same time (`codegrep-model batch -j N`, `swe-eval predict`) are generated together in
one left-padded batch. `timings` keeps the
tokens and seconds of every reply; `summary()` adds them up.

Needs torch and transformers (the `local` extra; peft for an adapter), imported when the
policy is built. Spec: `local:DIR` or `local:BASE_DIR+ADAPTER_DIR`.
Not for: training (ms-swift), or serving a model to other processes (vLLM, `OpenAIPolicy`).
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from codegrep_records.io import parse_json

from codegrep_model._chat_format import fold_follow_up
from codegrep_model._hermes import hermes_system, split_hermes
from codegrep_model.episode import RolloutConfig
from codegrep_model.errors import PolicyError, PolicySpecError
from codegrep_model.policies.protocol import PolicyReply, PolicyRequest
from codegrep_model.records import ChatMessage, Usage
from codegrep_model.tools import openai_tools

__all__ = [
    "EPISODE_FILE",
    "LocalPolicy",
    "ReplyTiming",
    "episode_for",
    "hermes_system",
    "parse_local_target",
    "read_episode",
    "render_chatml",
    "training_messages",
    "write_episode",
]

_IM_START, _IM_END = "<|im_start|>", "<|im_end|>"


def _call_blocks(message: ChatMessage) -> str:
    """An assistant message's calls as hermes blocks (ms-swift's `_format_tool_calls`): used
    for a reply this policy did not write itself."""
    blocks = []
    for c in message.tool_calls:
        try:
            args: object = parse_json(c.arguments) if c.arguments.strip() else {}
        except ValueError:
            args = c.arguments
        body = json.dumps({"name": c.name, "arguments": args}, ensure_ascii=False)
        blocks.append(f"<tool_call>\n{body}\n</tool_call>")
    text = (message.content or "").strip()
    return "\n".join([text, *blocks] if text else blocks)


def training_messages(
    messages: Sequence[ChatMessage], raw_replies: Sequence[str | None] = ()
) -> list[dict[str, str]]:
    """The episode's messages as the training conversation: system, user, then each reply (its
    raw text when `raw_replies` has it, by reply index) and one folded user turn after it."""
    out: list[dict[str, str]] = []
    follow: list[dict[str, str]] = []
    replies = 0

    def flush() -> None:
        folded = fold_follow_up(follow)
        follow.clear()
        if folded is not None:
            out.append(folded)

    for m in messages:
        if m.role == "assistant":
            flush()
            raw = raw_replies[replies] if replies < len(raw_replies) else None
            out.append(
                {"role": "assistant", "content": raw if raw is not None else _call_blocks(m)}
            )
            replies += 1
        elif replies == 0:
            out.append({"role": m.role, "content": m.content or ""})
        else:
            follow.append({"role": m.role, "content": m.content or ""})
    flush()
    return out


def render_chatml(messages: Sequence[Mapping[str, str]], tools: Sequence[Mapping[str, Any]]) -> str:
    """The generation prompt of ms-swift's `chatml` template with the hermes agent template:
    `<|im_start|>role\\ncontent<|im_end|>\\n` per message, then `<|im_start|>assistant\\n`."""
    parts = []
    for i, m in enumerate(messages):
        content = m["content"]
        if i == 0 and m["role"] == "system" and tools:
            content = hermes_system(content, tools)
        parts.append(f"{_IM_START}{m['role']}\n{content}{_IM_END}\n")
    return "".join(parts) + f"{_IM_START}assistant\n"


def parse_local_target(target: str) -> tuple[Path, Path | None]:
    """`DIR` or `BASE_DIR+ADAPTER_DIR` -> (model folder, adapter folder or None)."""
    base, plus, adapter = target.partition("+")
    if not base or (plus and not adapter):
        raise PolicySpecError(f"local:{target}: a local model is local:DIR or local:BASE+ADAPTER")
    return Path(base), (Path(adapter) if plus else None)


@dataclass(frozen=True)
class ReplyTiming:
    """One reply: its prompt and output tokens, and the seconds of the batch that made it."""

    prompt_tokens: int
    completion_tokens: int
    seconds: float
    batch: int


@dataclass
class _Pending:
    prompt: str
    future: asyncio.Future[tuple[str, int, int, float, int]]
    loop: asyncio.AbstractEventLoop = field(repr=False)


#: The episode shape a checkpoint was trained in, beside its weights (or its adapter's): the
#: rollout fields of its GRPO rows (`rollout_config`). A command that runs the policy uses it
#: instead of its own defaults, so the model meets the turns and the issue cut it learned.
EPISODE_FILE = "codegrep-episode.json"
_EPISODE_FIELDS = ("exploration_turns", "max_calls_per_turn", "max_issue_bytes")


def read_episode(*folders: Path | None) -> RolloutConfig | None:
    """The shape in the first of `folders` that has an `EPISODE_FILE`; None when none has.

    The file is untrusted (it comes with a checkpoint): read by codegrep-records' hardened
    reader, only the rollout fields taken, each checked by `RolloutConfig`; anything wrong is
    a `PolicyError` naming the file.
    """
    from codegrep_records import RecordFileError
    from codegrep_records.io import read_json_object
    from pydantic import ValidationError

    for folder in folders:
        if folder is None or not (folder / EPISODE_FILE).is_file():
            continue
        path = folder / EPISODE_FILE
        try:
            data = read_json_object(path, refuse_links=True, max_bytes=64 * 1024)
            unknown = sorted(set(data) - {*_EPISODE_FIELDS, "schema_version"})
            if unknown:
                raise PolicyError(f"{path}: unknown field(s) {', '.join(unknown)}")
            return RolloutConfig(**{k: data[k] for k in _EPISODE_FIELDS if k in data})
        except RecordFileError as exc:
            raise PolicyError(str(exc)) from None
        except ValidationError as exc:
            said = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
            raise PolicyError(f"{path}: {said}") from None
    return None


def episode_for(policy: object, default: RolloutConfig) -> RolloutConfig:
    """The episode shape to run `policy` in: the one its checkpoint was trained in (a policy's
    `episode` attribute, as `LocalPolicy` has), else `default`."""
    own = getattr(policy, "episode", None)
    return own if isinstance(own, RolloutConfig) else default


def write_episode(folder: Path, config: RolloutConfig) -> Path:
    """Write `config`'s rollout fields as `folder`'s `EPISODE_FILE` (what `read_episode` reads)."""
    from codegrep_records.io import dumps_json, write_atomically

    data = {"schema_version": 1, **{k: getattr(config, k) for k in _EPISODE_FIELDS}}
    path = folder / EPISODE_FILE
    write_atomically(path, dumps_json(data, indent=2) + "\n")
    return path


class LocalPolicy:
    """A local checkpoint as a policy (see the module docstring)."""

    def __init__(
        self,
        model_dir: str | Path,
        *,
        adapter: str | Path | None = None,
        max_new_tokens: int = 256,
        temperature: float = 0.0,
        max_batch: int = 8,
        seed: int = 0,
        threads: int | None = None,
        dtype: str = "float32",
    ) -> None:
        try:
            import torch  # type: ignore[import-not-found, unused-ignore]
            from transformers import (  # type: ignore[import-not-found, unused-ignore]
                AutoModelForCausalLM,
                AutoTokenizer,
            )
        except ImportError as exc:
            raise PolicyError(
                f"a local model needs torch and transformers ({exc.name} is missing): "
                "pip install 'codegrep-model[local]' after a torch build for this machine"
            ) from exc
        self.model_dir = Path(model_dir)
        self.adapter = Path(adapter) if adapter is not None else None
        for what, path in (("model", self.model_dir), ("adapter", self.adapter)):
            if path is not None and not path.is_dir():
                raise PolicyError(f"local {what} {path}: not a folder")
        #: the episode shape the checkpoint was trained in (its adapter's first), or None
        self.episode = read_episode(self.adapter, self.model_dir)
        if not (self.model_dir / "config.json").is_file():
            raise PolicyError(f"local model {self.model_dir}: no config.json (not a model folder)")
        if dtype not in ("float32", "bfloat16"):
            raise PolicyError(f"local model dtype {dtype!r}: float32 or bfloat16")
        if threads:
            torch.set_num_threads(threads)
        self._torch = torch
        self.tokenizer = AutoTokenizer.from_pretrained(str(self.model_dir))
        model = AutoModelForCausalLM.from_pretrained(
            str(self.model_dir), dtype=getattr(torch, dtype)
        )
        if self.adapter is not None:
            try:
                from peft import PeftModel  # type: ignore[import-not-found, unused-ignore]
            except ImportError as exc:
                raise PolicyError("a LoRA adapter needs peft (pip install peft)") from exc
            model = PeftModel.from_pretrained(model, str(self.adapter))
        model.eval()
        self.model = model
        end = self.tokenizer.convert_tokens_to_ids(_IM_END)
        if not isinstance(end, int) or end == self.tokenizer.unk_token_id:
            raise PolicyError(f"local model {self.model_dir}: its tokenizer has no {_IM_END}")
        self._stop = [end]
        if self.tokenizer.eos_token_id is not None and self.tokenizer.eos_token_id != end:
            self._stop.append(int(self.tokenizer.eos_token_id))
        self._pad = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else end
        # special tokens are dropped from a reply, as `skip_special_tokens` does, except the
        # agent tags: a tokenizer may mark `<tool_call>` special, and the call must reach the
        # parser
        keep = {"<tool_call>", "</tool_call>", "<think>", "</think>"}
        specials = zip(
            self.tokenizer.all_special_tokens, self.tokenizer.all_special_ids, strict=True
        )
        self._drop = {int(i) for t, i in specials if t not in keep}
        self.max_new_tokens = max_new_tokens
        self.temperature = temperature
        self.max_batch = max_batch
        self.seed = seed
        self.tools = openai_tools()
        self.timings: list[ReplyTiming] = []
        self._raw: dict[tuple[str, int, str, tuple[tuple[str, str], ...]], str] = {}
        self._pending: list[_Pending] = []
        self._lock = threading.Lock()
        self._worker: threading.Thread | None = None

    @property
    def name(self) -> str:
        suffix = f"+{self.adapter.name}" if self.adapter is not None else ""
        return f"local:{self.model_dir.name}{suffix}"

    @staticmethod
    def _key(
        iid: str, index: int, content: str | None, calls: Sequence[Any]
    ) -> tuple[str, int, str, tuple[tuple[str, str], ...]]:
        """What identifies one of this policy's replies in a later request: the instance, the
        reply's place, and what the episode kept of it (its text and parsed calls)."""
        return (iid, index, content or "", tuple((c.name, c.arguments) for c in calls))

    def prompt(self, request: PolicyRequest) -> str:
        """The text the model is given for `request` (the training rendering)."""
        iid = request.instance.instance_id
        assistants = [m for m in request.messages if m.role == "assistant"]
        raw = [
            self._raw.get(self._key(iid, i, m.content, m.tool_calls))
            for i, m in enumerate(assistants)
        ]
        return render_chatml(training_messages(request.messages, raw), self.tools)

    async def complete(self, prompt: str) -> tuple[str, Usage]:
        """The model's continuation of `prompt` (a rendered chat ending in the assistant's
        turn), batched with the other replies asked for at the same time."""
        loop = asyncio.get_running_loop()
        pending = _Pending(prompt, loop.create_future(), loop)
        with self._lock:
            self._pending.append(pending)
            if self._worker is None:
                self._worker = threading.Thread(target=self._drain, daemon=True)
                self._worker.start()
        text, n_prompt, n_out, seconds, batch = await pending.future
        self.timings.append(ReplyTiming(n_prompt, n_out, seconds, batch))
        return text, Usage(prompt_tokens=n_prompt, completion_tokens=n_out)

    async def reply(self, request: PolicyRequest) -> PolicyReply:
        iid = request.instance.instance_id
        index = sum(m.role == "assistant" for m in request.messages)
        text, usage = await self.complete(self.prompt(request))
        content, calls = split_hermes(text, id_prefix=f"call_{index}")
        content = content if calls else text
        self._raw[self._key(iid, index, content, calls)] = text
        return PolicyReply(content=content, tool_calls=calls, usage=usage)

    def _drain(self) -> None:
        """The generation thread: batches what is queued (after a short wait for the replies of
        other episodes of the same turn), until the queue is empty."""
        while True:
            time.sleep(0.05)
            with self._lock:
                chunk, self._pending = (
                    self._pending[: self.max_batch],
                    self._pending[self.max_batch :],
                )
                if not chunk:
                    self._worker = None
                    return
            try:
                results = self._generate([p.prompt for p in chunk])
            except Exception as exc:  # the replies fail, the thread goes on with the queue
                err = PolicyError(f"{self.name}: generation failed: {type(exc).__name__}: {exc}")
                for p in chunk:
                    p.loop.call_soon_threadsafe(_set_exception, p.future, err)
                continue
            for p, r in zip(chunk, results, strict=True):
                p.loop.call_soon_threadsafe(_set_result, p.future, r)

    def _generate(self, prompts: list[str]) -> list[tuple[str, int, int, float, int]]:
        torch = self._torch
        t0 = time.perf_counter()
        encoded = [self.tokenizer(p, add_special_tokens=False)["input_ids"] for p in prompts]
        width = max(len(e) for e in encoded)
        ids = torch.full((len(encoded), width), self._pad, dtype=torch.long)
        mask = torch.zeros((len(encoded), width), dtype=torch.long)
        for k, e in enumerate(encoded):  # left padding: every prompt ends where generation starts
            ids[k, width - len(e) :] = torch.tensor(e, dtype=torch.long)
            mask[k, width - len(e) :] = 1
        sample = self.temperature > 0
        if sample:
            torch.manual_seed(self.seed)
        with torch.no_grad():
            out = self.model.generate(
                input_ids=ids,
                attention_mask=mask,
                max_new_tokens=self.max_new_tokens,
                do_sample=sample,
                temperature=self.temperature if sample else None,
                top_p=None,
                top_k=None,
                eos_token_id=self._stop,
                pad_token_id=self._pad,
            )
        seconds = time.perf_counter() - t0
        results = []
        for k, e in enumerate(encoded):
            new = out[k, width:].tolist()
            end = next((i for i, t in enumerate(new) if t in self._stop), None)
            n_out = len(new) if end is None else end + 1
            kept = [t for t in new[: n_out if end is None else end] if t not in self._drop]
            text = self.tokenizer.decode(kept)
            results.append((text, len(e), n_out, seconds, len(encoded)))
        return results

    def summary(self) -> dict[str, float]:
        """Replies, tokens and seconds so far (a reply's seconds are its batch's)."""
        n = len(self.timings)
        return {
            "replies": n,
            "prompt_tokens": sum(t.prompt_tokens for t in self.timings),
            "completion_tokens": sum(t.completion_tokens for t in self.timings),
            "seconds_per_reply": (sum(t.seconds / t.batch for t in self.timings) / n) if n else 0.0,
        }


def _set_result(future: asyncio.Future[Any], value: Any) -> None:
    if not future.done():
        future.set_result(value)


def _set_exception(future: asyncio.Future[Any], exc: BaseException) -> None:
    if not future.done():
        future.set_exception(exc)
