"""The lexical policy and its learned ranker: `LexicalPolicy` (`policy`), the ranker it reads
(`ranker`, shipped as `rankers/lexical.json`), the answer cut (`selection`), and the ranker's
training data and repository-fold cross-validation (`ranker_train`, `ranker_cv`; imported from
their modules, they run rollouts through the engine).
"""

from codegrep_model.policies.lexical.policy import Candidate, LexicalConfig, LexicalPolicy
from codegrep_model.policies.lexical.ranker import Ranker

__all__ = ["Candidate", "LexicalConfig", "LexicalPolicy", "Ranker"]
