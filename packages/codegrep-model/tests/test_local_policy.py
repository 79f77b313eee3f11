"""`LocalPolicy`'s rendering: the episode's messages become, character for character, the
conversation the ms-swift GRPO run trains on (`chatml` template, `hermes` agent template: the
tools in the system turn, each reply as the model wrote it, what followed it folded into one
user turn). The swift tier checks the same against ms-swift's own encoder, token for token
(tests/train/test_local_render.py); here no model and no torch are needed."""

from __future__ import annotations

import importlib.util
import json

import pytest
from codegrep_model.errors import PolicyError, PolicySpecError
from codegrep_model.local_policy import (
    LocalPolicy,
    hermes_system,
    parse_local_target,
    render_chatml,
    training_messages,
)
from codegrep_model.policy_spec import policy_from_spec
from codegrep_model.records import ChatMessage, ToolCall
from codegrep_model.tools import openai_tools

RAW = '<tool_call>\n{"name": "glob", "arguments": {"pattern": "**/cart.py"}}\n</tool_call>'
EPISODE = (
    ChatMessage(role="system", content="You are CodeGrep."),
    ChatMessage(role="user", content="Issue: the cart."),
    ChatMessage(
        role="assistant",
        content=None,
        tool_calls=(ToolCall(id="c0", name="glob", arguments='{"pattern": "**/cart.py"}'),),
    ),
    ChatMessage(role="tool", content="shop/cart.py", tool_call_id="c0"),
    ChatMessage(role="user", content="Answer now."),
)


def test_the_episode_becomes_the_training_conversation() -> None:
    out = training_messages(EPISODE, [RAW])
    assert out == [
        {"role": "system", "content": "You are CodeGrep."},
        {"role": "user", "content": "Issue: the cart."},
        {"role": "assistant", "content": RAW},
        {
            "role": "user",
            "content": "<tool_response>\nshop/cart.py\n</tool_response><|im_end|>\n"
            "<|im_start|>user\nAnswer now.",
        },
    ]
    # a reply this policy did not write is rendered as ms-swift writes tool calls
    assert training_messages(EPISODE)[2]["content"] == RAW


def test_the_prompt_is_chatml_with_the_tools_in_the_system_turn() -> None:
    tools = openai_tools()
    text = render_chatml(training_messages(EPISODE, [RAW]), tools)
    assert text.startswith("<|im_start|>system\nYou are CodeGrep.\n\n# Tools\n")
    assert text.count("<|im_start|>") == 6  # system, user, assistant, user, user, assistant
    assert text.endswith("<|im_end|>\n<|im_start|>assistant\n")
    lines = hermes_system("S", tools).split("<tools>\n")[1].split("\n</tools>")[0].splitlines()
    assert [json.loads(x) for x in lines] == tools


@pytest.mark.parametrize("target", ["", "m+", "+a"])
def test_a_bad_target_says_what_a_local_model_is(target: str) -> None:
    with pytest.raises(PolicySpecError, match="local:DIR or local:BASE"):
        parse_local_target(target)


@pytest.mark.skipif(
    importlib.util.find_spec("torch") is not None, reason="torch is installed: nothing missing"
)
def test_without_torch_the_policy_says_what_to_install() -> None:
    with pytest.raises(PolicyError, match=r"needs torch and transformers.*\[local\]"):
        LocalPolicy("models/smol")
    # built from a spec, as every command does, it is a spec that cannot be built here
    with pytest.raises(PolicySpecError, match=r"local:models/smol: a local model needs torch"):
        policy_from_spec("local:models/smol")
