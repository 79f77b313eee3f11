"""The rollout token budget (`codegrep_model.budget`, `RolloutConfig.budget`) on hand-made
rollouts: an episode fed replies and tool results by hand (no tree), counted with the character
estimate and with a real byte-level BPE tokenizer trained here (no hub; that case runs where the
`tokenizers` library is installed: ci/swift-tier.sh runs this file; skipped elsewhere).

- tool results that would pass `max_length` are cut with a marker and the rollout stays within
  it, counted by the same counter, re-counted from the conversation here;
- when not even cut results fit, the rollout ends before `max_length` with overflow `max_length`,
  and the rollout log's stop cause is `overflow`;
- the completion budget is summed over rounds: replies each within the per-round cap end the
  rollout once their sum passes it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from codegrep_model import (
    ChatMessage,
    Episode,
    Instance,
    PolicyReply,
    RolloutConfig,
    ToolCall,
    Usage,
)
from codegrep_model.budget import (
    CharEstimate,
    TokenBudget,
    TokenCounter,
    TokenizerCounter,
    cut_marker,
    fit_texts,
    message_text,
    tools_block_tokens,
)
from codegrep_model.episode import AskPolicy, RunCalls
from codegrep_model.policies.local import hermes_system
from codegrep_model.policies.scripted import call
from codegrep_model.tools import openai_tools
from codegrep_model.train import RolloutLogEntry, advantage_scale, overflow_rate, read_rollout_log
from worktree_sandbox import ReadResult

ISSUE = Instance(
    instance_id="shop-1",
    repo="acme/shop",
    base_commit="0" * 40,
    problem_statement="Cart.add_item raises ValueError for zero quantities; ignore them.",
)
FILES = ("shop/cart.py", "shop/pricing.py", "shop/big.py", "README.md")
ANSWER = '{"files": ["shop/cart.py"]}'


def big_file(lines: int, tag: str = "x") -> str:
    return "".join(
        f"def {tag}_{i}(value):\n    return value * {i}  # {tag}\n" for i in range(lines)
    )


def reads(*paths: str, turn: int = 1) -> PolicyReply:
    return PolicyReply(
        content=None,
        tool_calls=tuple(call("read", {"path": p}, id=f"t{turn}_{i}") for i, p in enumerate(paths)),
    )


def result(path: str, text: str) -> ReadResult:
    return ReadResult(path=path, text=text, content=text, total_lines=text.count("\n"))


def start(budget: TokenBudget | None, counter: TokenCounter | None) -> Episode:
    config = RolloutConfig(strict=True, rescue_attempts=0, budget=budget)
    return Episode.start(ISSUE, FILES, policy="hand", config=config, counter=counter)


def counted_text(message: ChatMessage, first: bool) -> str:
    """A message as a trainer's template shows it: the system message with the tool schemas
    (ms-swift's hermes agent template, as `hermes_system` writes it), the others as they are."""
    text = message_text(message)
    return hermes_system(text, openai_tools()) if first and message.role == "system" else text


def prompt_tokens(counter: TokenCounter, overhead: int = 8) -> int:
    """The tokens of the system and user prompts, the tool schemas included."""
    probe = start(TokenBudget(max_length=None, max_completion_tokens=None), counter)
    return sum(
        counter.count(counted_text(m, i == 0)) + overhead for i, m in enumerate(probe.messages)
    )


def feed_results(episode: Episode, texts: dict[str, str]) -> None:
    action = episode.next_action()
    assert isinstance(action, RunCalls)
    episode.on_results(
        [result(c.arguments["path"], texts[c.arguments["path"]]) for c in action.calls]
    )


def answer(episode: Episode, usage: Usage | None = None) -> None:
    assert isinstance(episode.next_action(), AskPolicy)
    episode.on_reply(PolicyReply(content=ANSWER, usage=usage or Usage()))


def prose(tokens: int, counter: TokenCounter) -> str:
    """Reply text of at least `tokens` tokens under `counter`."""
    text = "I will look at the cart module next."
    while counter.count(text) < tokens:
        text += " I will look at the cart module next."
    return text


def say(text: str, *calls: ToolCall) -> PolicyReply:
    return PolicyReply(content=text, tool_calls=calls)


SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<tool_call>", "</tool_call>"]


def _trained_tokenizer() -> Any:
    """A byte-level BPE trained here on code-like text (every byte is in its alphabet)."""
    tokenizers = pytest.importorskip("tokenizers")
    tok = tokenizers.Tokenizer(tokenizers.models.BPE(unk_token=None))
    tok.pre_tokenizer = tokenizers.pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = tokenizers.decoders.ByteLevel()
    trainer = tokenizers.trainers.BpeTrainer(
        vocab_size=600,
        special_tokens=SPECIALS,
        initial_alphabet=tokenizers.pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator([big_file(40), ANSWER, "read grep glob shop cart files"] * 5, trainer)
    return tok


@pytest.fixture(
    params=[
        pytest.param("chars", id="char-estimate"),
        pytest.param("tokenizer", id="tokenizer", marks=pytest.mark.train),
    ]
)
def counter(request: pytest.FixtureRequest) -> TokenCounter:
    if request.param == "chars":
        return CharEstimate()
    return TokenizerCounter(_trained_tokenizer())


def recount(episode: Episode, counter: TokenCounter, overhead: int = 8) -> int:
    """The conversation's tokens, counted here from its messages and the tool schemas."""
    return sum(
        counter.count(counted_text(m, i == 0)) + overhead for i, m in enumerate(episode.messages)
    )


def test_the_tool_schemas_count_in_the_rollout(counter: TokenCounter) -> None:
    """A trainer's rows carry a `tools` column, so the template writes the schemas into the
    system message of every encoding (some 2,100 characters for grep/glob/read): the budget
    counts them, or a rollout's last reply loses that much of its room."""
    episode = start(TokenBudget(), counter)
    system = episode.messages[0].content or ""
    block = counter.count(hermes_system(system, openai_tools())) - counter.count(system)
    assert len(hermes_system(system, openai_tools())) - len(system) > 2000
    assert block > 0
    messages_only = sum(counter.count(message_text(m)) + 8 for m in episode.messages)
    assert episode.rollout_tokens == messages_only + block == recount(episode, counter)
    # a template of the trainer's own counts instead (the ms-swift plugin passes its template)
    assert tools_block_tokens(system, openai_tools(), counter, lambda s, t: s + " x" * 10) > 0
    fixed = Episode.start(
        ISSUE, FILES, policy="hand", config=episode.config, counter=counter, tools_tokens=7
    )
    assert fixed.rollout_tokens == messages_only + 7
    assert tools_block_tokens(system, [], counter) == 0


def test_fit_texts_keeps_what_fits_and_marks_what_it_cuts(counter: TokenCounter) -> None:
    small, large = "def f():\n    return 1\n", big_file(400)
    assert fit_texts([small, large], 10**9, counter) == [small, large]
    room = counter.count(small) + counter.count(large) // 4
    fitted = fit_texts([small, large], room, counter)
    assert fitted is not None
    assert fitted[0] == small  # within its share: whole
    assert fitted[1].endswith("Narrow the call (a path, a glob, a line range) to see the rest.]")
    assert large.startswith(fitted[1].split("\n[output cut:")[0])
    assert sum(counter.count(t) for t in fitted) <= room
    marker = counter.count(cut_marker(0, 10**6))
    assert fit_texts([large, large], 2 * marker - 1, counter) is None


def test_tool_results_past_max_length_are_cut_and_the_rollout_stays_within(
    counter: TokenCounter,
) -> None:
    texts = {p: big_file(300, tag=p.split("/")[-1][:-3]) for p in ("shop/cart.py", "shop/big.py")}
    whole = sum(counter.count(t) for t in texts.values())
    max_length = prompt_tokens(counter) + whole // 2 + 2048 + 400
    budget = TokenBudget(max_length=max_length, max_completion_tokens=2048, max_turn_tokens=2048)
    episode = start(budget, counter)
    episode.on_reply(reads(*texts))
    feed_results(episode, texts)
    tool_messages = [m for m in episode.messages if m.role == "tool"]
    assert len(tool_messages) == 2
    assert all("[output cut:" in (m.content or "") for m in tool_messages)
    assert all(c.truncated for c in episode.turns[0].calls)
    # the conversation and the next reply's room are within max_length, by an independent count
    assert recount(episode, counter) + 2048 - episode.completion_tokens <= max_length
    assert episode.rollout_tokens == recount(episode, counter)
    infos = episode.rollout_infos()
    assert infos["tool_results_cut"] == 2
    assert infos["overflow"] is None
    assert infos["rollout_tokens"] == recount(episode, counter)
    # the model still gets its turns: it reads more (cut further) and then answers
    episode.on_reply(reads("shop/cart.py", turn=2))
    feed_results(episode, texts)
    assert recount(episode, counter) <= max_length
    episode.on_reply(say("done exploring"))
    answer(episode)
    assert episode.status == "answered"
    assert episode.overflow is None
    assert recount(episode, counter) <= max_length
    record = episode.record()
    assert record.tool_results_cut == 3
    assert record.rollout_tokens == recount(episode, counter)


def test_a_rollout_that_cannot_fit_ends_with_overflow_before_max_length(
    counter: TokenCounter, tmp_path: Path
) -> None:
    texts = {"shop/big.py": big_file(500)}
    reply_reserve = 512
    # room for the prompt, the reply and the next reply, not for a marker
    max_length = prompt_tokens(counter) + 60 + reply_reserve
    budget = TokenBudget(max_length=max_length, max_completion_tokens=None, max_turn_tokens=512)
    episode = start(budget, counter)
    episode.on_reply(reads("shop/big.py"))
    assert isinstance(episode.next_action(), RunCalls)
    feed_results(episode, texts)
    assert episode.done
    assert episode.status == "unanswered"
    assert episode.overflow == "max_length"
    assert recount(episode, counter) <= max_length  # no result went in
    assert not [m for m in episode.messages if m.role == "tool"]
    infos = episode.rollout_infos()
    assert infos["overflow"] == "max_length"
    assert infos["answer_files"] is None
    assert "overflowed" in infos["answer_error"]
    assert episode.record().overflow == "max_length"
    # the log line's stop cause, and the rate the monitor reads
    infos["episode_status"] = episode.status
    answered = {"num_turns": 2, "tool_calls_per_turn": [1, 0], "episode_status": "answered"}
    entries = [
        RolloutLogEntry.of(
            step=1,
            index=i,
            info=info,
            scale=advantage_scale(info),
            reward=0.0,
            rewards={},
            advantage_group=0.0,
        )
        for i, info in enumerate([infos, answered, answered, answered])
    ]
    log = tmp_path / "codegrep_rollouts.jsonl"
    log.write_text("".join(e.to_json_line() for e in entries), encoding="utf-8")
    back = read_rollout_log(log)
    assert [e.stop_cause for e in back] == ["overflow", "answered", "answered", "answered"]
    assert back[0].overflow == "max_length"
    assert back[1].overflow is None
    assert overflow_rate(back) == 0.25


def test_the_completion_budget_is_summed_over_rounds(counter: TokenCounter) -> None:
    per_reply = 300
    budget = TokenBudget(max_length=None, max_completion_tokens=800, max_turn_tokens=512)
    episode = start(budget, counter)
    text = prose(per_reply, counter)
    texts = {"shop/cart.py": "class Cart:\n    pass\n"}
    for turn in (1, 2):  # each reply within the per-round cap, 2 of them within the budget
        episode.on_reply(say(text, call("read", {"path": "shop/cart.py"}, id=f"r{turn}")))
        feed_results(episode, texts)
        assert not episode.done
    spent = episode.completion_tokens
    assert per_reply * 2 <= spent <= 800
    episode.on_reply(say(text, call("read", {"path": "shop/cart.py"}, id="r3")))
    assert episode.done
    assert episode.overflow == "completion_budget"
    assert episode.status == "unanswered"
    assert episode.completion_tokens > 800
    assert [c.status for c in episode.turns[-1].calls] == ["refused"]  # its call did not run
    infos = episode.rollout_infos()
    assert infos["overflow"] == "completion_budget"
    assert infos["completion_tokens"] == episode.completion_tokens
    assert infos["tool_calls_per_turn"] == [1, 1, 0]


def test_the_servers_token_count_wins_over_the_counter() -> None:
    budget = TokenBudget(max_length=None, max_completion_tokens=2048, max_turn_tokens=2048)
    episode = start(budget, CharEstimate())
    episode.on_reply(PolicyReply(content="short", usage=Usage(completion_tokens=1500)))
    assert episode.completion_tokens == 1500
    assert not episode.done
    episode.on_reply(PolicyReply(content="short", usage=Usage(completion_tokens=600)))
    assert episode.overflow == "completion_budget"


def test_the_answer_turn_keeps_room_for_its_reply() -> None:
    """After the last exploration turn the results leave room for the whole answer reply."""
    counter = CharEstimate()
    texts = {"shop/big.py": big_file(2000)}
    max_length = prompt_tokens(counter) + 6000
    budget = TokenBudget(max_length=max_length, max_completion_tokens=None, max_turn_tokens=1000)
    config = RolloutConfig(strict=True, rescue_attempts=0, exploration_turns=1, budget=budget)
    episode = Episode.start(ISSUE, FILES, policy="hand", config=config, counter=counter)
    episode.on_reply(reads("shop/big.py"))
    feed_results(episode, texts)
    assert recount(episode, counter) + 1000 <= max_length
    answer(episode)
    assert episode.status == "answered"


def test_without_a_budget_nothing_is_cut_or_counted() -> None:
    episode = start(None, None)
    texts = {"shop/big.py": big_file(3000)}
    episode.on_reply(reads("shop/big.py"))
    feed_results(episode, texts)
    assert [m.content for m in episode.messages if m.role == "tool"] == [texts["shop/big.py"]]
    assert "overflow" not in episode.rollout_infos()


def test_a_counter_needs_an_encode_method() -> None:
    with pytest.raises(TypeError, match="no encode method"):
        TokenizerCounter(object())
    with pytest.raises(ValueError, match="positive"):
        CharEstimate(0)
