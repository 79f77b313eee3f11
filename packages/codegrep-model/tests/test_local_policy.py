"""`LocalPolicy`'s rendering: the episode's messages become, character for character, the
conversation the ms-swift GRPO run trains on (`chatml` template, `hermes` agent template: the
tools in the system turn, each reply as the model wrote it, what followed it folded into one
user turn). The swift tier checks the same against ms-swift's own encoder, token for token
(tests/train/test_local_render.py); here no model and no torch are needed."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
from codegrep_model.errors import PolicyError, PolicySpecError
from codegrep_model.policies.local import (
    LocalPolicy,
    hermes_system,
    parse_local_target,
    render_chatml,
    training_messages,
)
from codegrep_model.policies.spec import policy_from_spec
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


def test_a_checkpoint_carries_the_episode_shape_it_was_trained_in(tmp_path: Path) -> None:
    from codegrep_model import RolloutConfig
    from codegrep_model.policies.local import (
        EPISODE_FILE,
        episode_for,
        read_episode,
        write_episode,
    )

    base, adapter = tmp_path / "base", tmp_path / "adapter"
    base.mkdir()
    adapter.mkdir()
    assert read_episode(adapter, base) is None
    trained = RolloutConfig(exploration_turns=1, max_calls_per_turn=4, max_issue_bytes=1500)
    write_episode(base, trained)
    got = read_episode(adapter, base)
    assert got is not None
    assert (got.exploration_turns, got.max_calls_per_turn, got.max_issue_bytes) == (1, 4, 1500)
    write_episode(adapter, RolloutConfig(exploration_turns=2))
    first = read_episode(adapter, base)
    assert first is not None
    assert first.exploration_turns == 2  # the adapter's shape before the base's

    class WithShape:
        episode = trained

    default = RolloutConfig()
    assert episode_for(WithShape(), default) is trained
    assert episode_for(object(), default) is default
    # the file comes with a checkpoint: hostile or wrong contents are one clear error
    for text, said in (
        ('{"exploration_turns": -1}', "exploration_turns"),
        ('{"exploration_turns": 1, "run": "rm -rf /"}', "unknown field"),
        ('{"max_issue_bytes": ' + "9" * 5000 + "}", "number too long"),
        ("[" * 1000, "nested too deeply"),
        ("[" * 100_000, "larger than"),
        ("\xff", "UTF-8"),
    ):
        (adapter / EPISODE_FILE).write_text(text, encoding="latin-1")
        with pytest.raises(PolicyError, match=said):
            read_episode(adapter)
    (adapter / EPISODE_FILE).unlink()
    (adapter / EPISODE_FILE).symlink_to(base / EPISODE_FILE)
    with pytest.raises(PolicyError, match="link"):
        read_episode(adapter)
