"""codegrep (the injector app): put CodeGrep's files in front of a coding agent.

`codegrep localize` is the main job: an issue and a repository in, a short list of files with a
reason each out. `localize` is the same as a library call.

The names below are imported on first use, so that `import codegrep` (and with it
`codegrep --version` and `--help`) does not import the search and its dependencies.
`codegrep.localize` is the function, as it always was, also after its module
(`codegrep.localize`, in `sys.modules`) is imported.
"""

from __future__ import annotations

import sys
import types
from importlib import import_module as _import_module
from importlib import metadata as _metadata
from typing import TYPE_CHECKING as _TYPE_CHECKING
from typing import Any as _Any

if _TYPE_CHECKING:
    from codegrep.errors import InjectorError, IssueInputError, RepositoryInputError
    from codegrep.localize import Localization, LocalizedFile, localize

# pyproject.toml holds the version; a source checkout that was never installed has no metadata.
try:
    __version__ = _metadata.version("codegrep")
except _metadata.PackageNotFoundError:
    __version__ = "0+unknown"

_LAZY = {
    "InjectorError": "codegrep.errors",
    "IssueInputError": "codegrep.errors",
    "RepositoryInputError": "codegrep.errors",
    "Localization": "codegrep.localize",
    "LocalizedFile": "codegrep.localize",
}

__all__ = [
    "InjectorError",
    "IssueInputError",
    "Localization",
    "LocalizedFile",
    "RepositoryInputError",
    "__version__",
    "localize",
]


def __getattr__(name: str) -> _Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'codegrep' has no attribute {name!r}")
    value = getattr(_import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


class _Package(types.ModuleType):
    """The package's module type: `localize` is the function of module `codegrep.localize`,
    though importing that module binds the name to the module (the import system's setattr,
    ignored here)."""

    @property
    def localize(self) -> _Any:
        return _import_module("codegrep.localize").localize

    @localize.setter
    def localize(self, value: _Any) -> None:
        pass


sys.modules[__name__].__class__ = _Package
