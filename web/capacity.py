"""How many sandboxes this machine holds: measured per sandbox, not guessed.

``bench/classroom.py`` measures what one default sandbox (3 brokers, a topic of 3 partitions)
costs on the machine it runs on; ``docs/performance.md`` has the numbers behind the two budgets
below. The cap is the smaller of what the memory and the cores hold, after the app's own share
(the ZooKeeper JVM, the interpreter, the page sockets). ``kclab serve --max-sandboxes N``
overrides it; the refusal past it says how many run and where the number came from.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from backend.runtime.record_bus import HISTORY

SANDBOX_BASE_MB = 5
"""Memory budget of one sandbox besides its kept records: 1.3 MB measured in the app process (its
~26 threads, view, replay writer), its chroot's znodes, sessions and watches in ZooKeeper —
rounded up, because running out of memory fails every sandbox at once while a refusal fails only
one request."""
KEPT_RECORD_BYTES = 150
"""What one record a sandbox's bus keeps costs the server: 67 bytes in its compressed chunk
(``RecordBus``; the records of a default sandbox's faults, ``bench/record_path.py``), and what the
allocator holds around them — an hour-long class of 200 students grew its worker by 451 MB for
~3.3 million records made, 138 bytes a record (issue 14, thirty-ninth round). Packed one by one
they cost ~280 bytes and, with the pools they pinned, ~700 of the server's memory, which this
budget (then 350) undercounted; as objects ~2.5 KB each, which it once missed entirely (tenth
round)."""
SANDBOXES_PER_CORE = 50
"""CPU budget: an idle sandbox costs under 0.1 % of a core and a fault 52 ms through the whole
server, so 100 sandboxes whose students act every 10 s keep one worker about 60 % busy: measured,
with a p99 of 140 ms from a fault to the student's page and nothing refused (docs/performance.md,
issue 14, fifth round). 200 default sandboxes fit this 2-core machine while idle, but 200
*active* students saturated it, on one worker or two: an eighth to a quarter of their faults
were refused when ZooKeeper sessions dropped, and the p99 was 1–1.5 s. So 50 per core is the
budget: what a class that uses its sandboxes holds, not what idle ones do."""
RESERVED_MB = 1024
"""The app's own share: ZooKeeper's JVM (a 128 MB heap embedded, 512 MB in the compose file), the
interpreter and its libraries."""
MIN_CAP = 4


@dataclass(frozen=True)
class Capacity:
    sandboxes: int
    why: str
    """In words, for the refusal and ``kclab serve``'s banner."""


def sandbox_mb(record_history: int = HISTORY) -> int:
    """A sandbox's memory budget when its bus keeps ``record_history`` records (``RECORD_HISTORY``):
    an operator who keeps more records per sandbox gets fewer sandboxes, not an out-of-memory."""
    return SANDBOX_BASE_MB + max(1, round(record_history * KEPT_RECORD_BYTES / 1e6))


MB_PER_SANDBOX = sandbox_mb()
"""8 MB with the default ``RECORD_HISTORY`` (20,000 records, 3 MB of them once a busy sandbox has
made that many, after about an hour of a student's faults)."""


def default_capacity(memory_mb: int | None = None, cores: int | None = None,
                     record_history: int = HISTORY) -> Capacity:
    """The cap for this machine (or for ``memory_mb`` and ``cores``, as a test asks)."""
    memory_mb = machine_memory_mb() if memory_mb is None else memory_mb
    cores = machine_cores() if cores is None else cores
    per_sandbox = sandbox_mb(record_history)
    by_memory = max(0, memory_mb - RESERVED_MB) // per_sandbox
    by_cores = cores * SANDBOXES_PER_CORE
    cap = max(MIN_CAP, min(by_memory, by_cores))
    limit = "memory" if by_memory < by_cores else "cores"
    return Capacity(cap, f"{cap} is what {memory_mb / 1024:.1f} GB of memory and {cores} core(s) hold "
                         f"({per_sandbox} MB and 1/{SANDBOXES_PER_CORE} of a core per sandbox; "
                         f"the {limit} decide)")


def capacity(max_sandboxes: int | None, record_history: int = HISTORY) -> Capacity:
    """``--max-sandboxes`` (``MAX_SANDBOXES``) when given, else what this machine holds with
    sandboxes that keep ``record_history`` records."""
    if max_sandboxes is None:
        return default_capacity(record_history=int(record_history))
    return fixed_capacity(int(max_sandboxes))


def fixed_capacity(sandboxes: int) -> Capacity:
    return Capacity(sandboxes, f"{sandboxes} is the cap the server was started with (--max-sandboxes)")


def machine_memory_mb() -> int:
    """Physical memory, or the container's limit when it is smaller (cgroup v2, then v1)."""
    total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    for limit_file in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        text = _read(limit_file)
        if text and text.isdigit():
            total = min(total, int(text))
    return total // (1024 * 1024)


def machine_cores() -> int:
    """The cores this process may use, or the container's CPU quota when it is smaller."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    quota = (_read("/sys/fs/cgroup/cpu.max") or "").split()
    if len(quota) == 2 and quota[0].isdigit() and quota[1].isdigit() and int(quota[1]):
        cores = min(cores, max(1, int(quota[0]) // int(quota[1])))
    return cores


def _read(path: str) -> str | None:
    try:
        return Path(path).read_text().strip()
    except OSError:
        return None
