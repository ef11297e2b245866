"""Writing a run's output: Parquet and JSON per dataset, then ``summary.json``, then swap in.

Layout of ``--out``::

    summary.json              headline numbers, malformed lines, input size, timings
    <dataset>/                Parquet, one file (for analysts, notebooks, another Spark job)
    json/<dataset>/part-*.json the same rows as JSON lines, nulls included (the dashboard reads
                              these: the web app has no Parquet reader and should not start Spark
                              to show a chart)

A run writes into a sibling directory ``.<name>.staging-<id>`` and renames it into place at the
end, so the dashboard never reads half of one run and half of another, and a failed run leaves
the previous output alone. Where ``--out`` itself cannot be renamed (a mount point), the
contents are replaced instead. The driver writes every file here (the datasets are collected to
it), so with a cluster master ``--out`` need only be a path the driver can write.
"""

from __future__ import annotations

import json
import os
import shutil
import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the reader below needs no pyspark
    import pyarrow
    from pyspark.sql import DataFrame

SUMMARY = "summary.json"


class Output:
    def __init__(self, out: str | Path) -> None:
        out = str(out)
        if "://" in out and not out.startswith("file:"):
            raise ValueError(f"--out must be a filesystem path (shared with the executors), not {out!r}")
        self.final = Path(out.removeprefix("file:")).resolve()
        self.final.parent.mkdir(parents=True, exist_ok=True)
        self.run_id = f"{time.strftime('%Y%m%d-%H%M%S')}-{uuid.uuid4().hex[:6]}"
        self.staging = self.final.parent / f".{self.final.name}.staging-{self.run_id}"
        self.staging.mkdir()

    def write(self, name: str, table: "pyarrow.Table") -> None:
        """Write one dataset (computed in the driver, ``backend.stats.metrics``) as Parquet and
        JSON lines."""
        from backend.stats import json_lines

        write_arrow(table, self.staging / name)
        directory = self.staging / "json" / name
        directory.mkdir(parents=True, exist_ok=True)
        with open(directory / "part-00000.json", "wb") as f:
            json_lines.write(table, f)

    def write_summary(self, summary: dict) -> None:
        path = self.staging / SUMMARY
        path.write_text(json.dumps(summary, indent=2, sort_keys=False, default=str) + "\n", encoding="utf-8")

    def commit(self) -> Path:
        """Put the staged run in place of the previous output."""
        previous = self.final.parent / f".{self.final.name}.previous-{self.run_id}"
        try:
            if self.final.exists():
                os.rename(self.final, previous)
            os.rename(self.staging, self.final)
        except OSError:
            if not self.final.exists() and previous.exists():
                os.rename(previous, self.final)
            self._replace_contents()
        shutil.rmtree(previous, ignore_errors=True)
        return self.final

    def abandon(self) -> None:
        shutil.rmtree(self.staging, ignore_errors=True)

    def _replace_contents(self) -> None:
        self.final.mkdir(parents=True, exist_ok=True)
        for child in self.final.iterdir():
            shutil.rmtree(child) if child.is_dir() else child.unlink()
        for child in self.staging.iterdir():
            shutil.move(str(child), str(self.final / child.name))
        shutil.rmtree(self.staging, ignore_errors=True)


def write_parquet(df: "DataFrame", directory: Path) -> "pyarrow.Table":
    """Collect a small frame as Arrow (one Spark job) and write it from the driver as one
    Parquet file in ``directory`` (created): no Spark write job and commit protocol."""
    return write_arrow(df.toArrow(), directory)


def write_arrow(table: "pyarrow.Table", directory: Path) -> "pyarrow.Table":
    """Write ``table`` as one Parquet file in ``directory`` (created)."""
    import pyarrow.parquet as pq

    directory.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, directory / "part-00000.parquet")
    return table


def read_json_dataset(out: Path, name: str) -> list[dict]:
    """The rows of one dataset from its JSON copy (no Spark needed)."""
    rows = []
    for part in sorted((Path(out) / "json" / name).glob("part-*.json")):
        with open(part, encoding="utf-8") as f:
            rows.extend(json.loads(line) for line in f if line.strip())
    return rows
