"""A policy named by its import path, `module:Class`, as mini-swe-agent names an agent class.

For: a policy written outside this package, run by any command that takes `--policy`, with no
entry in `POLICY_KINDS`: `--policy my_pkg.policies:MyPolicy`. The target is imported when the
spec's name is asked for (a class attribute `name` that is text is the policy's name; else the
import path is) and called with no arguments when the policy is built; what it returns must be
a `Policy` whose `name` is that name, so a calibration checked against the spec fits the policy.
The path comes from the command line of whoever runs the command, never from a request.
Not for: the registered kinds (`codegrep_model.policies.spec`).
"""

from __future__ import annotations

import importlib
import re
from typing import TYPE_CHECKING, Any

from codegrep_model.errors import PolicySpecError

if TYPE_CHECKING:
    from codegrep_model.policies.lexical.ranker import Ranker
    from codegrep_model.policies.protocol import Policy
    from codegrep_model.policies.spec import PolicySpec

__all__ = ["IMPORT_KIND", "build_imported", "imported_name", "is_import_path"]

#: The kind of a `PolicySpec` whose `model` holds a `module:Class` import path.
IMPORT_KIND = "import"

_PATH = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*:[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*")


def is_import_path(text: str) -> bool:
    """Whether `text` reads as `package.module:Attribute` (dotted names on both sides)."""
    return _PATH.fullmatch(text) is not None


def _target(path: str) -> Any:
    module_name, _, attr = path.partition(":")
    try:
        obj: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise PolicySpecError(f"policy {path!r}: cannot import {module_name}: {exc}") from exc
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise PolicySpecError(f"policy {path!r}: {module_name} has no {attr}") from None
    if not callable(obj):
        raise PolicySpecError(f"policy {path!r}: {attr} is not a class or a function")
    return obj


def imported_name(spec: PolicySpec) -> str:
    """The policy's name: the target's class attribute `name` when it is text, else the path."""
    path = spec.model or ""
    name = getattr(_target(path), "name", None)
    return name if isinstance(name, str) and name else path


def build_imported(
    spec: PolicySpec, api_key: str | None, timeout_s: float, ranker: Ranker | None
) -> Policy:
    """Call the target with no arguments; it must give a `Policy` named `spec.name`."""
    from codegrep_model.policies.protocol import Policy

    path = spec.model or ""
    if ranker is not None:
        raise PolicySpecError(f"policy {path!r}: a ranker is LexicalPolicy's")
    try:
        policy = _target(path)()
    except PolicySpecError:
        raise
    except Exception as exc:  # the target is someone else's code: say what it raised
        raise PolicySpecError(f"policy {path!r}: {type(exc).__name__}: {exc}") from exc
    if not isinstance(policy, Policy):
        raise PolicySpecError(
            f"policy {path!r}: made a {type(policy).__name__}, not a Policy "
            "(a `name` and an async `reply(request)`)"
        )
    if policy.name != spec.name:
        raise PolicySpecError(
            f"policy {path!r}: the policy's name is {policy.name!r}, the spec's {spec.name!r}; "
            f"give the class a text attribute name = {policy.name!r}"
        )
    return policy
