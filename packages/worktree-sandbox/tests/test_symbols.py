"""The definition index: exact definitions per language on tricky code, enclosing(), the index
over real git repositories with its memory and disk caches, hostile files, and the missing extra.

Everything but the last tests needs the `symbols` extra and is skipped, saying so, without it.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import os
import random
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from worktree_sandbox import (
    Definition,
    DirectoryTree,
    SandboxError,
    SymbolIndex,
    TreePool,
    enclosing,
    language_of,
    parse_definitions,
    symbols_available,
)
from worktree_sandbox._owned import owned_tag
from worktree_sandbox.errors import SymbolCacheError, SymbolsUnavailable
from worktree_sandbox.symbols import MAX_PARSE_BYTES

EXTRA = "pip install 'worktree-sandbox[symbols]'"


@pytest.fixture
def symbols_extra() -> None:
    pytest.importorskip("tree_sitter", reason=f"needs the symbols extra: {EXTRA}")
    pytest.importorskip("tree_sitter_language_pack", reason=f"needs the symbols extra: {EXTRA}")


needs_extra = pytest.mark.usefixtures("symbols_extra")

# language -> (source, [(name, qualname, kind, line, end_line)]): the tricky cases of each
# grammar (decorators, nested and local classes, out-of-line C++ methods, pointer-returning C
# functions, Go receivers, Rust impl blocks, export default, arrow functions), checked by eye.
CASES: dict[str, tuple[str, list[tuple[str, str, str, int, int]]]] = {
    "python": (
        """\
import functools


@functools.lru_cache(maxsize=None)
@staticmethod
def cached(x):
    return x


class Parser(Base, metaclass=Meta):
    '''Parses.'''

    class Error(Exception):
        pass

    def __init__(self, text):
        self.text = text

    @property
    def size(self):
        def helper():
            return 1
        return helper()

    async def parse(self):
        lambda: None
        if True:
            def inside_if(self):
                pass


async def main():
    class Local:
        def run(self):
            pass


if TYPE_CHECKING:
    def typed() -> None: ...

type Vector = list[float]
""",
        [
            ("cached", "cached", "function", 4, 7),
            ("Parser", "Parser", "class", 10, 29),
            ("Error", "Parser.Error", "class", 13, 14),
            ("__init__", "Parser.__init__", "method", 16, 17),
            ("size", "Parser.size", "method", 19, 23),
            ("helper", "Parser.size.helper", "function", 21, 22),
            ("parse", "Parser.parse", "method", 25, 29),
            ("inside_if", "Parser.parse.inside_if", "function", 28, 29),
            ("main", "main", "function", 32, 35),
            ("Local", "main.Local", "class", 33, 35),
            ("run", "main.Local.run", "method", 34, 35),
            ("typed", "typed", "function", 39, 39),
            ("Vector", "Vector", "type", 41, 41),
        ],
    ),
    "javascript": (
        """\
export default class Widget extends Base {
  static count = 0;
  handle = (e) => { this.x = e; };
  #secret() {}
  get size() { return 1; }
  static async *items() {}
}

export const add = (a, b) => a + b;
const sub = function (a, b) { return a - b; }, other = 1;
function* walk() {}
async function load() {
  function inner() {}
  return inner;
}
Widget.prototype.render = function () {};
module.exports.helper = () => 1;
exports.Thing = class {};
const { a, b } = require("x");
const obj = { method() {} };
(function () {
  function hiddenInIife() {}
})();
export default function () {}
""",
        [
            ("Widget", "Widget", "class", 1, 7),
            ("handle", "Widget.handle", "method", 3, 3),
            ("#secret", "Widget.#secret", "method", 4, 4),
            ("size", "Widget.size", "method", 5, 5),
            ("items", "Widget.items", "method", 6, 6),
            ("add", "add", "function", 9, 9),
            ("sub", "sub", "function", 10, 10),
            ("walk", "walk", "function", 11, 11),
            ("load", "load", "function", 12, 15),
            ("inner", "load.inner", "function", 13, 13),
            ("render", "Widget.render", "method", 16, 16),
            ("helper", "helper", "function", 17, 17),
            ("Thing", "Thing", "class", 18, 18),
            ("hiddenInIife", "hiddenInIife", "function", 22, 22),
        ],
    ),
    "typescript": (
        """\
import { X } from "./x";

export interface Shape {
  area(): number;
}

export type Point = { x: number; y: number };

export enum Direction {
  Up,
  Down,
}

@Component({ selector: "app" })
export class Circle implements Shape {
  constructor(private r: number) {}
  area(): number {
    return Math.PI * this.r ** 2;
  }
  private scale = (k: number): Circle => new Circle(this.r * k);
}

export abstract class Base {
  abstract run(): void;
}

namespace Geometry.Utils {
  export function distance(a: Point, b: Point): number {
    return 0;
  }
}

declare module "lib" {
  export function loaded(): boolean;
}

export const identity = <T,>(x: T): T => x;
function overload(a: string): void;
function overload(a: number): void;
function overload(a: any) {}
""",
        [
            ("Shape", "Shape", "interface", 3, 5),
            ("Point", "Point", "type", 7, 7),
            ("Direction", "Direction", "enum", 9, 12),
            ("Circle", "Circle", "class", 14, 21),
            ("constructor", "Circle.constructor", "method", 16, 16),
            ("area", "Circle.area", "method", 17, 19),
            ("scale", "Circle.scale", "method", 20, 20),
            ("Base", "Base", "class", 23, 25),
            ("run", "Base.run", "method", 24, 24),
            ("Utils", "Geometry.Utils", "module", 27, 31),
            ("distance", "Geometry.Utils.distance", "function", 28, 30),
            ("lib", "lib", "module", 33, 35),
            ("loaded", "lib.loaded", "function", 34, 34),
            ("identity", "identity", "function", 37, 37),
            ("overload", "overload", "function", 38, 38),
            ("overload", "overload", "function", 39, 39),
            ("overload", "overload", "function", 40, 40),
        ],
    ),
    "tsx": (
        """\
import React from "react";

interface Props {
  label: string;
}

export const Button = ({ label }: Props) => <button>{label}</button>;

export default function App() {
  const onClick = () => console.log("x");
  return <Button label="go" />;
}

class Counter extends React.Component<Props> {
  render() {
    return <div>{this.props.label}</div>;
  }
}
""",
        [
            ("Props", "Props", "interface", 3, 5),
            ("Button", "Button", "function", 7, 7),
            ("App", "App", "function", 9, 12),
            ("onClick", "App.onClick", "function", 10, 10),
            ("Counter", "Counter", "class", 14, 18),
            ("render", "Counter.render", "method", 15, 17),
        ],
    ),
    "go": (
        """\
package server

import "net/http"

const Version = "1.0"

const (
	ModeA = iota
	ModeB
)

var defaultServer = &Server{}

type Server struct {
	mu sync.Mutex
}

type Handler interface {
	Serve(w http.ResponseWriter) error
}

type ID = string

type List[T any] struct {
	items []T
}

func New() *Server {
	return &Server{}
}

func (s *Server) Start() error {
	run := func() {}
	run()
	return nil
}

func (l List[T]) Len() int { return len(l.items) }

func (Server) Name() string { return "s" }
""",
        [
            ("Version", "Version", "constant", 5, 5),
            ("ModeA", "ModeA", "constant", 8, 8),
            ("ModeB", "ModeB", "constant", 9, 9),
            ("Server", "Server", "struct", 14, 16),
            ("Handler", "Handler", "interface", 18, 20),
            ("Serve", "Handler.Serve", "method", 19, 19),
            ("ID", "ID", "type", 22, 22),
            ("List", "List", "struct", 24, 26),
            ("New", "New", "function", 28, 30),
            ("Start", "Server.Start", "method", 32, 36),
            ("Len", "List.Len", "method", 38, 38),
            ("Name", "Server.Name", "method", 40, 40),
        ],
    ),
    "rust": (
        """\
use std::fmt;

pub const MAX: usize = 10;
static COUNTER: u32 = 0;

#[derive(Debug, Clone)]
pub struct Point<T> {
    x: T,
}

impl<T: Copy> Point<T> {
    pub fn new(x: T) -> Self {
        Point { x }
    }

    fn get(&self) -> T {
        self.x
    }
}

impl fmt::Display for Point<i32> {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "{}", self.x)
    }
}

pub trait Shape {
    fn area(&self) -> f64;
    fn name(&self) -> &str {
        "shape"
    }
}

pub enum Event {
    Click { x: i32 },
    Key(char),
}

mod tests {
    #[test]
    fn works() {}
}

macro_rules! square {
    ($x:expr) => {
        $x * $x
    };
}

pub type Result<T> = std::result::Result<T, Error>;

fn main() {
    fn nested() {}
}
""",
        [
            ("MAX", "MAX", "constant", 3, 3),
            ("COUNTER", "COUNTER", "constant", 4, 4),
            ("Point", "Point", "struct", 6, 9),
            ("new", "Point.new", "method", 12, 14),
            ("get", "Point.get", "method", 16, 18),
            ("fmt", "Point.fmt", "method", 22, 24),
            ("Shape", "Shape", "trait", 27, 32),
            ("area", "Shape.area", "method", 28, 28),
            ("name", "Shape.name", "method", 29, 31),
            ("Event", "Event", "enum", 34, 37),
            ("tests", "tests", "module", 39, 42),
            ("works", "tests.works", "function", 40, 41),
            ("square", "square", "macro", 44, 48),
            ("Result", "Result", "type", 50, 50),
            ("main", "main", "function", 52, 54),
            ("nested", "main.nested", "function", 53, 53),
        ],
    ),
    "java": (
        """\
package com.example;

import java.util.List;

public class Outer<T> extends Base implements Runnable {
    private final int x;

    public Outer(int x) {
        this.x = x;
    }

    @Override
    public void run() {
        Runnable r = new Runnable() {
            public void run() {}
        };
    }

    static class Inner {
        <R> R map(java.util.function.Function<T, R> f) {
            return null;
        }
    }

    enum Color {
        RED, GREEN;

        Color next() {
            return RED;
        }
    }
}

interface Shape {
    double area();

    default String name() {
        return "shape";
    }
}

record Point(int x, int y) {
    Point {
        if (x < 0) throw new IllegalArgumentException();
    }
}

@interface Marker {
    String value();
}
""",
        [
            ("Outer", "Outer", "class", 5, 32),
            ("Outer", "Outer.Outer", "method", 8, 10),
            ("run", "Outer.run", "method", 12, 17),
            ("run", "Outer.run.run", "method", 15, 15),
            ("Inner", "Outer.Inner", "class", 19, 23),
            ("map", "Outer.Inner.map", "method", 20, 22),
            ("Color", "Outer.Color", "enum", 25, 31),
            ("next", "Outer.Color.next", "method", 28, 30),
            ("Shape", "Shape", "interface", 34, 40),
            ("area", "Shape.area", "method", 35, 35),
            ("name", "Shape.name", "method", 37, 39),
            ("Point", "Point", "class", 42, 46),
            ("Point", "Point.Point", "method", 43, 45),
            ("Marker", "Marker", "interface", 48, 50),
        ],
    ),
    "c": (
        """\
#include <stdlib.h>

#define MAX(a, b) ((a) > (b) ? (a) : (b))
#define BUFFER_SIZE 4096

struct node {
    int value;
    struct node *next;
};

typedef struct {
    double x, y;
} point_t;

typedef struct list list_t;
typedef int (*compare_fn)(const void *, const void *);

enum color { RED, GREEN };

union value {
    int i;
    float f;
};

int prototype_only(int x);

static struct node *
make_node(int value)
{
    struct node *n = malloc(sizeof *n);
    return n;
}

char **split(const char *s, int (*keep)(int))
{
    return NULL;
}

int (*pick_handler(int kind))(void *)
{
    return NULL;
}

void broken(int x) {
    if (x { return; }
}

int after_error(void) { return 0; }
""",
        [
            ("MAX", "MAX", "macro", 3, 3),
            ("BUFFER_SIZE", "BUFFER_SIZE", "constant", 4, 4),
            ("node", "node", "struct", 6, 9),
            ("point_t", "point_t", "struct", 11, 13),
            ("list_t", "list_t", "type", 15, 15),
            ("compare_fn", "compare_fn", "type", 16, 16),
            ("color", "color", "enum", 18, 18),
            ("value", "value", "struct", 20, 23),
            ("make_node", "make_node", "function", 27, 32),
            ("split", "split", "function", 34, 37),
            ("pick_handler", "pick_handler", "function", 39, 42),
            ("broken", "broken", "function", 44, 46),
            ("after_error", "after_error", "function", 48, 48),
        ],
    ),
    "cpp": (
        """\
#include <string>

namespace geo {
namespace detail {

template <typename T>
class Box : public Base {
 public:
  Box() = default;
  explicit Box(T v) : v_(v) {}
  ~Box();
  T get() const { return v_; }
  void set(T v);

  struct Slot {
    int index;
  };

 private:
  T v_;
};

}  // namespace detail

template <typename T>
void detail::Box<T>::set(T v) {
  v_ = v;
}

template <typename T>
detail::Box<T>::~Box() {}

}  // namespace geo

int* Foo::make() { return nullptr; }

const std::string& Foo::name() const { return name_; }

bool operator==(const Foo& a, const Foo& b) { return true; }

namespace a::b {
void nested_ns() {}
}

namespace {
int file_local() { return 1; }
}

using Strings = std::vector<std::string>;

enum class Mode : int { kFast, kSafe };

extern "C" {
int c_entry(void) { return 0; }
}

#define SQUARE(x) ((x) * (x))
""",
        [
            ("geo", "geo", "module", 3, 33),
            ("detail", "geo.detail", "module", 4, 23),
            ("Box", "geo.detail.Box", "class", 6, 21),
            ("Box", "geo.detail.Box.Box", "method", 9, 9),
            ("Box", "geo.detail.Box.Box", "method", 10, 10),
            ("get", "geo.detail.Box.get", "method", 12, 12),
            ("Slot", "geo.detail.Box.Slot", "struct", 15, 17),
            ("set", "geo.detail.Box.set", "method", 25, 28),
            ("~Box", "geo.detail.Box.~Box", "method", 30, 31),
            ("make", "Foo.make", "method", 35, 35),
            ("name", "Foo.name", "method", 37, 37),
            ("operator==", "operator==", "function", 39, 39),
            ("b", "a.b", "module", 41, 43),
            ("nested_ns", "a.b.nested_ns", "function", 42, 42),
            ("file_local", "file_local", "function", 46, 46),
            ("Strings", "Strings", "type", 49, 49),
            ("Mode", "Mode", "enum", 51, 51),
            ("c_entry", "c_entry", "function", 54, 54),
            ("SQUARE", "SQUARE", "macro", 57, 57),
        ],
    ),
}


def _rows(defs: tuple[Definition, ...]) -> list[tuple[str, str, str, int, int]]:
    return [(d.name, d.qualname, d.kind, d.line, d.end_line) for d in defs]


@needs_extra
@pytest.mark.parametrize("language", sorted(CASES))
def test_definitions_per_language(language: str) -> None:
    source, expected = CASES[language]
    assert _rows(parse_definitions(source.encode(), language)) == expected


@needs_extra
def test_name_line_is_the_name_after_decorators_and_attributes() -> None:
    by = {d.qualname: d for d in parse_definitions(CASES["python"][0].encode(), "python")}
    assert (by["cached"].line, by["cached"].name_line) == (4, 6)  # two decorators above
    assert (by["Parser.size"].line, by["Parser.size"].name_line) == (19, 20)
    rust = {d.qualname: d for d in parse_definitions(CASES["rust"][0].encode(), "rust")}
    assert (rust["Point"].line, rust["Point"].name_line) == (6, 7)  # #[derive(...)]
    c = {d.qualname: d for d in parse_definitions(CASES["c"][0].encode(), "c")}
    assert (c["make_node"].line, c["make_node"].name_line) == (27, 28)  # return type above


@needs_extra
def test_c_header_reads_the_same_with_the_cpp_grammar() -> None:
    """`.h` goes to the C++ grammar: on C code it finds what the C grammar finds."""
    source = CASES["c"][0].encode()
    assert parse_definitions(source, "cpp") == parse_definitions(source, "c")
    assert language_of("include/zstd.h") == "cpp"
    # A macro before a pointer return type reads as `T::*` to the C++ grammar (xxhash.h, zstd).
    header = b"XXH_PUBLIC_API XXH3_state_t* XXH3_createState(void)\n{\n    return 0;\n}\n"
    for language in ("c", "cpp"):
        assert _rows(parse_definitions(header, language)) == [
            ("XXH3_createState", "XXH3_createState", "function", 1, 4)
        ]


def test_language_of() -> None:
    table = {
        "a.py": "python",
        "stubs/x.pyi": "python",
        "ext/fast.pyx": None,  # Cython is not Python syntax
        "web/app.js": "javascript",
        "esm.mjs": "javascript",
        "cjs.cjs": "javascript",
        "ui/View.jsx": "javascript",
        "src/index.ts": "typescript",
        "types.d.ts": "typescript",
        "mod.mts": "typescript",
        "mod.cts": "typescript",
        "ui/App.tsx": "tsx",
        "cmd/main.go": "go",
        "src/lib.rs": "rust",
        "Main.java": "java",
        "zstd.c": "c",
        "zstd.h": "cpp",
        "fmt.cc": "cpp",
        "fmt.cpp": "cpp",
        "fmt.cxx": "cpp",
        "fmt.hpp": "cpp",
        "fmt.hh": "cpp",
        "fmt.hxx": "cpp",
        "fmt.h++": "cpp",
        "LOUD.PY": "python",
        "README.md": None,
        "Makefile": None,
        "py": None,
        ".py": None,  # a dot file named ".py", not a Python file
        "dir.py/file": None,
    }
    assert {p: language_of(p) for p in table} == table


def _d(name: str, line: int, end: int) -> Definition:
    return Definition(name, name, "function", line, end)


def test_enclosing_outermost_first() -> None:
    defs = [_d("Outer", 1, 30), _d("Outer.a", 2, 10), _d("Outer.a.inner", 4, 6), _d("b", 12, 20)]
    assert [d.name for d in enclosing(defs, 5)] == ["Outer", "Outer.a", "Outer.a.inner"]
    assert [d.name for d in enclosing(defs, 2)] == ["Outer", "Outer.a"]
    assert [d.name for d in enclosing(defs, 10)] == ["Outer", "Outer.a"]  # end line included
    assert [d.name for d in enclosing(defs, 11)] == ["Outer"]
    assert [d.name for d in enclosing(defs, 15)] == ["Outer", "b"]  # after Outer.a, in Outer
    assert enclosing(defs, 31) == ()
    assert enclosing([], 1) == ()
    assert Definition("x", "x", "class", 3, 4).name_line == 3  # defaults to the first line


@needs_extra
def test_enclosing_on_parsed_code() -> None:
    defs = parse_definitions(CASES["python"][0].encode(), "python")
    assert [d.qualname for d in enclosing(defs, 22)] == [
        "Parser",
        "Parser.size",
        "Parser.size.helper",
    ]
    assert [d.qualname for d in enclosing(defs, 5)] == ["cached"]  # a decorator line
    assert enclosing(defs, 1) == ()


# -- hostile content ------------------------------------------------------------------------------


@needs_extra
@pytest.mark.parametrize("language", sorted(CASES))
def test_garbage_never_raises(language: str) -> None:
    rng = random.Random(7)
    for size in (0, 1, 100, 20_000):
        noise = bytes(rng.randrange(1, 256) for _ in range(size))  # no NUL: it is parsed
        assert isinstance(parse_definitions(noise, language), tuple)
    assert parse_definitions(b"\x00\x01binary" * 100, language) == ()  # binary: not parsed
    # Nesting: tree-sitter's query cursor is quadratic in depth (this took ~30 s); the walk is not.
    deep = b"(" * 50_000 + b"[{" * 20_000 + b"{" * 20_000
    started = time.perf_counter()
    assert isinstance(parse_definitions(deep, language, timeout=60), tuple)
    assert time.perf_counter() - started < 10  # done, not stopped by the time limit
    invalid_utf8 = b"def \xff\xfe(x):\n  pass\nclass \xc3(\n"
    assert isinstance(parse_definitions(invalid_utf8, language), tuple)


@needs_extra
def test_huge_file_yields_nothing() -> None:
    body = b"def f():\n    pass\n"
    huge = body * (MAX_PARSE_BYTES // len(body) + 1)
    assert len(huge) > MAX_PARSE_BYTES
    assert parse_definitions(huge, "python") == ()
    assert [d.name for d in parse_definitions(body * 2, "python")] == ["f", "f"]
    assert parse_definitions(body, "python", max_bytes=4) == ()


@needs_extra
async def test_a_file_that_takes_too_long_yields_nothing(tmp_path: Path) -> None:
    crafted = b"[{(" * 350_000  # ~1 MB that keeps tree-sitter's error recovery busy for seconds
    started = time.perf_counter()
    assert parse_definitions(crafted, "go", timeout=0.1) == ()
    assert time.perf_counter() - started < 5
    # The cancelled parser is reset: the next file parses from its own start.
    assert _rows(parse_definitions(CASES["go"][0].encode(), "go")) == CASES["go"][1]

    (tmp_path / "slow.go").write_bytes(crafted)
    (tmp_path / "ok.go").write_text(CASES["go"][0])
    index = SymbolIndex(parse_timeout=0.1)
    tree = DirectoryTree(tmp_path)
    assert await index.definitions(tree, "slow.go") == ()
    assert await index.definitions(tree, "slow.go") == ()  # not cached: tried again
    assert _rows(await index.definitions(tree, "ok.go")) == CASES["go"][1]
    assert (index.stats.timeouts, index.stats.parsed) == (2, 1)


@needs_extra
def test_a_syntax_error_keeps_the_rest() -> None:
    source = (
        b"def good():\n    pass\n\ndef broken(:\n    pass\n\nclass After:\n    def m(self): pass\n"
    )
    names = [d.qualname for d in parse_definitions(source, "python")]
    assert names == ["good", "broken", "After", "After.m"]
    c_source = CASES["c"][0].encode()  # `if (x {` in broken(): the functions after it remain
    assert [d.name for d in parse_definitions(c_source, "c")][-2:] == ["broken", "after_error"]


@needs_extra
def test_unknown_language_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="no grammar for 'cobol'"):
        parse_definitions(b"x", "cobol")


# -- the index over real repositories -------------------------------------------------------------

SOURCES = {
    "pkg/parser.py": CASES["python"][0],
    "pkg/copy_of_parser.py": CASES["python"][0],  # same content: parsed once
    "web/widget.js": CASES["javascript"][0],
    "server/server.go": CASES["go"][0],
    "native/list.c": CASES["c"][0],
    "native/box.cpp": CASES["cpp"][0],
    "crate/src/lib.rs": CASES["rust"][0],
    "docs/guide.md": "# def not_code():\n",
    "pkg/blob.py": b"\x00\x01\x02 def hidden(): pass\n",
    "pkg/huge.py": "def too_big():\n    pass\n" * (MAX_PARSE_BYTES // 20),
}


def _repo_with_sources(repo: Any, tmp_path: Path) -> Any:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.py").write_text("def secret():\n    pass\n")
    os.symlink(outside / "secret.py", repo.path / "escape.py")  # a link out of the tree
    os.symlink("pkg/parser.py", repo.path / "inside_link.py")  # a link within it
    repo.commit(dict(SOURCES), "sources")
    return repo


@needs_extra
async def test_index_on_a_commit_tree(repo: Any, workdir: Path, tmp_path: Path) -> None:
    _repo_with_sources(repo, tmp_path)
    async with TreePool(workdir=workdir) as pool, pool.tree_at(repo.path, "HEAD") as tree:
        index = SymbolIndex()
        got = await index.definitions(tree, "pkg/parser.py")
        assert _rows(got) == CASES["python"][1]
        assert _rows(await index.definitions(tree, "native/box.cpp")) == CASES["cpp"][1]
        assert [d.qualname for d in await index.definitions(tree, "src/app/core.py")] == [
            "parse_config",
            "parse_args",
            "Session",
            "Session.get",
        ]
        assert await index.definitions(tree, "inside_link.py") == got  # followed: inside
        for nothing in (
            "escape.py",  # a link out of the tree
            "pkg/blob.py",  # binary
            "pkg/huge.py",  # over the cap
            "docs/guide.md",  # no grammar
            "missing.py",
            "pkg",  # a directory
            "../outside/secret.py",
            "/etc/passwd.py",
            ".git/config.py",
        ):
            assert await index.definitions(tree, nothing) == (), nothing
        stats = index.stats
        assert stats.parsed == 3
        assert stats.failed == 0
        assert stats.skipped == 9

        found = await index.defining(
            tree, ["Parser", "Start", "make_node", "secret", "nope"], await tree.files()
        )
        assert found["nope"] == []
        assert found["secret"] == []
        assert [(p, d.qualname) for p, d in found["Parser"]] == [  # not inside_link.py: a link
            ("pkg/copy_of_parser.py", "Parser"),
            ("pkg/parser.py", "Parser"),
        ]
        assert [(p, d.qualname, d.line) for p, d in found["Start"]] == [
            ("server/server.go", "Server.Start", 32)
        ]
        assert [(p, d.kind) for p, d in found["make_node"]] == [("native/list.c", "function")]
        # 10 distinct contents (4 of the fixture's .py files, 6 here; the same content under
        # three paths once): each parsed once, the three asked for above not again.
        assert index.stats.parsed == 10
        before = index.stats
        await index.defining(tree, ["Parser"], await tree.files())
        assert index.stats.parsed == before.parsed
        assert index.stats.memory_hits > before.memory_hits


@needs_extra
async def test_disk_cache_is_reused_by_a_second_index(
    repo: Any, workdir: Path, tmp_path: Path
) -> None:
    _repo_with_sources(repo, tmp_path)
    cache = tmp_path / "cache"
    async with TreePool(workdir=workdir) as pool, pool.tree_at(repo.path, "HEAD") as tree:
        files = await tree.files()
        with SymbolIndex(cache) as first:
            one = await first.defining(tree, ["Parser", "Box", "new"], files)
            assert first.stats.parsed == 10  # distinct contents with a grammar
            assert first.stats.disk_hits == 0
            db = first.cache_file
        assert db is not None
        assert db.is_file()
        assert db.parent == cache / "symbols"
        assert owned_tag(db.parent) is not None  # a folder this package made and marked
        assert oct(db.parent.stat().st_mode & 0o777) == "0o700"

        with SymbolIndex(cache) as second:
            two = await second.defining(tree, ["Parser", "Box", "new"], files)
            assert two == one
            assert second.stats.parsed == 0  # nothing parsed: all from disk
            assert second.stats.disk_hits == 10

    # The cache is keyed by content: a folder holding the same files hits it as well.
    folder = tmp_path / "plain"
    (folder / "deep").mkdir(parents=True)
    (folder / "deep" / "renamed.py").write_text(CASES["python"][0])
    with SymbolIndex(cache, max_memory_files=0) as third:
        defs = await third.definitions(DirectoryTree(folder), "deep/renamed.py")
        assert _rows(defs) == CASES["python"][1]
        assert (third.stats.parsed, third.stats.disk_hits) == (0, 1)


@needs_extra
async def test_concurrent_requests_for_one_file_parse_it_once(
    repo: Any, workdir: Path, tmp_path: Path
) -> None:
    _repo_with_sources(repo, tmp_path)
    async with TreePool(workdir=workdir) as pool, pool.tree_at(repo.path, "HEAD") as tree:
        index = SymbolIndex()
        results = await asyncio.gather(
            *(index.definitions(tree, "native/box.cpp") for _ in range(8))
        )
        assert all(r == results[0] for r in results)
        assert results[0]
        assert index.stats.parsed == 1


@needs_extra
async def test_memory_cache_is_bounded(tmp_path: Path) -> None:
    for i in range(5):
        (tmp_path / f"m{i}.py").write_text(f"def f{i}():\n    pass\n")
    tree = DirectoryTree(tmp_path)
    index = SymbolIndex(max_memory_files=2)
    for _ in range(2):
        for i in range(5):
            assert [d.name for d in await index.definitions(tree, f"m{i}.py")] == [f"f{i}"]
    assert index.stats.parsed == 10  # cycling through 5 files with room for 2: never a hit
    assert await index.definitions(tree, "m4.py")
    assert index.stats.parsed == 10  # the most recent one stayed


@needs_extra
async def test_corrupted_cache_file_is_rebuilt(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.py").write_text("def a():\n    pass\n")
    tree = DirectoryTree(tmp_path / "src")
    cache = tmp_path / "cache"
    with SymbolIndex(cache) as index:
        assert await index.definitions(tree, "a.py")
        db = index.cache_file
    assert db is not None
    for name in (db.name + "-wal", db.name + "-shm"):
        (db.parent / name).unlink(missing_ok=True)
    db.write_bytes(b"this is not a database" * 100)
    with SymbolIndex(cache) as index:
        assert index.stats.rebuilt == 1
        assert [d.name for d in await index.definitions(tree, "a.py")] == ["a"]
        assert index.stats.parsed == 1
        assert index.stats.disk_errors == 0
    assert index.stats.rebuilt == 1  # still counted once closed
    with SymbolIndex(cache) as index:  # and the rebuilt file serves the next one
        assert await index.definitions(tree, "a.py")
        assert (index.stats.disk_hits, index.stats.rebuilt) == (1, 0)


@needs_extra
def test_a_cache_folder_we_did_not_make_is_refused(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    (cache / "symbols").mkdir(parents=True)
    (cache / "symbols" / "definitions.sqlite3").write_text("someone else's")
    with pytest.raises(SymbolCacheError, match="not made by worktree-sandbox"):
        SymbolIndex(cache)
    assert (cache / "symbols" / "definitions.sqlite3").read_text() == "someone else's"
    os.symlink(tmp_path / "elsewhere", cache / "other")
    (cache / "symbols").rename(cache / "theirs")
    os.symlink(cache / "theirs", cache / "symbols")  # a link in its place: refused too
    with pytest.raises(SymbolCacheError):
        SymbolIndex(cache)


_WRITER = """
import asyncio, sys
from worktree_sandbox import DirectoryTree, SymbolIndex

async def main(cache, folder):
    tree = DirectoryTree(folder)
    with SymbolIndex(cache) as index:
        for _ in range(3):
            await index.defining(tree, ["f0"], [f"m{i}.py" for i in range(40)])
        s = index.stats
        print(s.parsed + s.disk_hits, s.disk_errors, s.failed)

asyncio.run(main(sys.argv[1], sys.argv[2]))
"""


@needs_extra
def test_several_processes_share_one_cache(tmp_path: Path) -> None:
    folder = tmp_path / "src"
    folder.mkdir()
    for i in range(40):
        (folder / f"m{i}.py").write_text(f"def f{i}():\n    pass\n")
    cache = tmp_path / "cache"  # not made yet: both processes race to make it
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _WRITER, str(cache), str(folder)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(3)
    ]
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        assert out.split() == ["40", "0", "0"]
    assert [p.name for p in cache.iterdir()] == ["symbols"]  # no leftover holder folders

    async def read_back() -> tuple[int, int]:
        with SymbolIndex(cache) as index:
            await index.defining(DirectoryTree(folder), [], [f"m{i}.py" for i in range(40)])
            return index.stats.parsed, index.stats.disk_hits

    assert asyncio.run(read_back()) == (0, 40)


@needs_extra
def test_readme_example_runs(repo: Any) -> None:
    """The README's example, which install-alone skips (no extra there), runs here."""
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    blocks = [b for b in readme.split("```python\n")[1:] if "SymbolIndex" in b.split("```")[0]]
    assert len(blocks) == 1, "the README has one example of the definition index"
    code = blocks[0].split("```")[0]
    out = io.StringIO()
    cwd = os.getcwd()
    os.chdir(repo.path)
    try:
        with contextlib.redirect_stdout(out):
            exec(compile(code, "README.md", "exec"), {"__name__": "readme"})
    finally:
        os.chdir(cwd)
    printed = out.getvalue().splitlines()
    assert printed == [
        "Definition(name='parse', qualname='Parser.parse', kind='method', line=2, end_line=2, "
        "name_line=2)",
        "src/app/core.py:4: function parse_config",
        "['parse_config']",
    ]


# -- without the extra ----------------------------------------------------------------------------


def test_missing_extra_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """Runs with or without the extra: the import of tree-sitter is made to fail."""
    monkeypatch.setitem(sys.modules, "tree_sitter", None)  # `import tree_sitter` -> ImportError
    monkeypatch.setitem(sys.modules, "tree_sitter_language_pack", None)
    monkeypatch.delitem(sys.modules, "worktree_sandbox._symbol_rules", raising=False)
    assert symbols_available() is False
    with pytest.raises(SymbolsUnavailable) as info:
        parse_definitions(b"def f(): pass\n", "python")
    assert EXTRA in str(info.value)
    assert isinstance(info.value, ImportError)
    assert isinstance(info.value, SandboxError)
    with pytest.raises(SymbolsUnavailable, match=r"worktree-sandbox\[symbols\]"):
        SymbolIndex()
    assert language_of("a.py") == "python"  # what needs no grammar still works
    assert enclosing([Definition("f", "f", "function", 1, 2)], 1)


def test_importing_the_package_does_not_import_tree_sitter() -> None:
    probe = (
        "import sys, worktree_sandbox; "
        "from worktree_sandbox import SymbolIndex, parse_definitions, language_of; "
        "bad = [m for m in sys.modules if m.startswith('tree_sitter') or m.endswith('_rules')]; "
        "assert not bad, bad"
    )
    subprocess.run([sys.executable, "-c", probe], check=True, timeout=60)
