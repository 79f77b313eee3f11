"""Training data for the agent: ms-swift GRPO rows and rejection-sampled agent SFT rows.

`grpo_rows` turns SWE-bench-style instances (with CATM labels as gold where there are any) into
the rows `swift rlhf --rlhf_type grpo` reads: the system and user messages exactly as
`Episode.start` renders them for the instance's tree, the tool schemas, the gold files and the
coordinates the multi-turn scheduler needs to reopen the same tree. It splits them into train
and validation by repository, so that no repository is in both.

`sft_rows` turns rollout records (`codegrep-model batch`, any policy) into ms-swift agent-format
SFT rows, keeping the answered rollouts whose reward clears a threshold, weighted by that reward
(rejection-sampling fine-tuning, the warm start before GRPO). What follows each assistant reply
(tool results, the episode's prompts) is one user message made by `fold_follow_up`, the function
the GRPO scheduler (`codegrep_model.train`) appends with: SFT and GRPO show the model one format.

Both account for every input they leave out: a report names each dropped instance or rollout
and why. Reading and writing files is the caller's (`codegrep_records` readers and
`write_records`); opening trees is here, because the prompt lists the tree's top levels.
Not for: running rollouts (`batch`), evaluation (swe-eval), or training (the launcher).

The rows live in `_grpo_rows` and `_sft_rows`, what they share in `_dataset_rows`, the chat format
in `_chat_format`; this module is their public face, and every name keeps its import path.
"""

from __future__ import annotations

from codegrep_model._chat_format import (
    CHATML_TURN_BREAK,
    SftMessage,
    agent_messages,
    fold_follow_up,
)
from codegrep_model._dataset_rows import GOLD_FROM_LABEL, ROW_SCHEMA_VERSION, Dropped, GoldLineRange
from codegrep_model._grpo_rows import (
    ROW_CONFIG_FIELDS,
    TRAINING_CONFIG,
    GrpoDataset,
    GrpoReport,
    GrpoRow,
    PromptMessage,
    config_from_row,
    grpo_rows,
    row_config_json,
    split_by_repo,
)
from codegrep_model._sft_rows import (
    SftDataset,
    SftReport,
    SftRow,
    load_rollouts,
    reward_name,
    sft_rows,
)

__all__ = [
    "CHATML_TURN_BREAK",
    "GOLD_FROM_LABEL",
    "ROW_CONFIG_FIELDS",
    "ROW_SCHEMA_VERSION",
    "TRAINING_CONFIG",
    "Dropped",
    "GoldLineRange",
    "GrpoDataset",
    "GrpoReport",
    "GrpoRow",
    "PromptMessage",
    "SftDataset",
    "SftMessage",
    "SftReport",
    "SftRow",
    "agent_messages",
    "config_from_row",
    "fold_follow_up",
    "grpo_rows",
    "load_rollouts",
    "reward_name",
    "row_config_json",
    "sft_rows",
    "split_by_repo",
]
