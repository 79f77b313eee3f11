"""The chat format the trainer and the SFT rows share: what follows an assistant reply (tool
results, the episode's next prompt) folded into one user turn (`fold_follow_up`), and a rollout's
messages in ms-swift's agent format (`agent_messages`). The GRPO scheduler
(`codegrep_model.train`) imports it, so SFT and GRPO show the model one format.
Not for: choosing which rollouts become rows (`_sft_rows`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from codegrep_records.io import parse_json

from codegrep_model._dataset_rows import _Row
from codegrep_model.records import ChatMessage

__all__ = [
    "CHATML_TURN_BREAK",
    "SftMessage",
    "UserAfterTools",
    "agent_messages",
    "fold_follow_up",
]

#: Between two user turns of a ChatML template (Qwen): what `fold_follow_up` puts between the
#: tool results and each prompt that follows them.
CHATML_TURN_BREAK = "<|im_end|>\n<|im_start|>user\n"

UserAfterTools = Literal["chat", "keep"]


class SftMessage(_Row):
    role: Literal["system", "user", "assistant", "tool_call", "tool_response"]
    content: str
    loss: bool | None = None
    loss_scale: float | None = None


def fold_follow_up(
    messages: Sequence[Mapping[str, Any]], *, turn_break: str = CHATML_TURN_BREAK
) -> dict[str, str] | None:
    """What follows one assistant reply (tool results, then the episode's prompts), as the one
    user message ms-swift's encoder accepts there.

    ms-swift 4.6 encodes a conversation as (query, reply) pairs, and a `tool` turn followed by a
    `user` turn has no pair (`AssertionError: response_role: "user"`). So the tool results are
    written as the hermes `<tool_response>` blocks the Qwen chat template writes, and each prompt
    after them opens a new user turn with `turn_break` (the template's end-of-turn and
    user-turn opening, `CHATML_TURN_BREAK` for Qwen): the tokens are those the model's own chat
    template makes of the episode's messages at inference. None when there is nothing to fold.

    The GRPO scheduler appends this after every reply, and `agent_messages` writes SFT rows
    with it. Raises ValueError unless the messages are tool results, then user prompts.
    """
    roles = [m.get("role") for m in messages]
    n_tools = roles.count("tool")
    if roles != ["tool"] * n_tools + ["user"] * (len(roles) - n_tools):
        raise ValueError(f"tool results, then user prompts, follow a reply; got {roles}")
    tools = [str(m.get("content") or "") for m in messages[:n_tools]]
    prompts = [str(m.get("content") or "") for m in messages[n_tools:]]
    segments = []
    if tools:
        segments.append("\n".join(f"<tool_response>\n{t}\n</tool_response>" for t in tools))
    segments.extend(prompts)
    if not segments:
        return None
    return {"role": "user", "content": turn_break.join(segments)}


def agent_messages(
    messages: Sequence[ChatMessage],
    *,
    user_after_tools: UserAfterTools = "chat",
    loss_scale: float | None = None,
    turn_break: str = CHATML_TURN_BREAK,
) -> tuple[SftMessage, ...]:
    """A rollout's conversation in ms-swift's agent format (docs: Instruction/Agent-support).

    - the system and user messages before the first assistant reply stay as they are;
    - an assistant message with tool calls becomes its text (an `assistant` message, only when
      it has non-blank text) followed by one `tool_call` message per call, in order, whose
      content is the JSON string `{"name": ..., "arguments": {...}}` (arguments as an object);
      parallel calls are consecutive `tool_call` messages, which the agent template joins into
      one assistant turn (hermes: one `<tool_call>` block per call);
    - an assistant message without calls becomes an `assistant` message; when it is not the
      last one (a reply without calls that did not answer, a failed answer before a rescue)
      it gets `"loss": false`, so only replies that led somewhere are taught;
    - what follows a reply (its tool results, in call order, then the episode's prompts: the
      turn reminder, the answer demand) depends on `user_after_tools`.

    `user_after_tools="chat"` (the default): everything between two replies (and after the
    last one) is ONE `user` message, `fold_follow_up(...)` of those messages with
    `turn_break`: the results as hermes `<tool_response>` blocks, each prompt after them as a
    new user turn. That is what the GRPO scheduler appends after a reply, and the tokens the
    Qwen chat template makes of the episode's messages at inference; ms-swift's own template
    backend pairs it with the next reply (it fails on a `user` message after `tool_response`
    ones). No `tool_response` message is written. Raises ValueError when what follows a reply
    is not tool results then user prompts, or a tool result comes before any reply.

    `"keep"`: each tool result is a `tool_response` message with the result text unchanged, in
    call order (ms-swift pairs them by position, not by id; consecutive ones are one turn), and
    user messages stay as they are: for `--template_backend jinja` or another trainer.

    `loss_scale`: written on every trained assistant text and on the first `tool_call` of each
    turn (ms-swift >= 4.2 reads it per message; values other than 0 and 1 need
    `--is_binary_loss_scale false`).
    """
    if user_after_tools not in ("chat", "keep"):
        raise ValueError(f"user_after_tools must be chat or keep, not {user_after_tools!r}")
    chat = user_after_tools == "chat"
    assistants = [i for i, m in enumerate(messages) if m.role == "assistant"]
    first = assistants[0] if assistants else len(messages)
    last = assistants[-1] if assistants else -1
    out: list[SftMessage] = []
    follow: list[dict[str, str]] = []  # chat mode: what followed the last reply, not yet written

    def write_follow_up() -> None:
        folded = fold_follow_up(follow, turn_break=turn_break)
        follow.clear()
        if folded is not None:
            out.append(SftMessage(role="user", content=folded["content"]))

    for i, m in enumerate(messages):
        text = m.content or ""
        if m.role != "assistant" and chat and i > first:
            follow.append({"role": m.role, "content": text})
            continue
        if m.role == "assistant":
            write_follow_up()
        if m.role == "system":
            out.append(SftMessage(role="system", content=text))
        elif m.role == "user":
            out.append(SftMessage(role="user", content=text))
        elif m.role == "tool":
            if chat:
                raise ValueError(f"message {i + 1}: a tool result before any assistant reply")
            out.append(SftMessage(role="tool_response", content=text))
        elif m.tool_calls:
            if text.strip():
                out.append(SftMessage(role="assistant", content=text, loss_scale=loss_scale))
            for j, c in enumerate(m.tool_calls):
                args = parse_json(c.arguments) if c.arguments.strip() else {}
                body = json.dumps({"name": c.name, "arguments": args}, ensure_ascii=False)
                scale = loss_scale if j == 0 else None
                out.append(SftMessage(role="tool_call", content=body, loss_scale=scale))
        elif i == last:
            out.append(SftMessage(role="assistant", content=text, loss_scale=loss_scale))
        else:
            out.append(SftMessage(role="assistant", content=text, loss=False))
    write_follow_up()
    return tuple(out)
