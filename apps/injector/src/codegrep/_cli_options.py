"""The policy options that `codegrep localize` and `codegrep serve` share, declared once.

For: `--policy SPEC`, its old spelling `--base-url`/`--model`, and `--api-key`, all codegrep-cli
kit declarations, and `_policy_spec`, which turns them into the spec through codegrep-model's
registry (`spec_from_options`) or exits 2 saying why. Not for: building the policy (the commands
do) or any other flag.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

from codegrep_cli import api_key_option, base_url_option, model_option, policy_option

from codegrep.localize_options import BASE_URL_HELP

if TYPE_CHECKING:
    from codegrep_model import PolicySpec

_PolicyOption = Annotated[str | None, policy_option()]
_BaseUrlOption = Annotated[
    str | None,
    base_url_option(BASE_URL_HELP),
]
_ModelOption = Annotated[str | None, model_option()]
_ApiKeyOption = Annotated[str | None, api_key_option()]


def _policy_spec(policy: str | None, base_url: str | None, model: str | None) -> PolicySpec:
    """The policy the flags name; exit 2 with the reason when they name none."""
    from codegrep_model.policies.options import spec_or_exit

    return spec_or_exit(policy, base_url=base_url, model=model)
