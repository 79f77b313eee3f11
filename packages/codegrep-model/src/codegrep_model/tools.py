"""The tools as the model sees them: OpenAI function tools generated from the sandbox's args models.

The schemas are not written by hand: the field descriptions of `worktree_sandbox.GrepArgs` and
friends are the documentation the model reads, so one change there changes both the validation and
the prompt.
"""

from __future__ import annotations

import copy
import functools
from typing import Any

from worktree_sandbox import TOOL_ARGS

__all__ = ["openai_tools", "tool_names"]


def _inline(schema: dict[str, Any]) -> dict[str, Any]:
    """Strip pydantic's titles and simplify `anyOf [T, null]` (hermes templates render the schema
    verbatim into the prompt, so every token spent on noise is paid on every turn)."""
    props: dict[str, Any] = {}
    for name, prop in schema.get("properties", {}).items():
        p = {k: v for k, v in prop.items() if k != "title"}
        any_of = p.pop("anyOf", None)
        if any_of is not None:
            kinds = [a for a in any_of if a.get("type") != "null"]
            if len(kinds) == 1:
                p.update({k: v for k, v in kinds[0].items() if k != "title"})
        if p.get("default", 0) is None:
            del p["default"]
        props[name] = p
    out: dict[str, Any] = {"type": "object", "properties": props}
    if schema.get("required"):
        out["required"] = list(schema["required"])
    out["additionalProperties"] = False
    return out


def openai_tools() -> list[dict[str, Any]]:
    """The `tools` list of an OpenAI chat-completions request, one function per sandbox tool
    (a fresh copy each call; the schemas are generated once per set of tool models)."""
    return copy.deepcopy(_openai_tools(tuple(TOOL_ARGS.items())))


@functools.lru_cache(maxsize=8)
def _openai_tools(models: tuple[tuple[str, Any], ...]) -> list[dict[str, Any]]:
    tools: list[dict[str, Any]] = []
    for name, model in models:
        schema = model.model_json_schema()
        tools.append(
            {
                "type": "function",
                "function": {
                    "name": name,
                    "description": (model.__doc__ or name).strip(),
                    "parameters": _inline(schema),
                },
            }
        )
    return tools


def tool_names() -> tuple[str, ...]:
    return tuple(TOOL_ARGS)
