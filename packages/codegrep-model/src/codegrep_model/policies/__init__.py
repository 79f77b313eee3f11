"""Policies: the one protocol every policy implements, the registry that builds one from a spec
string, and the backends behind it, each in its own module.

- `protocol`: `Policy`, its `PolicyRequest` and `PolicyReply`, and what a policy may ask of the
  tree beyond its calls (`PolicyNeeds`, `TreeContext`).
- `spec`, `options`, `imported`: the registry (`policy_from_spec("lexical")`,
  `"openai:MODEL@URL"`, `"local:DIR"`, `"shortlist:DIR"`, `"module:Class"`) and a command's
  policy flags turned into a spec.
- `lexical` (the model-free default, with its learned ranker, the ranker's training,
  cross-validation and answer cut), `served` (a model behind an OpenAI-compatible endpoint),
  `local` (a checkpoint run in this process), `shortlist` (lexical explores, a local model
  answers from its shortlist), `scripted` (replies given in advance: the test double).

Callers choose a policy by its spec and talk to it through the protocol only; nothing outside
this room asks which backend it holds. The backends are imported from their modules, so
importing this package does not import them.
"""

from codegrep_model.policies.options import (
    DEFAULT_POLICY,
    DEFAULT_SERVED_MODEL,
    base_url_problem,
    spec_from_options,
    spec_or_exit,
)
from codegrep_model.policies.protocol import (
    Observation,
    Policy,
    PolicyNeeds,
    PolicyReply,
    PolicyRequest,
    TreeContext,
    TreePolicy,
    bind_tree,
    needs_of,
)
from codegrep_model.policies.spec import (
    POLICY_KINDS,
    PolicyKind,
    PolicySpec,
    parse_policy_spec,
    policy_from_spec,
    served_spec,
)

__all__ = [
    "DEFAULT_POLICY",
    "DEFAULT_SERVED_MODEL",
    "POLICY_KINDS",
    "Observation",
    "Policy",
    "PolicyKind",
    "PolicyNeeds",
    "PolicyReply",
    "PolicyRequest",
    "PolicySpec",
    "TreeContext",
    "TreePolicy",
    "base_url_problem",
    "bind_tree",
    "needs_of",
    "parse_policy_spec",
    "policy_from_spec",
    "served_spec",
    "spec_from_options",
    "spec_or_exit",
]
