"""How the CLI writes: consoles that never wrap or cut into a pipe, and the --output formats of listing commands."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterable
from enum import Enum
from typing import Annotated, Any, Optional

import typer
import yaml
from pydantic import BaseModel
from rich.console import Console, ConsoleDimensions, RenderableType
from rich.markup import escape
from rich.rule import Rule
from rich.text import Text

# Wide enough that no table is folded and no line broken: what a script greps for is on one line, whole.
_PIPE_WIDTH = 10_000


class _Console(Console):
    """A rich Console sized by the terminal it writes to, and unbounded when it writes to a pipe or a file (rich's
    own default is 80 columns there, or the width of whichever standard stream is a terminal)."""

    @property
    def size(self) -> ConsoleDimensions:
        measured = super().size
        if self.is_terminal or self._width is not None:
            return measured
        return ConsoleDimensions(_PIPE_WIDTH, measured.height)

    @size.setter
    def size(self, new_size: tuple[int, int]) -> None:
        self._width, self._height = new_size


console: Console = _Console()
err: Console = _Console(stderr=True)


def section(out: Console, title: str) -> None:
    """A heading between two rules: as wide as the terminal, or piped, a little wider than its title (a pipe's
    console is 10,000 columns wide, and a rule that wide is one line of dashes nobody can read)."""
    if out.is_terminal:
        out.rule(title)
    else:
        out.print(Rule(title), width=min(out.width, max(80, Text.from_markup(title).cell_len + 8)))


class Output(str, Enum):
    table = "table"
    json = "json"
    yaml = "yaml"


OutputOption = Annotated[Optional[Output], typer.Option(  # noqa: UP007 -- typer
    "--output", "-o", help="table for people; json (one document a line) or yaml (a stream of documents) for scripts",
    case_sensitive=False, show_default="table")]
JsonFlag = Annotated[bool, typer.Option("--json", help="the same as --output json")]


def fail(message: str, code: int = 1) -> typer.Exit:
    """Says what went wrong in one line on stderr; raise what it returns to exit with ``code``."""
    err.print(f"[red]error:[/red] {escape(message)}", soft_wrap=True)
    return typer.Exit(code)


def confirm(yes: bool, refused: str) -> None:
    """Ask before something that cannot be undone, unless ``yes``; ``refused``: what is said when nothing was done.
    Without a terminal nothing can be asked: refused, with the flag that says yes."""
    if yes:
        return
    if not sys.stdin.isatty():
        raise fail("not a terminal, so nothing can be confirmed: pass --yes to go ahead")
    if not typer.confirm("go ahead?", default=False):
        raise fail(refused)


def chosen(output: Output | None, as_json: bool) -> Output:
    if as_json and output not in (None, Output.json):
        raise typer.BadParameter("--json contradicts --output " + output.value, param_hint="--json")  # type: ignore[union-attr]
    return Output.json if as_json else (output or Output.table)


def document(item: BaseModel | dict[str, Any]) -> dict[str, Any]:
    return item.model_dump(mode="json", by_alias=True, exclude_none=True) if isinstance(item, BaseModel) else item


def emit(items: Iterable[BaseModel | dict[str, Any]], output: Output, table: Callable[[], RenderableType]) -> None:
    """Print ``items`` as ``output``; ``table`` renders them for people."""
    if output is Output.table:
        console.print(table())
        return
    documents = [document(item) for item in items]
    if output is Output.json:
        for d in documents:
            print(json.dumps(d), flush=True)
    else:
        print(yaml.safe_dump_all(documents, sort_keys=False, allow_unicode=True), end="", flush=True)


def emit_one(item: BaseModel | dict[str, Any], output: Output) -> None:
    """One document of a stream (--watch): a JSON line, or a YAML document with its separator."""
    d = document(item)
    if output is Output.yaml:
        print("---\n" + yaml.safe_dump(d, sort_keys=False, allow_unicode=True), end="", flush=True)
    else:
        print(json.dumps(d), flush=True)
