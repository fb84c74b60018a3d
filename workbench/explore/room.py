"""A room's seats: the kernel manager Voila uses in room mode (`app.room_command`) starts a kernel
for a page only while fewer than `seats` are alive; past that the page gets the room's "full"
answer (HTTP 503, drawn by the `wb` template's error page) and nothing starts. Seats free up as
pages close (Voila's unload shuts the kernel down) or as idle kernels of pages that have gone are
culled."""

from __future__ import annotations

from jupyter_server.services.kernels.kernelmanager import AsyncMappingKernelManager
from tornado import web
from traitlets import Int

FULL = "the room is full"


class SeatedKernelManager(AsyncMappingKernelManager):
    """An AsyncMappingKernelManager with at most `seats` live kernels (0: no limit)."""

    seats = Int(0, config=True, help="live kernels at most; 0: no limit")

    async def start_kernel(self, *args, **kwargs):
        if self.seats and len(self.list_kernel_ids()) >= self.seats:
            self.log.warning(
                "room full: %d of %d seats taken", len(self.list_kernel_ids()), self.seats
            )
            raise web.HTTPError(503, FULL)
        return await super().start_kernel(*args, **kwargs)
