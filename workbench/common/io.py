"""The shared floor for files: the InputError family, atomic writes, JSONL and CSV.

Every reader in the workbench raises an `InputError` (or a subclass) that names the file, the
line and the field; every writer goes through `atomic_path`, so a file is replaced whole or
not at all, and a set of files (a suite's runs.csv + summary.csv) goes through `atomic_dir`,
so the set is replaced together or not at all.

Readers take bytes and decode them one line at a time, so a file that is not UTF-8 is an error
naming the line; JSON deeper than `MAX_JSON_DEPTH` levels, NaN, Infinity, over-long numbers
and lone surrogates are errors too. Writers never write NaN or Infinity into JSON.
"""

from __future__ import annotations

import ctypes
import errno
import io
import json
import os
import re
import shutil
import signal
import sys
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from workbench.common.strictjson import strict_json


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


class OutputError(InputError):
    """An output cannot be written (a folder where a file should go, no permission, a full disk);
    the message names the output path."""


# --- crash points (for tests) ----------------------------------------------------------------

CRASH_ENV = "WORKBENCH_TEST_CRASH_AT"
_crash_count = 0


def crash_point(name: str) -> None:
    """A point where an atomic writer has just changed something on disk.

    For tests only: with the environment variable WORKBENCH_TEST_CRASH_AT=N the process kills
    itself with SIGKILL at the N-th crash point it reaches (counting from 1), after printing
    `crash point N: NAME` on stderr, so a test can stop a writer at every step and check what a
    reader would find. Unset (always, outside tests) this does nothing.
    """
    global _crash_count
    at = os.environ.get(CRASH_ENV)
    if not at:
        return
    _crash_count += 1
    if str(_crash_count) == at.strip():
        sys.stderr.write(f"crash point {_crash_count}: {name}\n")
        sys.stderr.flush()
        os.kill(os.getpid(), signal.SIGKILL)


# --- atomic writes ---------------------------------------------------------------------------

_UMASK = os.umask(0)
os.umask(_UMASK)


def _not_a_folder(path: Path) -> Path | None:
    """The first existing ancestor of `path` that is not a folder, if any."""
    for parent in reversed(path.parents):
        if parent.exists() and not parent.is_dir():
            return parent
    return None


def check_output_file(path: str | os.PathLike) -> Path:
    """Raise OutputError if `path` cannot become a file (it is a folder, or under a file)."""
    p = Path(path)
    if str(path).strip() == "":
        raise OutputError("is empty; give a file name", path=path)
    if p.is_dir():
        raise OutputError("is a folder; give a file name", path=path)
    bad = _not_a_folder(p)
    if bad is not None:
        raise OutputError(f"cannot write under {bad}: it is a file, not a folder", path=path)
    return p


def _output_error(e: OSError, path) -> OutputError:
    return OutputError(f"cannot write: {e.strerror or e}", path=path)


@contextmanager
def atomic_path(path: str | os.PathLike, suffix: str = ".tmp") -> Iterator[Path]:
    """A temporary path beside `path`; on success it replaces `path` in one rename.

    On any error (or Ctrl-C) the temporary file is removed and `path` is left as it was. A
    process killed outright (SIGKILL) may leave the hidden temporary `.NAME.*.tmp` beside it,
    never a partial NAME. OS errors on the output become an `OutputError` naming `path`.
    `suffix` is the temporary file's extension (for writers that insist on one).
    """
    path = check_output_file(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=suffix)
        os.close(fd)
    except OSError as e:
        raise _output_error(e, path) from None
    try:
        yield Path(tmp)
        crash_point(f"written {path.name} (not yet in place)")
        try:
            os.chmod(tmp, 0o666 & ~_UMASK)  # mkstemp makes 0600; give the file normal permissions
            os.replace(tmp, path)
        except OSError as e:
            raise _output_error(e, path) from None
        crash_point(f"replaced {path.name}")
    except OSError as e:
        if e.filename is not None and os.fspath(e.filename) == tmp:
            raise _output_error(e, path) from None  # e.g. a full disk while writing tmp
        raise
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
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError as e:
        raise OutputError(
            f"cannot write: text holds a character UTF-8 cannot encode ({e.reason})", path=path
        ) from None
    return atomic_write_bytes(path, data)


# --- atomic sets of files --------------------------------------------------------------------
#
# The guarantee: while `atomic_dir(FOLDER)` writes a set of files (say runs.csv and
# summary.csv), a reader of FOLDER sees either every file of the old set or every file of the
# new set, never a mix, whatever kills the writer (an error, Ctrl-C, SIGKILL) at any moment.
# How: the new set is written into a hidden sibling folder `.FOLDER.wbPID-*.tmp`; the files of
# FOLDER that are not in the new set are hard-linked into it (so they stay, untouched); then
# the two folders trade places in one atomic step (Linux renameat2 RENAME_EXCHANGE) and the old
# one is removed. A FOLDER that does not exist yet is created by one rename.
# Limits, stated plainly:
# - FOLDER must hold files only (a subfolder cannot be hard-linked) and must not be the
#   current folder (a shell inside it would be left in a deleted folder): both are errors.
# - A file another process adds to FOLDER while the set is being written can be lost.
# - Without RENAME_EXCHANGE (not Linux, or a filesystem without it) FOLDER is moved aside and
#   the new one renamed in: for that instant, or after a kill between the two renames, FOLDER
#   is absent (never mixed) and the old set waits in `.FOLDER.wbPID-*.old`; the next write
#   puts it back first.
# - Process death only: nothing is fsync'ed, so a power cut may still lose recent writes.
# A kill leaves the hidden sibling behind; the next `atomic_dir` on the same FOLDER removes
# those of processes no longer alive.

_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def _exchange(a: str, b: str) -> bool:
    """Swap two paths atomically (Linux renameat2); False where the system cannot."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        fn = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):
        return False
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    if fn(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP):  # not supported here
        return False
    raise OSError(err, os.strerror(err), b)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _clear_leftovers(folder: Path) -> None:
    """Remove what killed writers left beside `folder`; put back an old set left aside."""
    pat = re.compile(re.escape(f".{folder.name}.wb") + r"(\d+)-.*\.(tmp|old)$")
    try:
        siblings = sorted(folder.parent.iterdir())
    except OSError:
        return
    for sib in siblings:
        m = pat.fullmatch(sib.name)
        if not m or (_alive(int(m.group(1))) and int(m.group(1)) != os.getpid()):
            continue  # not ours, or a live writer's
        if m.group(2) == "old" and not folder.exists():
            os.rename(sib, folder)  # a kill between the two fallback renames: restore the old set
        else:
            shutil.rmtree(sib, ignore_errors=True)


def check_output_dir(path: str | os.PathLike) -> Path:
    """Raise OutputError if `path` cannot hold an atomic set of files (see `atomic_dir`)."""
    p = Path(path)
    if str(path).strip() == "":
        raise OutputError("is empty; give a folder name", path=path)
    if p.exists() and not p.is_dir():
        raise OutputError("exists and is not a folder", path=path)
    bad = _not_a_folder(p)
    if bad is not None:
        raise OutputError(f"cannot write under {bad}: it is a file, not a folder", path=path)
    real = Path(os.path.realpath(p))
    cwd = Path(os.path.realpath(os.getcwd()))
    if real == cwd or real in cwd.parents:
        raise OutputError(
            "is the current folder (or holds it); write the files to a folder of their own",
            path=path,
        )
    if p.is_dir():
        subs = sorted(e.name for e in os.scandir(p) if e.is_dir(follow_symlinks=False))
        if subs:
            raise OutputError(
                f"holds subfolders ({', '.join(subs[:3])}); an output folder holds files only",
                path=path,
            )
    return p


@contextmanager
def atomic_dir(path: str | os.PathLike) -> Iterator[Path]:
    """A staging folder: files written into it replace the same names in `path` all together.

    Files of `path` not written here are kept. On any error (or Ctrl-C) `path` is left as it
    was. See the comment above for the guarantee and its limits.
    """
    check_output_dir(path)
    folder = Path(os.path.realpath(path))
    try:
        folder.parent.mkdir(parents=True, exist_ok=True)
        _clear_leftovers(folder)
        stage = Path(
            tempfile.mkdtemp(
                dir=folder.parent, prefix=f".{folder.name}.wb{os.getpid()}-", suffix=".tmp"
            )
        )
    except OSError as e:
        raise _output_error(e, path) from None
    try:
        crash_point(f"staging {folder.name}")
        yield stage
        try:
            _commit(stage, folder)
        except OSError as e:
            raise _output_error(e, path) from None
    finally:
        shutil.rmtree(stage, ignore_errors=True)


def _commit(stage: Path, folder: Path) -> None:
    if folder.exists():
        os.chmod(stage, os.stat(folder).st_mode & 0o7777)
        new = {e.name for e in os.scandir(stage)}
        for entry in sorted(os.scandir(folder), key=lambda e: e.name):
            if entry.name in new:
                continue
            if entry.is_dir(follow_symlinks=False):
                raise IsADirectoryError(21, "holds a subfolder; an output folder holds files only")
            try:
                os.link(entry.path, stage / entry.name, follow_symlinks=False)
            except OSError:
                shutil.copy2(entry.path, stage / entry.name, follow_symlinks=False)
        crash_point(f"kept the other files of {folder.name}")
        if _exchange(str(stage), str(folder)):
            crash_point(f"swapped {folder.name}")
            return  # `stage` now holds the old set; the caller removes it
        aside = stage.with_suffix(".old")
        os.rename(folder, aside)
        crash_point(f"moved the old {folder.name} aside")
        os.rename(stage, folder)
        crash_point(f"renamed the new {folder.name} in")
        shutil.rmtree(aside, ignore_errors=True)
    else:
        os.chmod(stage, 0o777 & ~_UMASK)
        os.rename(stage, folder)
        crash_point(f"created {folder.name}")


def write_csv_set(
    out_dir: str | os.PathLike, frames: dict, float_format: str | None = "%.4f"
) -> dict[str, Path]:
    """Several DataFrames as CSV files ({file name: frame}) in one folder, all or nothing."""
    out = Path(out_dir)
    with atomic_dir(out) as stage:
        for name, df in frames.items():
            write_csv(df, stage / name, float_format=float_format)
    return {name: out / name for name in frames}


# --- reading: bytes decoded line by line, bounded JSON ---------------------------------------


def parse_json(text: str, error: type[InputError] = InputError, path=None, line=None):
    """Parse one JSON text strictly: depth <= MAX_JSON_DEPTH, no NaN/Infinity, no over-long
    numbers, no lone surrogates; anything else raises `error` naming path, line (and field)."""
    return strict_json(text, error, path, line)


def _decode(raw: bytes, error, path, line) -> str:
    if line == 1 and raw.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise error(
            "the file is UTF-16 (it starts with a byte-order mark); save it as UTF-8",
            path=path,
            line=line,
        )
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise error(
            f"not UTF-8 text: byte 0x{raw[e.start]:02x} at byte {e.start + 1} of the line "
            "(files are read as UTF-8)",
            path=path,
            line=line,
        ) from None


def _open(path: str, error, data: bytes | None = None):
    if data is not None:  # a file's bytes already in memory (an upload), read as the file
        return io.BytesIO(data)
    try:
        if os.path.isdir(path):
            raise IsADirectoryError(21, "Is a directory")
        return open(path, "rb")
    except OSError as e:
        raise error(f"cannot open: {e.strerror}", path=path) from None


def read_lines(
    path: str | os.PathLike, error: type[InputError] = InputError, data: bytes | None = None
):
    """(line number, text) for each line of a UTF-8 text file, decoded one line at a time (a
    leading UTF-8 byte-order mark is dropped); a line that is not UTF-8 raises `error` naming
    the file and the line. `data`: the file's bytes, already in memory (`path` names it)."""
    path = str(path)
    with _open(path, error, data) as fh:
        lineno = 0
        try:
            for raw in fh:
                lineno += 1
                if lineno == 1 and raw[:2] in (b"\xff\xfe", b"\xfe\xff", b"\xef\xbb"):
                    if raw.startswith(b"\xef\xbb\xbf"):
                        raw = raw[3:]
                    else:
                        _decode(raw, error, path, lineno)  # names the UTF-16 file
                try:
                    text = raw.decode("utf-8")
                except UnicodeDecodeError:
                    text = _decode(raw, error, path, lineno)  # raises, naming the line
                yield lineno, text
        except OSError as e:
            raise error(f"cannot read: {e.strerror}", path=path, line=lineno + 1) from None


def read_json(path: str | os.PathLike, error: type[InputError] = InputError):
    """One JSON document from a file (read as bytes, decoded as UTF-8, parsed as `parse_json`);
    every error names the file and, where there is one, the line."""
    path = str(path)
    with _open(path, error) as fh:
        try:
            raw = fh.read()
        except OSError as e:
            raise error(f"cannot read: {e.strerror}", path=path) from None
    if raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:  # decode the offending line alone, to name it
        line = raw.count(b"\n", 0, e.start) + 1
        start = raw.rfind(b"\n", 0, e.start) + 1
        end = raw.find(b"\n", e.start)
        _decode(raw[start : end if end >= 0 else len(raw)], error, path, line)
        raise  # not reached: _decode raised
    if not text.strip():
        raise error("the file is empty", path=path)
    return parse_json(text, error, path)


# --- JSONL -----------------------------------------------------------------------------------


def read_jsonl(
    path: str | os.PathLike,
    error: type[InputError] = InputError,
    allow_empty: bool = False,
    data: bytes | None = None,
):
    """(line number, parsed JSON) for each non-blank line of a JSONL file; an unreadable file, a
    line that is not UTF-8 or not JSON (see `parse_json`), or a file with no records (unless
    `allow_empty`) raises `error` naming the file and the line."""
    path = str(path)
    n = 0
    for lineno, text in read_lines(path, error, data):
        if not text.strip():
            continue
        n += 1
        yield lineno, parse_json(text, error, path, lineno)
    if n == 0 and not allow_empty:
        raise error("the file holds no records (it is empty or blank)", path=path)


def dumps_json(obj, **kwargs) -> str:
    """json.dumps that refuses NaN and Infinity (they are not JSON)."""
    return json.dumps(obj, allow_nan=False, **kwargs)


def write_jsonl(records: Iterable[dict], path: str | os.PathLike) -> Path:
    """One JSON object a line (keys in the order given), atomically; never NaN or Infinity."""
    lines = []
    for i, r in enumerate(records, start=1):
        try:
            lines.append(dumps_json(r) + "\n")
        except ValueError as e:
            raise OutputError(f"record {i} cannot be written as JSON: {e}", path=path) from None
    return atomic_write_text(path, "".join(lines))


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


def csv_text(df, float_format: str | None = "%.4f") -> str:
    """A DataFrame as the project's CSV text: no index, LF line ends, fixed float format."""
    return df.to_csv(index=False, float_format=float_format, lineterminator="\n")


def write_csv(df, path: str | os.PathLike, float_format: str | None = "%.4f") -> Path:
    """A DataFrame as CSV (`csv_text`), atomically."""
    return atomic_write_text(path, csv_text(df, float_format))
