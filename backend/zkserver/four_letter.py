"""ZooKeeper's four-letter words over a raw TCP socket.

The launcher needs them to know when a server really serves: ``ruok`` answers ``imok`` even on a
node that has no quorum, whereas ``srvr`` answers ``Mode: leader|follower|standalone`` only when
the node serves requests (otherwise: "This ZooKeeper instance is not currently serving
requests"). The server must allow the word (``4lw.commands.whitelist``; the default allows only
``srvr``).
"""

from __future__ import annotations

import re
import socket


def four_letter_word(host: str, port: int, cmd: str, timeout: float = 2.0) -> str:
    """Send ``cmd`` (e.g. ``"srvr"``) and return the whole reply; the server closes after it.

    Raises ``OSError`` (connection refused, timeout) when nothing listens or answers.
    """
    if len(cmd) != 4:
        raise ValueError(f"four-letter words have four letters, not {cmd!r}")
    with socket.create_connection((host, port), timeout=timeout) as sock:
        sock.sendall(cmd.encode("ascii"))
        chunks = []
        while True:
            chunk = sock.recv(4096)
            if not chunk:
                break
            chunks.append(chunk)
    return b"".join(chunks).decode("utf-8", "replace")


def server_mode(host: str, port: int, timeout: float = 1.0) -> str | None:
    """``"leader"``, ``"follower"``, ``"standalone"``..., or ``None`` when not serving."""
    try:
        reply = four_letter_word(host, port, "srvr", timeout)
    except OSError:
        return None
    for line in reply.splitlines():
        if line.startswith("Mode:"):
            return line.split(":", 1)[1].strip()
    return None


def server_version(host: str, port: int, timeout: float = 1.0) -> tuple[int, ...] | None:
    """The server's version from ``srvr`` (``Zookeeper version: 3.8.0-…``), or ``None`` when it
    does not answer or says something else."""
    try:
        reply = four_letter_word(host, port, "srvr", timeout)
    except OSError:
        return None
    found = re.search(r"^Zookeeper version: (\d+)\.(\d+)\.(\d+)", reply, re.MULTILINE)
    return tuple(int(part) for part in found.groups()) if found else None
