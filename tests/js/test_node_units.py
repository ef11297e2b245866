"""The front-end's pure modules (record store, actions) under node's own test runner."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def test_node_unit_tests_pass():
    node = shutil.which("node")
    assert node, "node is not on PATH: `make setup` installs it (Debian's npm brings nodejs)"
    files = sorted(str(p) for p in HERE.glob("*.test.mjs"))
    assert files, "no tests/js/*.test.mjs found"
    env = {**os.environ, "KCLAB_PYTHON": sys.executable}  # actions.test.mjs asks the server's vocabulary
    done = subprocess.run([node, "--test", *files], capture_output=True, text=True, timeout=120, cwd=HERE.parents[1],
                          env=env)
    assert done.returncode == 0, f"node --test failed:\n{done.stdout[-6000:]}\n{done.stderr[-2000:]}"
