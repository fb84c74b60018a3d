"""The sentence model in a live page, loaded once per process in a background thread: a page
that needs it before it is ready says so (`LOADING`) and waits for the callback, and the
lexical encoder and cached texts never wait."""

from __future__ import annotations

import contextlib
import os
import threading
import time

from workbench.common.encoders import get_encoder

LOADING = (
    "Loading the sentence model (all-MiniLM-L6-v2) for this page: about 10-30 s on a busy "
    "machine. The controls come back when it is ready."
)


class Warmup:
    """Loads the sentence model once per process (a kernel, or the room server) in a daemon
    thread; calls back when done."""

    def __init__(self):
        self.lock = threading.Lock()
        self.thread: threading.Thread | None = None
        self.error: str | None = None
        self.seconds: float | None = None
        self.callbacks: list = []

    @property
    def ready(self) -> bool:
        return get_encoder("sentence").base.loaded

    def start(self, callback=None) -> None:
        with self.lock:
            if callback is not None:
                self.callbacks.append(callback)
            if self.thread is None and not self.ready:
                self.thread = threading.Thread(
                    target=self._run, name="workbench-warm-sentence", daemon=True
                )
                self.thread.start()
            elif self.thread is None or not self.thread.is_alive():
                self._done()

    def _run(self) -> None:
        t = time.perf_counter()
        # The page must stay quick while this runs: the thread runs at the lowest CPU priority
        # (Linux: a thread id is a valid PRIO_PROCESS target; the process's own settings, such
        # as the interpreter's switch interval, are left as they are)
        with contextlib.suppress(OSError, AttributeError):
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 19)
        try:
            base = get_encoder("sentence").base
            base.warm()
            base.encode(["warm up"])  # the first call also builds the model's arrays
        except Exception as e:  # shown in the page; the lexical encoder keeps working
            self.error = f"the sentence model could not be loaded: {e}"
        self.seconds = time.perf_counter() - t
        with self.lock:
            self._done()

    def _done(self) -> None:
        callbacks, self.callbacks = self.callbacks, []
        for cb in callbacks:
            cb(self.error)


WARMUP = Warmup()
