"""The lexical policy and its learned ranker: `LexicalPolicy` (`policy`), the ranker it reads
(`ranker`, shipped as `rankers/lexical.json`), the answer cut (`selection`), and the ranker's
training data and repository-fold cross-validation (`ranker_train`, `ranker_cv`; imported from
their modules, they run rollouts through the engine).
"""

from pathlib import Path

from codegrep_model.policies.lexical.policy import Candidate, LexicalConfig, LexicalPolicy
from codegrep_model.policies.lexical.ranker import Ranker
from codegrep_model.policies.shortlist import Explorer

__all__ = ["Candidate", "LexicalConfig", "LexicalPolicy", "Ranker", "lexical_explorer"]


def lexical_explorer(ranker_file: Path | None = None) -> Explorer:
    """LexicalPolicy as the explorer of the answer task (`policies.shortlist`): with the shipped
    ranker, or the one in `ranker_file`. Raises `RankerError` or `OSError` for a ranker file
    that cannot be read."""
    return LexicalPolicy(ranker=Ranker.load(ranker_file) if ranker_file else None)
