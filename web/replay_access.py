"""Who may open which replay log: the same tokens as what the log records.

A log records a sandbox (or a walkthrough, or a student's copy of a class cluster): whoever
holds that sandbox's token may open it, also after the sandbox is gone. Its owner is kept
beside the log as ``<session>.owner``, holding the SHA-256 of the token (never the token itself,
so the data directory does not hand out tokens). A class demo, an imported log and a script's
run have no owner file: only the instructor opens them. The instructor opens everything.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

OWNER_SUFFIX = ".owner"


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def write_owner(replay_dir: Path, session_id: str, token: str) -> None:
    """Record that ``token`` owns the log of ``session_id`` (before its first record is written)."""
    replay_dir.mkdir(parents=True, exist_ok=True)
    (replay_dir / f"{session_id}{OWNER_SUFFIX}").write_text(token_hash(token) + "\n", encoding="ascii")


@dataclass(frozen=True)
class ReplayAccess:
    replay_dir: Path
    instructor: bool
    tokens: frozenset[str] | set[str]

    @property
    def anonymous(self) -> bool:
        return not self.instructor and not self.tokens

    def may_open(self, name: str) -> bool:
        if self.instructor:
            return True
        if not self.tokens or ".imported" in name or not name.endswith(".jsonl"):
            return False
        try:
            owners = (self.replay_dir / f"{name[:-len('.jsonl')]}{OWNER_SUFFIX}").read_text(encoding="ascii").split()
        except OSError:
            return False
        return any(token_hash(token) in owners for token in self.tokens)
