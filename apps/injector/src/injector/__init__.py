"""injector: put CodeGrep's files in front of a coding agent.

`codegrep localize` is the main job: an issue and a repository in, a short list of files with a
reason each out. `localize` is the same as a library call.
"""

from injector.errors import InjectorError, IssueInputError, RepositoryInputError
from injector.localize import Localization, LocalizedFile, localize

__version__ = "0.1.0"

__all__ = [
    "InjectorError",
    "IssueInputError",
    "Localization",
    "LocalizedFile",
    "RepositoryInputError",
    "__version__",
    "localize",
]
