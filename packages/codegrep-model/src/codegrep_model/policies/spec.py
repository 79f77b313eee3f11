"""Which policy a command runs, said in one string: `policy_from_spec("lexical")`,
`"lexical-heuristic"`, `"openai:MODEL@URL"`, `"local:DIR"` (a checkpoint run here,
`local:BASE+ADAPTER` for a LoRA adapter), `"shortlist:DIR"` (LexicalPolicy explores and the
checkpoint answers from its shortlist), or an import path `"module:Class"`
(`codegrep_model.policies.imported`).

Every CLI that lets a user pick a policy (codegrep-model `batch`, swe-eval `predict`, the
injector's `localize`, `serve` and the gate's calibration lookup) turns its flags into a spec
and builds the policy here, so a new policy is one entry in `POLICY_KINDS`. A spec's `name` is
the built policy's `Policy.name`, known before anything is built (the gate checks a calibration
against it before the search). Not for: the policies themselves (`lexical/`, `served.py`),
or checking that an endpoint answers (the CLIs do, with their own flags).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from codegrep_model.errors import PolicySpecError
from codegrep_model.policies.imported import (
    IMPORT_KIND,
    build_imported,
    imported_name,
    is_import_path,
)

if TYPE_CHECKING:
    from codegrep_model.policies.lexical.policy import LexicalPolicy
    from codegrep_model.policies.lexical.ranker import Ranker
    from codegrep_model.policies.protocol import Policy

__all__ = [
    "POLICY_KINDS",
    "PolicyKind",
    "PolicySpec",
    "parse_policy_spec",
    "policy_from_spec",
    "served_spec",
]

# MODEL@URL: the model is everything before the first "@http(s)://" (a model name may hold '@').
_SERVED = re.compile(r"(?P<model>.+?)@(?P<url>https?://.*)", re.DOTALL)


@dataclass(frozen=True)
class PolicySpec:
    """A parsed spec: the kind, and for a served model its model name and endpoint."""

    kind: str
    model: str | None = None
    base_url: str | None = None

    @property
    def name(self) -> str:
        """The `Policy.name` the built policy has (`lexical`, `openai:MODEL`)."""
        return POLICY_KINDS[self.kind].name(self)

    @property
    def served(self) -> bool:
        """Whether the policy calls a served model (needs an endpoint, a key, a timeout)."""
        return POLICY_KINDS[self.kind].served

    def __str__(self) -> str:
        if self.kind == IMPORT_KIND and self.model is not None:
            return self.model  # module:Class, as it was given
        if self.base_url is None:
            return self.kind if self.model is None else f"{self.kind}:{self.model}"
        return f"{self.kind}:{self.model}@{self.base_url}"


@dataclass(frozen=True)
class PolicyKind:
    """One entry of `POLICY_KINDS`: how a spec of this kind is named and built."""

    #: The spec's `name` (equal to the built `Policy.name`).
    name: Callable[[PolicySpec], str]
    #: Build the policy: (spec, api_key, timeout_s, ranker) -> Policy.
    build: Callable[[PolicySpec, str | None, float, Ranker | None], Policy]
    #: Whether the spec is `KIND:MODEL@URL` (a served model) rather than the bare kind.
    served: bool = False
    #: Whether the spec is `KIND:TARGET` (a local checkpoint: `local:DIR`), kept in `model`.
    takes_target: bool = False
    #: The distribution whose code the policy is (a calibration is checked on its version);
    #: "" for an imported policy, whose distribution is not known.
    package: str = "codegrep-model"


def _lexical(
    spec: PolicySpec, api_key: str | None, timeout_s: float, ranker: Ranker | None
) -> LexicalPolicy:
    from codegrep_model.policies.lexical.policy import LexicalPolicy

    return LexicalPolicy(ranker=ranker, heuristic=spec.kind == "lexical-heuristic")


def _openai(
    spec: PolicySpec, api_key: str | None, timeout_s: float, ranker: Ranker | None
) -> Policy:
    from codegrep_model.policies.served import OpenAIPolicy

    if ranker is not None:
        raise PolicySpecError(f"{spec}: a ranker is LexicalPolicy's; a served model has none")
    if spec.base_url is None or spec.model is None:
        raise PolicySpecError(f"{spec}: a served model needs a model and an endpoint")
    return OpenAIPolicy(spec.base_url, spec.model, api_key=api_key, timeout_s=timeout_s)


def _local_name(spec: PolicySpec) -> str:
    from pathlib import PurePath

    base, _, adapter = (spec.model or "").partition("+")
    return f"local:{PurePath(base).name}" + (f"+{PurePath(adapter).name}" if adapter else "")


def _local(
    spec: PolicySpec, api_key: str | None, timeout_s: float, ranker: Ranker | None
) -> Policy:
    from codegrep_model.policies.local import LocalPolicy, parse_local_target

    if ranker is not None:
        raise PolicySpecError(f"{spec}: a ranker is LexicalPolicy's; a local model has none")
    from codegrep_model.errors import PolicyError

    base, adapter = parse_local_target(spec.model or "")
    try:
        return LocalPolicy(base, adapter=adapter)
    except PolicyError as exc:  # no torch, no such folder: the spec cannot be built here
        raise PolicySpecError(f"{spec}: {exc}") from exc


def _shortlist_name(spec: PolicySpec) -> str:
    return "shortlist:" + _local_name(spec).removeprefix("local:")


def _shortlist(
    spec: PolicySpec, api_key: str | None, timeout_s: float, ranker: Ranker | None
) -> Policy:
    from codegrep_model.errors import PolicyError
    from codegrep_model.policies.lexical.policy import LexicalPolicy
    from codegrep_model.policies.local import LocalPolicy, parse_local_target
    from codegrep_model.policies.shortlist import ShortlistPolicy

    base, adapter = parse_local_target(spec.model or "")
    try:
        # greedy, and short: an answer is a JSON object of a few paths
        answerer = LocalPolicy(base, adapter=adapter, max_new_tokens=64)
    except PolicyError as exc:
        raise PolicySpecError(f"{spec}: {exc}") from exc
    return ShortlistPolicy(answerer, LexicalPolicy(ranker=ranker))


POLICY_KINDS: dict[str, PolicyKind] = {
    "lexical": PolicyKind(name=lambda s: "lexical", build=_lexical),
    "lexical-heuristic": PolicyKind(name=lambda s: "lexical-heuristic", build=_lexical),
    "openai": PolicyKind(name=lambda s: f"openai:{s.model}", build=_openai, served=True),
    "local": PolicyKind(name=_local_name, build=_local, takes_target=True),
    # LexicalPolicy explores, a local model answers from its shortlist (policies.shortlist)
    "shortlist": PolicyKind(name=_shortlist_name, build=_shortlist, takes_target=True),
    # `module:Class`: a policy from anywhere, by its import path (codegrep_model.policies.imported)
    IMPORT_KIND: PolicyKind(name=imported_name, build=build_imported, package=""),
}


def parse_policy_spec(spec: str) -> PolicySpec:
    """`lexical`, `lexical-heuristic`, `openai:MODEL@URL` (URL an http(s) URL with a host) or
    `local:DIR` / `local:BASE+ADAPTER`; raises `PolicySpecError` saying what was wrong."""
    kind, sep, rest = spec.partition(":")
    entry = POLICY_KINDS.get(kind)
    if entry is None and is_import_path(spec):
        return PolicySpec(IMPORT_KIND, model=spec)
    if entry is None:
        known = ", ".join(
            f"{k}:MODEL@URL"
            if v.served
            else f"{k}:DIR"
            if v.takes_target
            else "module:Class"
            if k == IMPORT_KIND
            else k
            for k, v in POLICY_KINDS.items()
        )
        raise PolicySpecError(f"policy {spec!r}: not one of {known}")
    if kind == IMPORT_KIND:
        raise PolicySpecError(f"policy {spec!r}: an imported policy is module:Class, as it is")
    if entry.takes_target:
        if not sep or not rest:
            raise PolicySpecError(f"policy {spec!r}: {kind} is {kind}:DIR or {kind}:BASE+ADAPTER")
        from codegrep_model.policies.local import parse_local_target

        parse_local_target(rest)
        return PolicySpec(kind, model=rest)
    if not entry.served:
        if sep:
            raise PolicySpecError(f"policy {spec!r}: {kind} takes no model or endpoint")
        return PolicySpec(kind)
    match = _SERVED.fullmatch(rest)
    if not sep or match is None:
        raise PolicySpecError(f"policy {spec!r}: a served model is {kind}:MODEL@URL")
    url = urlsplit(match["url"])
    if not url.netloc:
        raise PolicySpecError(f"policy {spec!r}: {match['url']} names no host")
    return PolicySpec(kind, model=match["model"], base_url=match["url"])


def served_spec(base_url: str, model: str, kind: str = "openai") -> PolicySpec:
    """The spec of a served model given as a CLI's `--base-url` and `--model` (not checked:
    the CLIs check `--base-url` with their own message)."""
    return PolicySpec(kind, model=model, base_url=base_url)


def policy_from_spec(
    spec: str | PolicySpec,
    *,
    api_key: str | None = None,
    timeout_s: float = 120.0,
    ranker: Ranker | None = None,
    ranking: int = 0,
) -> Policy:
    """The policy `spec` names. `api_key` and `timeout_s` are a served model's (per request);
    `ranker` replaces LexicalPolicy's shipped ranker; `ranking` > 0 has LexicalPolicy list its
    best `ranking` files beside its answer (`LexicalConfig.ranking`; the answer is the same),
    and other policies, which keep no ranking, ignore it. Raises `PolicySpecError`."""
    parsed = parse_policy_spec(spec) if isinstance(spec, str) else spec
    entry = POLICY_KINDS.get(parsed.kind)
    if entry is None:
        raise PolicySpecError(f"policy {parsed.kind!r}: not one of {', '.join(POLICY_KINDS)}")
    if ranking and entry.build is _lexical:
        from dataclasses import replace

        lexical = _lexical(parsed, api_key, timeout_s, ranker)
        lexical.config = replace(lexical.config, ranking=ranking)
        return lexical
    return entry.build(parsed, api_key, timeout_s, ranker)
