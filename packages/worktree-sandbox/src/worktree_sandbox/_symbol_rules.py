"""Which syntax nodes are definitions, per language, and what they are called.

Imported only by `symbols` when a file is parsed: it imports tree-sitter and the grammar pack
(the `symbols` extra). One walk over the syntax tree finds the nodes of the types a language's
rules name; each goes through its rule, which names it (`Item`) or declines it, and
`extract_definitions` nests the items by their byte spans, so a qualified name is the chain of
enclosing classes, impls, namespaces and functions. Not for: caching, reading files or choosing
a language by path (see `symbols`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from importlib import metadata

from tree_sitter import Node, Parser
from tree_sitter_language_pack import get_language

from worktree_sandbox._definition import Definition

__all__ = ["GRAMMAR_VERSION", "LANGUAGES", "ParseTimeout", "extract_definitions"]

# Bumped whenever a rule below changes what comes out, so cached results of older rules are
# never served (the disk cache keys on GRAMMAR_VERSION).
RULES_VERSION = 1
GRAMMAR_VERSION = (
    f"tree-sitter-language-pack {metadata.version('tree-sitter-language-pack')}; "
    f"tree-sitter {metadata.version('tree-sitter')}; rules {RULES_VERSION}"
)

# Scopes whose functions are methods. "impl" (a Rust impl block) is a scope, never emitted.
_CLASS_LIKE = frozenset({"class", "struct", "interface", "trait", "enum", "impl"})
# What nests other definitions in a qualified name: types of the above, modules and functions.
_SCOPES = _CLASS_LIKE | {"module", "function", "method"}


@dataclass(frozen=True, slots=True)
class Item:
    """One definition found by a rule, before nesting."""

    name: str
    kind: str  # a Definition kind, or "impl" (a scope that is not itself emitted)
    node: Node  # the definition's own node: its end is the definition's end
    start: Node  # where it starts: the node itself, or the decorators / template / export
    name_node: Node
    prefix: tuple[str, ...] = ()  # qualifiers written in the definition: `Foo::bar`, receivers
    emit: bool = True
    method_in_class: bool = False  # a function that is a method when its scope is class-like


Rule = Callable[[Node, bytes], Iterator[Item]]
_MAX_NAME_BYTES = 512
# What a C or C++ function's declarator may end in; anything else is error recovery's guess.
_C_NAMES = frozenset(
    {"identifier", "field_identifier", "destructor_name", "operator_name", "operator_cast"}
)


def _text(node: Node | None, src: bytes) -> str:
    if node is None:
        return ""
    raw = src[node.start_byte : node.end_byte].decode("utf-8", errors="replace")
    return " ".join(raw.split())  # `operator ()`, names broken over lines


def _field(node: Node, name: str) -> Node | None:
    return node.child_by_field_name(name)


def _parent_type(node: Node) -> str:
    return node.parent.type if node.parent is not None else ""


def _alone(node: Node) -> bool:
    """No named sibling: the only declarator of its declaration (asked per sibling, so it must
    not count them: a declaration of 100,000 declarators would be quadratic)."""
    return node.prev_named_sibling is None and node.next_named_sibling is None


def _outer(node: Node, wrappers: frozenset[str]) -> Node:
    """The outermost chain of `wrappers` parents (decorators, `export`, `template <...>`)."""
    while node.parent is not None and node.parent.type in wrappers:
        node = node.parent
    return node


def _item(
    node: Node,
    src: bytes,
    kind: str,
    name_node: Node | None,
    *,
    start: Node | None = None,
    prefix: tuple[str, ...] = (),
    emit: bool = True,
    method_in_class: bool = False,
) -> Iterator[Item]:
    if name_node is None or name_node.end_byte - name_node.start_byte > _MAX_NAME_BYTES:
        return  # no name, or a "name" that error recovery made of a whole region
    name = _text(name_node, src)
    if not name:
        return
    yield Item(name, kind, node, start or node, name_node, prefix, emit, method_in_class)


# -- Python ---------------------------------------------------------------------------------------

_PY_WRAP = frozenset({"decorated_definition"})


def _py_class(node: Node, src: bytes) -> Iterator[Item]:
    yield from _item(node, src, "class", _field(node, "name"), start=_outer(node, _PY_WRAP))


def _py_function(node: Node, src: bytes) -> Iterator[Item]:
    start = _outer(node, _PY_WRAP)
    yield from _item(node, src, "function", _field(node, "name"), start=start, method_in_class=True)


def _py_type_alias(node: Node, src: bytes) -> Iterator[Item]:
    left = _field(node, "left")
    yield from _item(node, src, "type", _first_of(left, frozenset({"identifier"})))


def _first_of(node: Node | None, types: frozenset[str]) -> Node | None:
    """The first node of `types` in `node`'s subtree, in document order."""
    stack = [node] if node is not None else []
    while stack:
        n = stack.pop()
        if n.type in types:
            return n
        stack.extend(reversed(n.named_children))
    return None


# -- JavaScript, TypeScript, TSX ------------------------------------------------------------------

_JS_WRAP = frozenset({"export_statement"})
_JS_DECL_WRAP = frozenset({"lexical_declaration", "variable_declaration", "export_statement"})
_JS_FUNCTION_VALUES = frozenset(
    {"arrow_function", "function_expression", "function", "generator_function"}
)
_JS_VALUES = _JS_FUNCTION_VALUES | {"class"}
_JS_DROP_QUALIFIERS = frozenset({"module", "exports", "this", "window", "globalThis"})


def _js_class(node: Node, src: bytes) -> Iterator[Item]:
    yield from _item(node, src, "class", _field(node, "name"), start=_outer(node, _JS_WRAP))


def _js_function(node: Node, src: bytes) -> Iterator[Item]:
    start = _outer(node, _JS_WRAP)
    yield from _item(node, src, "function", _field(node, "name"), start=start, method_in_class=True)


def _js_method(node: Node, src: bytes) -> Iterator[Item]:
    if _parent_type(node) == "class_body":  # an object literal's methods are not definitions
        yield from _item(node, src, "method", _field(node, "name"))


def _js_field(node: Node, src: bytes) -> Iterator[Item]:
    value = _field(node, "value")
    if value is not None and value.type in _JS_FUNCTION_VALUES:
        name = _field(node, "property") or _field(node, "name")
        yield from _item(node, src, "method", name)


def _js_declarator(node: Node, src: bytes) -> Iterator[Item]:
    value, name = _field(node, "value"), _field(node, "name")
    if value is None or value.type not in _JS_VALUES:
        return  # `const x = 1`
    if name is None or name.type != "identifier":
        return  # destructuring
    kind = "class" if value.type == "class" else "function"
    # `const f = () => ...` starts at `const` (and `export`) when it declares nothing else.
    start = _outer(node, _JS_DECL_WRAP) if _alone(node) else node
    yield from _item(node, src, kind, name, start=start, method_in_class=True)


def _js_assignment(node: Node, src: bytes) -> Iterator[Item]:
    """`Foo.prototype.bar = function`, `exports.baz = () => ...`, `Foo.Bar = class {}`."""
    left, right = _field(node, "left"), _field(node, "right")
    if left is None or right is None or right.type not in _JS_VALUES:
        return
    kind = "class" if right.type == "class" else "function"
    if left.type == "identifier":
        # `f = function ...` names a definition at the top level; inside a body it rebinds.
        statement = node.parent
        if statement is not None and _parent_type(statement) == "program":
            yield from _item(node, src, kind, left, start=statement)
        return
    if left.type != "member_expression":
        return
    chain: list[str] = []
    obj = _field(left, "object")
    while obj is not None and obj.type == "member_expression":
        chain.append(_text(_field(obj, "property"), src))
        obj = _field(obj, "object")
    if obj is None or obj.type not in ("identifier", "this"):
        return  # `a[0].f = ...`, `f().g = ...`: no name to give
    chain.append(_text(obj, src))
    chain.reverse()
    method = "prototype" in chain
    while chain and chain[0] in _JS_DROP_QUALIFIERS:
        chain.pop(0)
    prefix = tuple(p for p in chain if p != "prototype")
    if method and kind == "function":
        kind = "method"
    yield from _item(node, src, kind, _field(left, "property"), prefix=prefix, method_in_class=True)


def _ts_named(kind: str) -> Rule:
    def rule(node: Node, src: bytes) -> Iterator[Item]:
        yield from _item(node, src, kind, _field(node, "name"), start=_outer(node, _JS_WRAP))

    return rule


def _ts_namespace(node: Node, src: bytes) -> Iterator[Item]:
    name = _field(node, "name")
    if name is None:
        return
    if name.type == "nested_identifier":  # namespace A.B.C
        parts = _text(name, src).split(".")
        prefix, last = tuple(parts[:-1]), _field(name, "property") or name
        yield from _item(node, src, "module", last, start=_outer(node, _JS_WRAP), prefix=prefix)
        return
    if name.type == "string":  # declare module "foo"
        inner = _first_of(name, frozenset({"string_fragment"}))
        yield from _item(node, src, "module", inner, start=_outer(node, _JS_WRAP))
        return
    yield from _item(node, src, "module", name, start=_outer(node, _JS_WRAP))


# -- Go -------------------------------------------------------------------------------------------


def _go_function(node: Node, src: bytes) -> Iterator[Item]:
    yield from _item(node, src, "function", _field(node, "name"))


def _go_receiver_type(receiver: Node | None, src: bytes) -> str:
    param = _first_of(receiver, frozenset({"parameter_declaration"}))
    typ = _field(param, "type") if param is not None else None
    while typ is not None and typ.type in ("pointer_type", "generic_type", "parenthesized_type"):
        typ = _field(typ, "type") or (typ.named_children[0] if typ.named_children else None)
    return _text(typ, src)


def _go_method(node: Node, src: bytes) -> Iterator[Item]:
    receiver = _go_receiver_type(_field(node, "receiver"), src)
    prefix = (receiver,) if receiver else ()
    yield from _item(node, src, "method", _field(node, "name"), prefix=prefix)


def _go_single(node: Node) -> Node:
    """`type X struct{}` starts at `type`; a spec in a `type ( ... )` group at itself."""
    return node.parent if node.parent is not None and _alone(node) else node


def _go_type(node: Node, src: bytes) -> Iterator[Item]:
    typ = _field(node, "type")
    kind = "type"
    if node.type == "type_spec" and typ is not None:
        kind = {"struct_type": "struct", "interface_type": "interface"}.get(typ.type, "type")
    yield from _item(node, src, kind, _field(node, "name"), start=_go_single(node))


def _go_interface_method(node: Node, src: bytes) -> Iterator[Item]:
    if _parent_type(node) == "interface_type":
        yield from _item(node, src, "method", _field(node, "name"))


def _go_const(node: Node, src: bytes) -> Iterator[Item]:
    declaration = node.parent
    if declaration is None or _parent_type(declaration) != "source_file":
        return  # constants inside functions are locals
    for name in node.children_by_field_name("name"):
        yield from _item(node, src, "constant", name, start=_go_single(node))


# -- Rust -----------------------------------------------------------------------------------------


def _rust_start(node: Node) -> Node:
    """Attributes (`#[derive(..)]`, `#[test]`) right before an item belong to it."""
    start = node
    prev = node.prev_named_sibling
    while prev is not None and prev.type == "attribute_item":
        start, prev = prev, prev.prev_named_sibling
    return start


def _rust_named(kind: str, *, method_in_class: bool = False) -> Rule:
    def rule(node: Node, src: bytes) -> Iterator[Item]:
        if kind == "module" and _field(node, "body") is None:
            return  # `mod foo;` only says where the module is
        name = _field(node, "name")
        start = _rust_start(node)
        yield from _item(node, src, kind, name, start=start, method_in_class=method_in_class)

    return rule


def _rust_type_name(node: Node | None) -> Node | None:
    """`Point<T>` -> Point, `&'a Foo` -> Foo, `fmt::Formatter` -> Formatter."""
    while node is not None:
        if node.type in ("generic_type", "reference_type", "pointer_type"):
            node = _field(node, "type")
        elif node.type == "scoped_type_identifier":
            node = _field(node, "name")
        else:
            return node
    return None


def _rust_impl(node: Node, src: bytes) -> Iterator[Item]:
    name = _rust_type_name(_field(node, "type"))
    yield from _item(node, src, "impl", name, emit=False)


# -- Java -----------------------------------------------------------------------------------------


def _java_named(kind: str) -> Rule:
    def rule(node: Node, src: bytes) -> Iterator[Item]:
        yield from _item(node, src, kind, _field(node, "name"))

    return rule


# -- C and C++ ------------------------------------------------------------------------------------

_C_TEMPLATE = frozenset({"template_declaration"})
# Declarators wrapping the name: `*f(...)`, `&f(...)`, `(*f)(...)`, `f(...)`.
_C_DECLARATORS = frozenset(
    {
        "pointer_declarator",
        "reference_declarator",
        "parenthesized_declarator",
        "attributed_declarator",
        "function_declarator",
        "array_declarator",
    }
)


def _c_declared_name(node: Node | None) -> Node | None:
    """The name a declarator declares: `char **split(...)` -> split, `(*cb)(int)` -> cb."""
    while node is not None and node.type in _C_DECLARATORS:
        inner = _field(node, "declarator")
        if inner is None:
            named = [c for c in node.named_children if c.type not in ("parameter_list",)]
            inner = named[0] if named else None
        node = inner
    return node


def _cpp_split(node: Node | None, src: bytes) -> tuple[tuple[str, ...], Node | None]:
    """`ns::Foo<int>::bar` -> (("ns", "Foo"), bar); a template's name without its arguments."""
    prefix: list[str] = []
    while node is not None and node.type == "qualified_identifier":
        scope = _field(node, "scope")
        if scope is not None:
            if scope.type == "template_type":
                scope = _field(scope, "name")
            prefix.append(_text(scope, src))
        node = _field(node, "name")
    if node is not None and node.type in ("template_type", "template_function"):
        node = _field(node, "name")
    return tuple(p for p in prefix if p), node


def _c_macro_prefixed(node: Node | None) -> Node | None:
    """`API T* f(void)`: the C++ grammar reads a macro before the return type as a pointer to a
    member of T (`T::*`, which nobody returns from a function named so); the name is f."""
    if node is None or node.type != "qualified_identifier":
        return None
    inner = _field(node, "name")
    if inner is None or inner.type != "pointer_type_declarator":
        return None
    name = _c_declared_name(_field(inner, "declarator"))
    return name if name is not None and name.type in ("identifier", "type_identifier") else None


def _c_function(node: Node, src: bytes) -> Iterator[Item]:
    name_node = _c_declared_name(_field(node, "declarator"))
    macro_prefixed = _c_macro_prefixed(name_node)
    if macro_prefixed is not None:
        start = _outer(node, _C_TEMPLATE)
        yield from _item(node, src, "function", macro_prefixed, start=start, method_in_class=True)
        return
    prefix, name_node = _cpp_split(name_node, src)
    if name_node is None or name_node.type not in _C_NAMES:
        return
    start = _outer(node, _C_TEMPLATE)
    kind = "method" if prefix else "function"
    yield from _item(node, src, kind, name_node, start=start, prefix=prefix, method_in_class=True)


def _c_tagged(kind: str) -> Rule:
    """struct / union / enum / class with a body and a name (a bare `struct foo` is a use)."""

    def rule(node: Node, src: bytes) -> Iterator[Item]:
        if _field(node, "body") is None:
            return
        prefix, name = _cpp_split(_field(node, "name"), src)
        yield from _item(node, src, kind, name, start=_outer(node, _C_TEMPLATE), prefix=prefix)

    return rule


def _c_typedef(node: Node, src: bytes) -> Iterator[Item]:
    typ = _field(node, "type")
    anonymous_body = (
        typ is not None
        and typ.type in ("struct_specifier", "union_specifier", "enum_specifier")
        and _field(typ, "body") is not None
        and _field(typ, "name") is None
    )
    for declarator in node.children_by_field_name("declarator"):
        kind = "type"
        if anonymous_body and declarator.type == "type_identifier" and typ is not None:
            # typedef struct { ... } point_t;  is how C names a struct
            kind = "enum" if typ.type == "enum_specifier" else "struct"
        yield from _item(node, src, kind, _c_declared_name(declarator))


def _c_macro(kind: str) -> Rule:
    def rule(node: Node, src: bytes) -> Iterator[Item]:
        yield from _item(node, src, kind, _field(node, "name"))

    return rule


def _cpp_namespace(node: Node, src: bytes) -> Iterator[Item]:
    name = _field(node, "name")
    if name is None:
        return  # an anonymous namespace: its members are the file's
    if name.type == "nested_namespace_specifier":  # namespace a::b
        parts = list(name.named_children)
        prefix = tuple(_text(p, src) for p in parts[:-1])
        yield from _item(node, src, "module", parts[-1] if parts else None, prefix=prefix)
        return
    yield from _item(node, src, "module", name)


def _cpp_alias(node: Node, src: bytes) -> Iterator[Item]:
    yield from _item(node, src, "type", _field(node, "name"), start=_outer(node, _C_TEMPLATE))


# -- the tables -----------------------------------------------------------------------------------

# Rules by node type. Node types a grammar lacks never match (javascript has no interfaces).
_JS_RULES: dict[str, Rule] = {
    "class_declaration": _js_class,
    "abstract_class_declaration": _js_class,
    "function_declaration": _js_function,
    "generator_function_declaration": _js_function,
    "function_signature": _js_function,
    "method_definition": _js_method,
    "abstract_method_signature": _js_method,
    "field_definition": _js_field,
    "public_field_definition": _js_field,
    "variable_declarator": _js_declarator,
    "assignment_expression": _js_assignment,
    "interface_declaration": _ts_named("interface"),
    "type_alias_declaration": _ts_named("type"),
    "enum_declaration": _ts_named("enum"),
    "internal_module": _ts_namespace,
    "module": _ts_namespace,
}

_C_RULES: dict[str, Rule] = {
    "function_definition": _c_function,
    "struct_specifier": _c_tagged("struct"),
    "union_specifier": _c_tagged("struct"),
    "enum_specifier": _c_tagged("enum"),
    "type_definition": _c_typedef,
    "preproc_function_def": _c_macro("macro"),
    "preproc_def": _c_macro("constant"),
}

_RULES: dict[str, dict[str, Rule]] = {
    "python": {
        "class_definition": _py_class,
        "function_definition": _py_function,
        "type_alias_statement": _py_type_alias,
    },
    "javascript": _JS_RULES,
    "typescript": _JS_RULES,
    "tsx": _JS_RULES,
    "go": {
        "function_declaration": _go_function,
        "method_declaration": _go_method,
        "type_spec": _go_type,
        "type_alias": _go_type,
        "method_elem": _go_interface_method,
        "method_spec": _go_interface_method,
        "const_spec": _go_const,
    },
    "rust": {
        "function_item": _rust_named("function", method_in_class=True),
        "function_signature_item": _rust_named("function", method_in_class=True),
        "struct_item": _rust_named("struct"),
        "union_item": _rust_named("struct"),
        "enum_item": _rust_named("enum"),
        "trait_item": _rust_named("trait"),
        "impl_item": _rust_impl,
        "mod_item": _rust_named("module"),
        "macro_definition": _rust_named("macro"),
        "type_item": _rust_named("type"),
        "associated_type": _rust_named("type"),
        "const_item": _rust_named("constant"),
        "static_item": _rust_named("constant"),
    },
    "java": {
        "class_declaration": _java_named("class"),
        "record_declaration": _java_named("class"),
        "interface_declaration": _java_named("interface"),
        "annotation_type_declaration": _java_named("interface"),
        "enum_declaration": _java_named("enum"),
        "method_declaration": _java_named("method"),
        "constructor_declaration": _java_named("method"),
        "compact_constructor_declaration": _java_named("method"),
    },
    "c": _C_RULES,
    "cpp": {
        **_C_RULES,
        "class_specifier": _c_tagged("class"),
        "namespace_definition": _cpp_namespace,
        "alias_declaration": _cpp_alias,
    },
}

LANGUAGES: tuple[str, ...] = tuple(_RULES)

# Subtrees the walk does not enter: no definition can be inside them (Python's simple
# statements and expressions; literals, comments, imports, macro bodies everywhere). Only a
# saving: the walk visits each node once whatever is listed here.
_LEAFY = frozenset(
    {
        "comment",
        "line_comment",
        "block_comment",
        "string",
        "string_literal",
        "raw_string_literal",
        "char_literal",
        "template_string",
        "interpreted_string_literal",
        "regex",
        "number",
        "integer",
        "float",
        "number_literal",
        "import_statement",
        "import_declaration",
        "import_from_statement",
        "use_declaration",
        "package_declaration",
        "preproc_include",
        "preproc_arg",
        "attribute_item",
        "token_tree",
    }
)
_SKIP: dict[str, frozenset[str]] = {
    "python": _LEAFY
    | {
        "expression_statement",
        "return_statement",
        "decorator",
        "parameters",
        "argument_list",
        "assert_statement",
        "raise_statement",
        "delete_statement",
        "global_statement",
        "nonlocal_statement",
        "pass_statement",
        "future_import_statement",
        "type",
    },
    "c": _LEAFY | {"expression_statement", "return_statement", "argument_list"},
    "cpp": _LEAFY | {"expression_statement", "return_statement", "argument_list"},
}


_local = threading.local()  # a Parser per thread and language: parsers are not thread-safe


def _parser(language: str) -> Parser:
    parsers: dict[str, Parser] | None = getattr(_local, "parsers", None)
    if parsers is None:
        parsers = _local.parsers = {}
    parser = parsers.get(language)
    if parser is None:
        lang = get_language(language)  # type: ignore[arg-type]  # a name of LANGUAGES
        parser = parsers[language] = Parser(lang)
    return parser


def _last_line(node: Node) -> int:
    """1-based last line; a node ending at column 0 (a trailing newline) ends on the line above."""
    (srow, _), (erow, ecol) = node.start_point, node.end_point
    return erow if ecol == 0 and erow > srow else erow + 1


_READ_CHUNK = 1 << 16  # the parse reads its input through a callback, to have a deadline


class ParseTimeout(Exception):
    """The parse or the walk ran past its deadline (a crafted file: `[{(` repeated for 2 MB
    takes tree-sitter tens of seconds)."""


def _candidates(
    root: Node, rules: dict[str, Rule], skip: frozenset[str], deadline: float
) -> Iterator[Node]:
    """Nodes of the rules' types, by one walk over the named nodes: linear in the tree, never
    recursive (tree-sitter's query cursor, tried first, is quadratic in nesting depth: 90 KB
    of `((((` took half a minute)."""
    stack = [root]
    visited = 0
    while stack:
        node = stack.pop()
        node_type = node.type
        if node_type in rules:
            yield node
        if node_type not in skip:
            stack.extend(node.named_children)
        visited += 1
        if visited % 4096 == 0 and time.monotonic() > deadline:
            raise ParseTimeout("the walk over the syntax tree ran out of time")


def extract_definitions(
    source: bytes, language: str, *, timeout: float = 5.0
) -> tuple[Definition, ...]:
    """Parse `source` and return its definitions in document order (outer before inner).

    ParseTimeout when parsing and walking take longer than `timeout` seconds.
    """
    rules = _RULES[language]
    deadline = time.monotonic() + timeout

    def read(at: int, _point: object) -> bytes:
        # bytes, not a memoryview: py-tree-sitter#435 (a segfault reading text back from one)
        return source[at : at + _READ_CHUNK]

    def expired(_state: int, _has_error: bool) -> bool:
        return time.monotonic() > deadline  # True cancels the parse

    parser = _parser(language)
    try:
        tree = parser.parse(read, progress_callback=expired)
    except ValueError as exc:  # "Parsing failed": cancelled by `expired`
        parser.reset()  # a cancelled parser would resume this parse on its next call
        if time.monotonic() > deadline:
            raise ParseTimeout(f"parsing ran past {timeout:g} s") from exc
        raise
    items: list[Item] = []
    for node in _candidates(tree.root_node, rules, _SKIP.get(language, _LEAFY), deadline):
        items.extend(rules[node.type](node, source))
    items.sort(key=lambda it: (it.start.start_byte, -it.node.end_byte))
    out: list[Definition] = []
    stack: list[tuple[int, tuple[str, ...], str]] = []  # (end byte, qualified parts, kind)
    for it in items:
        begin = it.start.start_byte
        while stack and stack[-1][0] <= begin:
            stack.pop()
        parent_parts, parent_kind = (stack[-1][1], stack[-1][2]) if stack else ((), "")
        kind = it.kind
        if it.method_in_class and kind == "function" and parent_kind in _CLASS_LIKE:
            kind = "method"
        parts = (*parent_parts, *it.prefix, it.name)
        if it.emit:
            out.append(
                Definition(
                    name=it.name,
                    qualname=".".join(parts),
                    kind=kind,
                    line=it.start.start_point[0] + 1,
                    end_line=_last_line(it.node),
                    name_line=it.name_node.start_point[0] + 1,
                )
            )
        if kind in _SCOPES:
            stack.append((it.node.end_byte, parts, kind))
    return tuple(out)
