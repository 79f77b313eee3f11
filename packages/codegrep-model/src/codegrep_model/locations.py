"""Gold at three levels from a patch and the syntax tree: files, modules, entities.

CodeScout's reward (grpo-rewards' `codescout_multilevel`) scores an answer's files, modules
(`file:Class`, else `file:function`) and entities (`file:Class.function`, else `file:function`)
against gold sets that its datasets carry precomputed. For any SWE-bench-style instance,
`patch_targets` derives them: the files of the patch under the gold rule, and for each line the
patch removes or changes (or inserts after) in a file at the base commit, the definitions that
enclose it, read from worktree-sandbox's tree-sitter index (the `symbols` extra). A file without
a grammar, or lines outside every definition (imports, module-level code), add the file only.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Sequence

from codegrep_records import GoldRule, files_from_patch
from grpo_rewards import MultiLevelTargets
from worktree_sandbox import Definition, SymbolIndex, Tree, enclosing

__all__ = ["changed_lines", "patch_targets", "symbols_of_lines"]

_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+\d+(?:,(\d+))? @@")
_GIT_HEADER = re.compile(r"^diff --git a/(.+?) b/(.+)$")
_CLASS_KINDS = frozenset({"class", "struct", "interface", "enum", "trait", "type", "module"})
_FUNCTION_KINDS = frozenset({"function", "method", "macro"})


def changed_lines(patch: str) -> dict[str, set[int]]:
    """old path -> the 1-based lines of the old file that the patch removes or changes; a pure
    insertion counts against the old line it follows (or line 1 at the top of the file)."""
    out: dict[str, set[int]] = defaultdict(set)
    path: str | None = None
    old_line = 0
    old_left = new_left = 0  # lines of the current hunk still to come (its header's counts)
    for line in patch.splitlines():
        if old_left > 0 or new_left > 0:
            if line.startswith("\\"):
                continue  # "\ No newline at end of file"
            if path is not None:
                if line.startswith("-"):
                    out[path].add(old_line)
                elif line.startswith("+"):
                    out[path].add(max(old_line - 1, 1))
            if line.startswith("-"):
                old_line, old_left = old_line + 1, old_left - 1
            elif line.startswith("+"):
                new_left -= 1
            else:  # context (" " or an empty line from a stripped trailing space)
                old_line, old_left, new_left = old_line + 1, old_left - 1, new_left - 1
            continue
        header = _GIT_HEADER.match(line)
        if header:
            path = header.group(1)
        elif line.startswith("--- "):
            raw = line[4:].split("\t", 1)[0].strip()
            path = None if raw == "/dev/null" else raw.removeprefix("a/")
        elif hunk := _HUNK.match(line):
            old_line = int(hunk.group(1))
            old_left = int(hunk.group(2)) if hunk.group(2) is not None else 1
            new_left = int(hunk.group(3)) if hunk.group(3) is not None else 1
    return dict(out)


def symbols_of_lines(
    path: str, definitions: Sequence[Definition], lines: set[int]
) -> tuple[set[str], set[str]]:
    """(modules, entities) of `path` that enclose any of `lines` (CodeScout's naming)."""
    modules: set[str] = set()
    entities: set[str] = set()
    for line in sorted(lines):
        chain = enclosing(definitions, line)
        cls = next((d for d in chain if d.kind in _CLASS_KINDS), None)
        func = next((d for d in chain if d.kind in _FUNCTION_KINDS), None)
        if cls is not None:
            modules.add(f"{path}:{cls.name}")
        elif func is not None:
            modules.add(f"{path}:{func.name}")
        if cls is not None and func is not None:
            entities.add(f"{path}:{cls.name}.{func.name}")
        elif func is not None:
            entities.add(f"{path}:{func.name}")
    return modules, entities


async def patch_targets(
    patch: str, tree: Tree, index: SymbolIndex, rule: GoldRule | None = None
) -> MultiLevelTargets:
    """The gold files, modules and entities of `patch` on `tree` (the base commit)."""
    files = files_from_patch(patch, rule)
    lines = changed_lines(patch)
    modules: set[str] = set()
    entities: set[str] = set()
    for path in files:
        if path not in lines:
            continue
        defs = await index.definitions(tree, path)
        m, e = symbols_of_lines(path, defs, lines[path])
        modules |= m
        entities |= e
    return MultiLevelTargets(frozenset(files), frozenset(modules), frozenset(entities))
