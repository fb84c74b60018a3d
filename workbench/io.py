"""The shared floor for files: the InputError family, atomic writes, JSONL and CSV.

Every reader in the workbench raises an `InputError` (or a subclass) that names the file, the
line and the field; every writer goes through `atomic_path`, so a file is replaced whole or
not at all.
"""

from __future__ import annotations

import gc
import json
import os
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path


class InputError(ValueError):
    """Bad input; the message names the file, the line and the field where they are known."""

    def __init__(
        self,
        message: str,
        *,
        path: str | os.PathLike | None = None,
        line: int | None = None,
        field: str | None = None,
    ):
        where = [str(path)] if path is not None else []
        if line is not None:
            where.append(f"line {line}")
        if field is not None:
            where.append(f"field '{field}'")
        super().__init__(": ".join([*where, message]))
        self.message, self.path, self.line, self.field = message, path, line, field

    def located(self, path=None, line=None) -> InputError:
        """The same error with the file and line filled in (where the raiser did not know them)."""
        return type(self)(
            self.message,
            path=self.path if self.path is not None else path,
            line=self.line if self.line is not None else line,
            field=self.field,
        )


@contextmanager
def paused_gc() -> Iterator[None]:
    """Pause the cyclic garbage collector while building many small, acyclic objects (a log or
    store read whole): its passes over the growing heap otherwise cost about as much as the
    building itself. Reference counting still frees everything; the collector resumes after."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


# --- atomic writes ---------------------------------------------------------------------------

_UMASK = os.umask(0)
os.umask(_UMASK)


@contextmanager
def atomic_path(path: str | os.PathLike, suffix: str = ".tmp") -> Iterator[Path]:
    """A temporary path beside `path`; on success it replaces `path` in one rename.

    On any error (or Ctrl-C) the temporary file is removed and `path` is left as it was.
    `suffix` is the temporary file's extension (for writers that insist on one).
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=suffix)
    os.close(fd)
    try:
        yield Path(tmp)
        os.chmod(tmp, 0o666 & ~_UMASK)  # mkstemp makes 0600; give the file normal permissions
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> Path:
    """Write a file whole or not at all."""
    with atomic_path(path) as tmp:
        tmp.write_bytes(data)
    return Path(path)


def atomic_write_text(path: str | os.PathLike, text: str) -> Path:
    """Write a UTF-8 text file (LF line ends) whole or not at all."""
    return atomic_write_bytes(path, text.encode("utf-8"))


# --- JSONL -----------------------------------------------------------------------------------


def read_jsonl(path: str | os.PathLike, error: type[InputError] = InputError):
    """(line number, parsed JSON) for each non-blank line of a JSONL file; an unreadable file or
    a line that is not JSON raises `error` naming the file and the line."""
    path = str(path)
    try:
        fh = open(path, encoding="utf-8")
    except OSError as e:
        raise error(f"cannot open: {e.strerror}", path=path) from None
    with fh:
        for lineno, raw in enumerate(fh, start=1):
            if not raw.strip():
                continue
            try:
                yield lineno, json.loads(raw)
            except json.JSONDecodeError as e:
                raise error(
                    f"invalid JSON ({e.msg} at column {e.colno})", path=path, line=lineno
                ) from None


def write_jsonl(records: Iterable[dict], path: str | os.PathLike) -> Path:
    """One JSON object a line (keys in the order given), atomically."""
    return atomic_write_text(path, "".join(json.dumps(r) + "\n" for r in records))


class UniqueIds:
    """Remembers where each id was first seen; a repeat raises `error` naming both places."""

    def __init__(self, what: str, error: type[InputError] = InputError, path=None):
        self.what, self.error, self.path = what, error, path
        self.seen: dict[str, int | None] = {}

    def add(self, key: str, line: int | None = None, field: str = "id") -> None:
        if key in self.seen:
            first = self.seen[key]
            where = f" (first on line {first})" if first is not None else ""
            raise self.error(
                f"duplicate {self.what} id {key!r}{where}", path=self.path, line=line, field=field
            )
        self.seen[key] = line


# --- CSV -------------------------------------------------------------------------------------


def write_csv(df, path: str | os.PathLike, float_format: str | None = "%.4f") -> Path:
    """A DataFrame as CSV (no index, LF line ends, fixed float format), atomically."""
    text = df.to_csv(index=False, float_format=float_format, lineterminator="\n")
    return atomic_write_text(path, text)
