"""A room page read from its notebook: the notebook stays the one source of the page's prose and
of where each live part goes, and the room server (`workbench.explore.server`) runs none of its
code.

A page is the notebook's cells in order: a markdown cell becomes HTML (markdown-it, raw HTML
escaped; a cell tagged `room-hidden` is left out), and a code cell whose last statement is one of
the calls below becomes a live part; every other code cell (imports, parameters, the objects the
calls use, what the tests record) shows nothing, since they have no output:

| the cell's call | the live part |
| --- | --- |
| `explorer(NAME)` | the explorer, on the `Setting` NAME was built as |
| `NAME.part(N)` | workshop part N (question, prediction, Reveal) |
| `NAME.scoreboard()` | the workshop's score |
| `NAME.free_exploration()` | the workshop's "Open the explorer" |

The objects the calls use are read from the notebook's own assignments (`state = Setting(TEMPLATE,
SEED, ...)`, `ws = Workshop(ENCODER, ...)`): each argument is a parameter of the cell tagged
`parameters` or a literal, so the page starts where the notebook does.
"""

from __future__ import annotations

import ast
import inspect
import json
import os
from dataclasses import dataclass
from pathlib import Path

from markdown_it import MarkdownIt

from workbench.common.io import InputError

HIDDEN = "room-hidden"  # a cell with this tag is not shown in a room page
BUILDERS = ("Setting", "Workshop")  # the constructors a page's objects may be built with


class PageError(InputError):
    """A notebook the room cannot read as a page (names the notebook and the cell)."""


@dataclass(frozen=True)
class Section:
    """One piece of a page: ("md", html) or a live part ("explorer", "part", "score", "free")
    with its argument (the part's key)."""

    kind: str
    arg: str = ""

    def __repr__(self) -> str:
        return f"Section({self.kind}{': ' + self.arg[:30] if self.arg else ''})"


@dataclass(frozen=True)
class Page:
    """A notebook as a room page: its title, its sections in order, its parameters (the
    `parameters` cell's values) and the objects its live parts use, as (constructor, args,
    kwargs) with the parameters already put in."""

    name: str
    title: str
    sections: tuple[Section, ...]
    params: dict
    objects: dict

    def arguments(self, cls) -> dict:
        """The arguments, by name, the notebook builds its one `cls` object with (the
        parameters put in)."""
        found = [(a, k) for c, a, k in self.objects.values() if c == cls.__name__]
        if len(found) != 1:
            raise PageError(f"{len(found)} objects built with {cls.__name__}", path=self.name)
        args, kwargs = found[0]
        try:
            return dict(inspect.signature(cls).bind(*args, **kwargs).arguments)
        except TypeError as e:
            raise PageError(f"{cls.__name__}{args}: {e}", path=self.name) from None

    def __repr__(self) -> str:
        return f"Page({self.name}: {len(self.sections)} sections)"


_MD = MarkdownIt("commonmark", {"html": False}).enable("table")


def markdown(text: str) -> str:
    """A markdown cell as HTML (raw HTML in it is escaped, not rendered)."""
    return _MD.render(text)


def _source(cell: dict) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else str(src)


def _literal(node: ast.expr, params: dict, where: str, path: str):
    if isinstance(node, ast.Name):
        if node.id not in params:
            raise PageError(f"{where}: {node.id} is not a parameter of the notebook", path=path)
        return params[node.id]
    try:
        return ast.literal_eval(node)
    except ValueError:
        raise PageError(
            f"{where}: an argument is neither a parameter nor a literal", path=path
        ) from None


def _call_part(stmt: ast.stmt) -> Section | None:
    """The live part a cell's last statement calls, if any."""
    if not isinstance(stmt, ast.Expr) or not isinstance(stmt.value, ast.Call):
        return None
    call = stmt.value
    f = call.func
    if isinstance(f, ast.Name) and f.id == "explorer" and call.args:
        arg = call.args[0]
        return Section("explorer", arg.id) if isinstance(arg, ast.Name) else None
    if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name):
        if f.attr == "part" and call.args and isinstance(call.args[0], ast.Constant):
            return Section("part", str(call.args[0].value))
        if f.attr == "scoreboard":
            return Section("score", f.value.id)
        if f.attr == "free_exploration":
            return Section("free", f.value.id)
    return None


def read_page(path: str | os.PathLike) -> Page:
    """A notebook (.ipynb) as a room page; a notebook the room cannot read is a PageError naming
    it and the cell."""
    path = Path(path)
    try:
        nb = json.loads(path.read_text(encoding="utf-8"))
        cells = nb["cells"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise PageError(f"not a notebook ({e})", path=str(path)) from None
    params: dict = {}
    objects: dict = {}
    sections: list[Section] = []
    title = path.stem
    for k, cell in enumerate(cells):
        src = _source(cell)
        tags = cell.get("metadata", {}).get("tags", [])
        where = f"cell {k}"
        if cell.get("cell_type") == "markdown":
            if HIDDEN not in tags and src.strip():
                if title == path.stem and src.lstrip().startswith("# "):
                    title = src.lstrip()[2:].splitlines()[0].strip()
                sections.append(Section("md", markdown(src)))
            continue
        if cell.get("cell_type") != "code":
            continue
        try:
            tree = ast.parse(src)
        except SyntaxError as e:
            raise PageError(f"{where}: {e.msg}", path=str(path), line=e.lineno) from None
        for stmt in tree.body:
            if "parameters" in tags and isinstance(stmt, ast.Assign):
                for t in stmt.targets:
                    if isinstance(t, ast.Name):
                        params[t.id] = _literal(stmt.value, params, where, str(path))
            elif (
                isinstance(stmt, ast.Assign)
                and len(stmt.targets) == 1
                and isinstance(stmt.targets[0], ast.Name)
                and isinstance(stmt.value, ast.Call)
                and isinstance(stmt.value.func, ast.Name)
                and stmt.value.func.id in BUILDERS
            ):
                call = stmt.value
                args = tuple(_literal(a, params, where, str(path)) for a in call.args)
                kwargs = {
                    kw.arg: _literal(kw.value, params, where, str(path))
                    for kw in call.keywords
                    if kw.arg
                }
                objects[stmt.targets[0].id] = (call.func.id, args, kwargs)
        part = _call_part(tree.body[-1]) if tree.body and HIDDEN not in tags else None
        if part is not None:
            sections.append(part)
    for s in sections:
        if s.kind == "explorer" and s.arg not in objects:
            raise PageError(
                f"explorer({s.arg}): {s.arg} is not built in the notebook", path=str(path)
            )
    return Page(path.name, title, tuple(sections), params, objects)
