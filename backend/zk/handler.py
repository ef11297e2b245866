"""kazoo's threading handler, with a cheaper ``select``.

Every kazoo client has a connection thread that loops on ``handler.select`` over its socket
and a wake-up pipe. kazoo's stock ``selector_select`` builds a ``DefaultSelector`` (epoll on
Linux) on every call: epoll_create, one epoll_ctl per fd, epoll_wait, close — four or five
system calls for a two-fd wait. A web app holds a few clients per sandbox, and profiling 30
sandboxes under load showed kazoo's connection threads as the largest holder of the GIL, 16 %
of the samples in ``selectors`` (docs/performance.md). ``PollSelector`` registers without a
system call and waits with one ``poll``; unlike ``select.select`` it has no limit on fd numbers,
which is why kazoo moved off ``select`` in the first place.

Same semantics, same kazoo function: only the selector class it instantiates changes.
"""

from __future__ import annotations

import selectors

from kazoo.handlers.threading import SequentialThreadingHandler


class _PollSelectors:
    """What ``kazoo.handlers.utils.selector_select`` reads from its ``selectors_module``."""

    EVENT_READ = selectors.EVENT_READ
    EVENT_WRITE = selectors.EVENT_WRITE
    DefaultSelector = selectors.PollSelector


class PollingThreadingHandler(SequentialThreadingHandler):
    """``SequentialThreadingHandler`` whose ``select`` waits with ``poll`` instead of a fresh epoll."""

    def select(self, *args, **kwargs):
        kwargs.setdefault("selectors_module", _PollSelectors)
        return super().select(*args, **kwargs)
