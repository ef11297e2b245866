"""``kclab serve``'s ``KCLAB_`` settings: each read with its type and bounds, and a wrong one
refused with its name and what it may be, before ZooKeeper, Redis or a worker starts (they were
read with ``float()`` after all three had started, so a typo was a traceback and ``0`` copy
threads a server whose hand-outs all failed)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from web.commands.knobs import KNOBS, KnobError, knobs_from
from web.commands.serve import MIN_TOKEN_LENGTH

ROOT = Path(__file__).resolve().parents[2]


def test_each_setting_is_read_with_its_type_and_the_unset_ones_are_left_to_the_app():
    config = knobs_from({"KCLAB_COPY_THREADS": "8", "KCLAB_FAULTS_PER_SECOND": "2.5", "KCLAB_RECORD_HISTORY": " 5000 ",
                         "KCLAB_SWEEP_GRACE_S": "0", "KCLAB_MAX_CLASSES": "", "OTHER": "x"})
    assert config == {"COPY_THREADS": 8, "FAULTS_PER_SECOND": 2.5, "RECORD_HISTORY": 5000, "SWEEP_GRACE_S": 0.0}
    assert type(config["COPY_THREADS"]) is int and type(config["RECORD_HISTORY"]) is int  # a pool size, a deque's
    assert knobs_from({}) == {}


@pytest.mark.parametrize("name, text, says", [
    ("COPY_THREADS", "0", "from 1 to 64"),                 # a pool of none: every hand-out would fail
    ("COPY_THREADS", "2.5", "a whole number"),
    ("MAX_STUDENTS_PER_CLASS", "many", "a whole number from 1 to 10,000"),
    ("FAULTS_PER_SECOND", "nan", "a number from 0 to 10,000"),  # compares false with everything
    ("SWEEP_EVERY_S", "inf", "a number from 1 to 86,400"),
    ("SWEEP_GRACE_S", "-1", "from 0 to 86,400"),
    ("RECORD_HISTORY", "10", "from 1,000 to 1,000,000"),        # a page could not catch up after a moment away
    ("FAULT_BURST", "9" * 400, "a whole number"),
])
def test_a_wrong_setting_is_refused_with_its_name_and_what_it_may_be(name, text, says):
    with pytest.raises(KnobError) as refused:
        knobs_from({f"KCLAB_{name}": text})
    message = str(refused.value)
    assert message.startswith(f"KCLAB_{name}=") and says in message and KNOBS[name].what in message
    assert len(message) < 300  # a pasted essay is not echoed back whole


def test_kclab_serve_refuses_a_wrong_setting_before_starting_anything():
    environ = {**os.environ, "KCLAB_INSTRUCTOR_TOKEN": "k" * MIN_TOKEN_LENGTH, "KCLAB_COPY_THREADS": "0"}
    # No --zk: without the check it would start an embedded ZooKeeper first (and wait for it).
    result = subprocess.run([sys.executable, "-m", "web.cli", "serve", "--port", "1"], cwd=ROOT, env=environ,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert "kclab serve: KCLAB_COPY_THREADS='0' is not a whole number from 1 to 64" in result.stderr
    assert "Traceback" not in result.stderr and "ZooKeeper" not in result.stderr + result.stdout


def test_kclab_serve_help_lists_every_setting_with_its_bounds():
    result = subprocess.run([sys.executable, "-m", "web.cli", "serve", "--help"], cwd=ROOT, capture_output=True,
                            text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    for name, knob in KNOBS.items():
        assert f"KCLAB_{name} ({knob.low:,}-{knob.high:,}): {knob.what}" in result.stdout
