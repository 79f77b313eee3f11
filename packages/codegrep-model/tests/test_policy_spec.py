"""A policy is picked by one string (`policy_from_spec`); its name is known before it is built."""

from __future__ import annotations

import pytest
from codegrep_model import PolicySpec, PolicySpecError, parse_policy_spec, policy_from_spec
from codegrep_model.policies import POLICY_KINDS, served_spec
from codegrep_model.policies.lexical import LexicalPolicy
from codegrep_model.policies.served import OpenAIPolicy


@pytest.mark.parametrize(
    ("text", "spec"),
    [
        ("lexical", PolicySpec("lexical")),
        ("lexical-heuristic", PolicySpec("lexical-heuristic")),
        (
            "openai:codegrep@http://127.0.0.1:8000/v1",
            PolicySpec("openai", model="codegrep", base_url="http://127.0.0.1:8000/v1"),
        ),
        (
            "openai:org/m@v2@https://h.example/v1",
            PolicySpec("openai", model="org/m@v2", base_url="https://h.example/v1"),
        ),
        ("local:models/smol", PolicySpec("local", model="models/smol")),
        (
            "local:models/smol+runs/sft/checkpoint-50",
            PolicySpec("local", model="models/smol+runs/sft/checkpoint-50"),
        ),
    ],
)
def test_a_spec_reads_back_as_written(text: str, spec: PolicySpec) -> None:
    assert parse_policy_spec(text) == spec
    assert str(spec) == text


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("bm25", "not one of lexical, lexical-heuristic, openai:MODEL@URL, local:DIR"),
        ("bm25", "module:Class"),
        ("import", "module:Class"),
        ("local", "local:DIR or local:BASE"),
        ("local:", "local:DIR or local:BASE"),
        ("local:m+", "local:DIR or local:BASE"),
        ("local:+a", "local:DIR or local:BASE"),
        ("lexical:x", "takes no model"),
        ("openai", "openai:MODEL@URL"),
        ("openai:model", "openai:MODEL@URL"),
        ("openai:m@ftp://h/v1", "openai:MODEL@URL"),
        ("openai:m@http://", "names no host"),
    ],
)
def test_a_bad_spec_says_what_is_wrong(text: str, says: str) -> None:
    with pytest.raises(PolicySpecError, match=says):
        parse_policy_spec(text)


async def test_the_name_is_the_built_policys() -> None:
    for text in ("lexical", "lexical-heuristic", "openai:codegrep@http://127.0.0.1:9/v1"):
        spec = parse_policy_spec(text)
        policy = policy_from_spec(text, timeout_s=3.0)
        assert policy.name == spec.name
        assert spec.served == isinstance(policy, OpenAIPolicy)
        if isinstance(policy, OpenAIPolicy):
            await policy.aclose()
    heuristic = policy_from_spec("lexical-heuristic")
    assert isinstance(heuristic, LexicalPolicy)
    assert heuristic.ranker is None
    assert served_spec("http://h/v1", "m") == parse_policy_spec("openai:m@http://h/v1")


def test_a_ranker_is_only_lexicals() -> None:
    ranker = LexicalPolicy().ranker
    assert ranker is not None
    assert policy_from_spec("lexical", ranker=ranker).name == "lexical"
    with pytest.raises(PolicySpecError, match="ranker"):
        policy_from_spec("openai:m@http://h/v1", ranker=ranker)


def test_every_kind_names_its_package() -> None:
    packages = {k: v.package for k, v in POLICY_KINDS.items()}
    assert packages.pop("import") == ""  # an imported policy's distribution is not known
    assert set(packages.values()) == {"codegrep-model"}
    assert {"lexical", "lexical-heuristic", "openai", "local"} <= set(packages)


def test_a_local_spec_is_named_before_it_is_built() -> None:
    assert parse_policy_spec("local:models/smol").name == "local:smol"
    spec = parse_policy_spec("local:models/smol+runs/grpo/checkpoint-6")
    assert spec.name == "local:smol+checkpoint-6"
    assert not spec.served
