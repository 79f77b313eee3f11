"""codegrep (the injector app): put CodeGrep's files in front of a coding agent.

`codegrep localize` is the main job: an issue and a repository in, a short list of files with a
reason each out. `localize` is the same as a library call.
"""

from importlib import metadata as _metadata

from codegrep.errors import InjectorError, IssueInputError, RepositoryInputError
from codegrep.localize import Localization, LocalizedFile, localize

# pyproject.toml holds the version; a source checkout that was never installed has no metadata.
try:
    __version__ = _metadata.version("codegrep")
except _metadata.PackageNotFoundError:
    __version__ = "0+unknown"

__all__ = [
    "InjectorError",
    "IssueInputError",
    "Localization",
    "LocalizedFile",
    "RepositoryInputError",
    "__version__",
    "localize",
]
