"""The launcher's one YAML loader: `yaml.SafeLoader` with bounds on what a document may build.

A config is read from a file someone may have handed over. PyYAML's safe loader runs no code,
but it still builds whatever the text describes: nine nested levels of nine aliases ("billion
laughs") are 81 aliases in a few hundred bytes and a structure of 9^9 references, which any
walk over it (validation, an error message that prints it) never finishes. Bounded here: the
text's size, the number of aliases, the nesting depth, and the number of nodes the document
holds once every alias is expanded, all counted while composing, before anything is built.

Not for: what the values mean (`config` validates them).
"""

from __future__ import annotations

from typing import Any

import yaml  # type: ignore[import-untyped, unused-ignore]

__all__ = [
    "MAX_YAML_ALIASES",
    "MAX_YAML_BYTES",
    "MAX_YAML_DEPTH",
    "MAX_YAML_NODES",
    "YamlLimitError",
    "load_yaml",
]

# A run config is a few kilobytes with a handful of anchors (shared settings merged with `<<`).
MAX_YAML_BYTES = 1024 * 1024
MAX_YAML_ALIASES = 100
MAX_YAML_DEPTH = 64
MAX_YAML_NODES = 100_000


class YamlLimitError(yaml.MarkedYAMLError):  # type: ignore[misc, unused-ignore]
    """The document passes a bound; `problem` says which, `problem_mark` where (when known)."""


class _BoundedLoader(yaml.SafeLoader):  # type: ignore[misc, unused-ignore]
    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._aliases = 0
        self._depth = 0
        # Expanded size of each composed node, by id; the nodes stay alive in the tree (and
        # in the anchors) while composing, so an id is never reused meanwhile.
        self._sizes: dict[int, int] = {}

    def _refuse(self, problem: str) -> YamlLimitError:
        event = self.peek_event() if self.check_event() else None
        return YamlLimitError(problem=problem, problem_mark=getattr(event, "start_mark", None))

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            self._aliases += 1
            if self._aliases > MAX_YAML_ALIASES:
                raise self._refuse(f"more than {MAX_YAML_ALIASES} aliases")
            return super().compose_node(parent, index)
        self._depth += 1
        if self._depth > MAX_YAML_DEPTH:
            raise self._refuse(f"nested more than {MAX_YAML_DEPTH} levels deep")
        try:
            node = super().compose_node(parent, index)
        finally:
            self._depth -= 1
        if isinstance(node, yaml.SequenceNode):
            children = list(node.value)
        elif isinstance(node, yaml.MappingNode):
            children = [n for pair in node.value for n in pair]
        else:
            children = []
        size = 1 + sum(self._sizes.get(id(c), 1) for c in children)
        if size > MAX_YAML_NODES:
            raise YamlLimitError(
                problem=f"more than {MAX_YAML_NODES} values once its aliases are expanded",
                problem_mark=node.start_mark,
            )
        self._sizes[id(node)] = size
        return node


def load_yaml(text: str) -> tuple[Any, Any]:
    """(the value, its composed node tree or None for an empty document) of one YAML document.

    Raises `yaml.YAMLError` for text that is not YAML, and its subclass `YamlLimitError` for
    a document past a bound (size, aliases, depth, expanded size); neither message holds more
    than a line of the document.
    """
    if len(text) > MAX_YAML_BYTES:
        raise YamlLimitError(problem=f"larger than {MAX_YAML_BYTES} characters")
    loader = _BoundedLoader(text)
    try:
        node = loader.get_single_node()
        value = None if node is None else loader.construct_document(node)
    finally:
        loader.dispose()
    return value, node
