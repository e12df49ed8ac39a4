"""The engine's modules that a published agent runs, as standalone files beside the bundled
`run_agent.py`.

A published agent runs without Sleuth installed, yet must search and decode as the engine
does. Rather than a second, hand-written copy, the publisher writes each module the script
needs (the index and its search, the results as the model sees them, the protocol, the rules
of decoding) from the engine's own source: an import from another bundled module stays an
import (of its file beside it); any other import from `engine` is replaced by the
definitions it imports, with what those use of their own module, copied as they are. A name
pulled in that the module already defines otherwise is an error, never a silent shadow; so
is a definition that cannot be found.
"""

from __future__ import annotations

import ast
import importlib
import inspect
from dataclasses import dataclass, field

# The engine modules `run_agent.py` imports, and the file each is written to beside it.
BUNDLED_MODULES = {
    "engine.search.index": "search_index.py",
    "engine.search.tool": "search_tool.py",
    "engine.agent.protocol": "agent_protocol.py",
    "engine.agent.tool": "agent_tool.py",
    "engine.agent.greedy_rules": "greedy_rules.py",
    "engine.packs.filings.decoding": "filings_decoding.py",  # the filings pack's rules
    "engine.packs.filings.rows": "filings_rows.py",
    "engine.packs.filings.names": "filings_names.py",
    "engine.agent.grounding": "grounding.py",
}
ENGINE_PACKAGE = "engine"


class BundleError(ValueError):
    """A rule module that cannot stand alone as written."""


@dataclass
class _Source:
    """One module's text, its top-level statements and the names each binds."""

    name: str
    text: str
    tree: ast.Module
    lines: list[str]
    defined: dict[str, ast.stmt] = field(default_factory=dict)

    @classmethod
    def of(cls, name: str) -> _Source:
        text = inspect.getsource(importlib.import_module(name))
        tree = ast.parse(text)
        source = cls(name, text, tree, text.splitlines(keepends=True))
        for node in tree.body:
            for bound in _bound_names(node):
                source.defined[bound] = node
        return source

    def segment(self, node: ast.stmt) -> str:
        """The statement's text, its decorators included."""
        first = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])
        return "".join(self.lines[first - 1 : node.end_lineno])


def _bound_names(node: ast.stmt) -> list[str]:
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return [node.name]
    if isinstance(node, ast.Assign | ast.AnnAssign):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        return [n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)]
    if isinstance(node, ast.Import | ast.ImportFrom):
        return [(a.asname or a.name).split(".")[0] for a in node.names]
    return []


def _imported_as(node: ast.stmt, name: str) -> tuple | None:
    """What an import statement binds `name` to, as (module, original name); None for any
    other statement. Two modules importing `dataclass` from `dataclasses` bind the same
    object, whatever else each line imports."""
    if isinstance(node, ast.ImportFrom) and not node.level:
        for alias in node.names:
            if (alias.asname or alias.name) == name:
                return (node.module, alias.name)
    if isinstance(node, ast.Import):
        for alias in node.names:
            if (alias.asname or alias.name.split(".")[0]) == name:
                return (alias.name, None)
    return None


def _engine_import(node: ast.stmt) -> bool:
    return isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == ENGINE_PACKAGE


def _type_checking_block(node: ast.stmt) -> bool:
    return isinstance(node, ast.If) and ast.unparse(node.test) in (
        "TYPE_CHECKING",
        "typing.TYPE_CHECKING",
    )


class _Bundle:
    """The definitions pulled into one module, in an order that defines each before use."""

    def __init__(self, target: _Source) -> None:
        self.target = target
        self.imports: dict[str, list[str]] = {}  # a bundled sibling's file stem -> names
        self.sources: dict[str, _Source] = {}
        self.pulled: dict[str, tuple[str, str]] = {}  # name -> (its module, its text)
        self.blocks: list[str] = []
        self.done: set[tuple[str, int]] = set()

    def source(self, module: str) -> _Source:
        if module not in self.sources:
            self.sources[module] = _Source.of(module)
        return self.sources[module]

    def pull(self, module: str, name: str) -> None:
        if module != self.target.name and module in BUNDLED_MODULES:
            self._import(module, name)
            return
        source = self.source(module)
        node = source.defined.get(name)
        if node is None:
            raise BundleError(f"{module} defines no {name!r} to bundle")
        if _engine_import(node):  # imported there from another engine module
            self.pull(node.module, next(a.name for a in node.names if (a.asname or a.name) == name))
            return
        key = (module, node.lineno)
        if key in self.done:
            return
        self.done.add(key)
        text = source.segment(node)
        if isinstance(node, ast.Import | ast.ImportFrom) and text in self.target.lines:
            return  # the module imports it itself
        used = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)} - set(_bound_names(node))
        for other in sorted(used & set(source.defined)):
            self.pull(module, other)
        for bound in _bound_names(node):
            self._claim(bound, module, text, node)
        self.blocks.append(text)

    def _import(self, module: str, name: str) -> None:
        """`name` from a bundled sibling: imported from its file, not copied."""
        own = self.target.defined.get(name)
        if own is not None and not _engine_import(own):
            raise BundleError(f"{module}.{name} would shadow {self.target.name}'s own {name}")
        names = self.imports.setdefault(BUNDLED_MODULES[module].removesuffix(".py"), [])
        if name not in names:
            names.append(name)
        self.pulled[name] = (module, "")

    def header(self) -> str:
        """The imports from bundled siblings, then the copied definitions."""
        lines = [
            f"from {stem} import {', '.join(sorted(names))}\n"
            for stem, names in sorted(self.imports.items())
        ]
        return "".join(lines) + ("\n" if lines and self.blocks else "") + "\n\n".join(self.blocks)

    def _claim(self, name: str, module: str, text: str, node: ast.stmt) -> None:
        own = self.target.defined.get(name)
        if (
            own is not None
            and not _engine_import(own)
            and self.target.segment(own) != text
            and _imported_as(own, name) != _imported_as(node, name)
        ):
            raise BundleError(f"{module}.{name} would shadow {self.target.name}'s own {name}")
        earlier = self.pulled.get(name)
        if earlier is not None and earlier != (module, text) and not text.startswith("import"):
            if not text.startswith("from"):
                raise BundleError(f"{name} is pulled from both {earlier[0]} and {module}")
        self.pulled[name] = (module, text)


def standalone_source(module: str) -> str:
    """`module`'s source with each import from the engine replaced by the definitions it
    imports (and what they use of their own module), and `if TYPE_CHECKING:` blocks
    dropped: a file that runs with no `engine` package at hand."""
    target = _Source.of(module)
    bundle = _Bundle(target)
    replaced: dict[int, str] = {}  # first line -> text; other lines of a node: ""
    first_engine_import = None
    for node in target.tree.body:
        if _engine_import(node):
            for alias in node.names:
                bundle.pull(node.module, alias.name)
            first_engine_import = first_engine_import or node.lineno
        elif not _type_checking_block(node):
            continue
        for line in range(node.lineno, node.end_lineno + 1):
            replaced[line] = ""
    if first_engine_import is not None:
        header = f"# From the engine, as `{module}` imports them (engine/publishing/bundle.py):\n"
        replaced[first_engine_import] = header + bundle.header() + "\n"
    text = "".join(replaced.get(number, line) for number, line in enumerate(target.lines, start=1))
    generated = f"# Generated from the engine's `{module}` by the publisher: not edited by hand.\n"
    return generated + text
