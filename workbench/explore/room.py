"""A room's seats: the kernel manager Voila uses in room mode (`app.room_command`) starts a kernel
for a page only while fewer than `seats` are alive; past that the page gets the room's "full"
answer (HTTP 503, drawn by the `wb` template's error page) and nothing starts. Seats free up as
pages close (Voila's unload shuts the kernel down) or as idle kernels of pages that have gone are
culled. A kernel whose page has never connected its websocket gets `first_connect` seconds of
idleness before it is culled, not the culler's `cull_idle_timeout`: when a room opens its pages
together, the server is busy rendering the others, and a page may take well over a minute from
the end of its notebook's run to its websocket; culling it then breaks a page that was on its way
(measured: at 30 pages within 5 s, a 45 s cull freed every kernel before its page connected).
The cost: a page closed before its widgets ever connected holds its seat up to `first_connect`.

With preheated kernels (Voila's `preheat_kernel`: each room notebook executed ahead of the
request in a pool of kernels, handed to the next page that asks), the pooled kernels take seats
too: a pool is refilled only up to the seats that no page holds, so pages and pool together
never pass `seats` live kernels, and a refill never fails for want of a seat (a failed pool
entry would be handed to the next page as an error). A kernel handed to a page starts its
idle clock then, not when its notebook ran in the pool.
"""

from __future__ import annotations

from datetime import timedelta

from jupyter_server._tz import utcnow
from jupyter_server.services.kernels.kernelmanager import AsyncMappingKernelManager
from tornado import web
from traitlets import Int

FULL = "the room is full"


class SeatedKernelManager(AsyncMappingKernelManager):
    """An AsyncMappingKernelManager with at most `seats` live kernels (0: no limit)."""

    seats = Int(0, config=True, help="live kernels at most; 0: no limit")
    first_connect = Int(
        180,
        config=True,
        help="seconds idle before culling a kernel whose page has never connected (the "
        "culler's cull_idle_timeout applies once it has)",
    )
    _refill = True  # off while a seat is taken back from a pool (see _release_pooled)

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self._connected_once: set[str] = set()  # kernels a page's websocket has reached
        fill = getattr(self, "fill_if_needed", None)  # Voila's preheating subclass has one
        if fill is not None and self.seats:
            self.fill_if_needed = self._seated_fill(fill)
        hand_out = getattr(self, "get_rendered_notebook", None)  # ... and this
        if hand_out is not None:
            self.get_rendered_notebook = self._fresh_on_hand_out(hand_out)

    def _held(self) -> int:
        """Seats taken or on their way: every live kernel plus every pool entry still being
        prepared. An entry whose kernel has started but not finished preheating counts twice,
        so a refill errs on the side of fewer kernels, never more than the seats."""
        pools = getattr(self, "_pools", {})
        waiting = sum(1 for pool in pools.values() for task in pool if not task.done())
        return len(self.list_kernel_ids()) + waiting

    def _seated_fill(self, fill):
        """Voila's pool refill, limited to the free seats: each notebook's pool is topped up to
        its configured size or to what the free seats allow, whichever is smaller."""

        def seated(delay=None, notebook_name=None, **kwargs):
            pools = self._pools
            config = self.kernel_pools_config
            default = config.get("default", {})
            want = config.get(notebook_name, default).get("pool_size", default.get("pool_size", 1))
            have = len(pools.get(notebook_name, ()))
            free = max(self.seats - self._held(), 0)
            size = min(want, have + free)
            if size <= have:
                return None
            self.kernel_pools_config = {**config, notebook_name: {"pool_size": size}}
            try:
                return fill(delay=delay, notebook_name=notebook_name, **kwargs)
            finally:
                self.kernel_pools_config = config

        return seated

    def _fresh_on_hand_out(self, hand_out):
        """Voila's hand-out of a preheated kernel to a page, with the kernel's idle clock reset:
        it has idled in the pool since its notebook ran, and the culler would count that time
        against the page it now serves (measured: at 30 pages, handed-out kernels were culled
        after 183-203 s "of inactivity" while their pages were still loading)."""

        async def fresh(*args, **kwargs):
            task, cache, kernel_id = await hand_out(*args, **kwargs)
            kernel = self._kernels.get(kernel_id)
            if kernel is not None:
                kernel.last_activity = utcnow()
            return task, cache, kernel_id

        return fresh

    async def start_kernel(self, *args, **kwargs):
        env = kwargs.get("env") or {}
        pooled = env.get("VOILA_PREHEAT") == "True"  # a pool refill, limited in _seated_fill
        if self.seats and not pooled and len(self.list_kernel_ids()) >= self.seats:
            if not await self._release_pooled():  # a seat held by another notebook's pool
                self.log.warning(
                    "room full: %d of %d seats taken", len(self.list_kernel_ids()), self.seats
                )
                raise web.HTTPError(503, FULL)
        return await super().start_kernel(*args, **kwargs)

    async def _release_pooled(self) -> bool:
        """Free a seat that a preheated kernel holds (from the largest pool): a page asking
        for a notebook whose pool is empty must not find the room full while kernels wait,
        unused, for the other notebook."""
        pools = getattr(self, "_pools", {})
        for name in sorted(pools, key=lambda n: -len(pools[n])):
            for task in list(pools[name]):
                if task.done() and not task.cancelled() and task.exception() is None:
                    pools[name].remove(task)
                    kernel_id = task.result()["kernel_id"]
                    self.log.info("seat freed for a page: pooled kernel %s of %s", kernel_id, name)
                    self._refill = False
                    try:
                        await self.shutdown_kernel(kernel_id)
                    finally:
                        self._refill = True
                    return True
        return False

    async def shutdown_kernel(self, kernel_id, *args, **kwargs):
        """Shut a kernel down; a seat it frees goes back to the pools (when preheating)."""
        out = await super().shutdown_kernel(kernel_id, *args, **kwargs)
        self._connected_once.discard(kernel_id)
        pools = getattr(self, "_pools", None)
        if pools and self._refill and self.seats:
            for name in sorted(pools):
                self.fill_if_needed(notebook_name=name)
        return out

    def notify_connect(self, kernel_id):
        self._connected_once.add(kernel_id)
        return super().notify_connect(kernel_id)

    async def cull_kernel_if_idle(self, kernel_id):
        """The culler's rule, with `first_connect` seconds of grace for a kernel no page has
        connected to yet (its page may still be loading on a busy machine)."""
        kernel = self._kernels.get(kernel_id)
        last = getattr(kernel, "last_activity", None)
        if (
            kernel is not None
            and kernel_id not in self._connected_once
            and getattr(kernel, "execution_state", None) != "dead"
            and last is not None
            and utcnow() - last <= timedelta(seconds=self.first_connect)
        ):
            return None
        return await super().cull_kernel_if_idle(kernel_id)
