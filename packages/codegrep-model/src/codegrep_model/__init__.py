"""codegrep-model: the CodeGrep retrieval agent at inference time.

Prompts and tool schemas, the answer schema and its tolerant parser, the rollout as a
synchronous state machine (`Episode`: 3 exploration turns of up to 8 calls, then an answer turn)
with an asyncio driver (`run_rollout`, the calls of a turn run concurrently), the policies behind
one Protocol, chosen by a spec string (`policy_from_spec("lexical")`; the backends are in
`codegrep_model.policies`) and a resumable batch runner.
"""

from importlib import metadata as _metadata

from codegrep_model.answer import Answer, answer_path
from codegrep_model.batch import BatchPlan, BatchSummary, run_batch, run_batch_file
from codegrep_model.engine import (
    DEFAULT_MAX_ISSUE_BYTES,
    RolloutConfig,
    ToolTree,
    definitions_mode,
    run_rollout,
)
from codegrep_model.episode import Episode
from codegrep_model.errors import (
    BatchError,
    BatchInputError,
    BatchStoppedError,
    CodegrepModelError,
    EndpointError,
    EndpointTimeoutError,
    EpisodeError,
    PolicyError,
    PolicySpecError,
)
from codegrep_model.policies import (
    Observation,
    Policy,
    PolicyReply,
    PolicyRequest,
    PolicySpec,
    parse_policy_spec,
    policy_from_spec,
    spec_from_options,
)
from codegrep_model.records import (
    ChatMessage,
    Instance,
    Prediction,
    RolloutRecord,
    ToolCall,
    Usage,
    prediction_from_rollout,
)

# pyproject.toml holds the version; a source checkout that was never installed has no metadata.
try:
    __version__ = _metadata.version("codegrep-model")
except _metadata.PackageNotFoundError:
    __version__ = "0+unknown"

__all__ = [
    "DEFAULT_MAX_ISSUE_BYTES",
    "Answer",
    "BatchError",
    "BatchInputError",
    "BatchPlan",
    "BatchStoppedError",
    "BatchSummary",
    "ChatMessage",
    "CodegrepModelError",
    "EndpointError",
    "EndpointTimeoutError",
    "Episode",
    "EpisodeError",
    "Instance",
    "Observation",
    "Policy",
    "PolicyError",
    "PolicyReply",
    "PolicyRequest",
    "PolicySpec",
    "PolicySpecError",
    "Prediction",
    "RolloutConfig",
    "RolloutRecord",
    "ToolCall",
    "ToolTree",
    "Usage",
    "__version__",
    "answer_path",
    "definitions_mode",
    "parse_policy_spec",
    "policy_from_spec",
    "prediction_from_rollout",
    "run_batch",
    "run_batch_file",
    "run_rollout",
    "spec_from_options",
]
