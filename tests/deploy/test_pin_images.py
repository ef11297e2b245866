"""scripts/pin-images.sh, which an admin runs on a host with Docker, against a stand-in ``docker``
(none here) that answers ``buildx imagetools inspect --format '{{json .Manifest}}'`` the way
buildx does: the tag's index descriptor, whose digest is a hash of the tag here."""

from __future__ import annotations

import hashlib
import re
import shutil
import subprocess

from tests.deploy.conftest import COMPOSE, DOCKERFILE, ROOT

FAKE_DOCKER = """#!/bin/sh
[ "$1 $2 $3" = "buildx imagetools inspect" ] || { echo "unexpected: $*" >&2; exit 2; }
printf '{"mediaType":"application/vnd.oci.image.index.v1+json","digest":"sha256:%s","size":1}\\n' \\
  "$(printf %s "$4" | sha256sum | cut -d' ' -f1)"
"""
REF = re.compile(r"([a-z0-9][a-z0-9./_-]*:[A-Za-z0-9._-]+)@(sha256:[0-9a-f]{64})")


def pins(*files):
    return sorted(REF.findall("".join(path.read_text() for path in files)))


def test_pin_images_rewrites_every_pin_to_its_tags_digest_and_check_says_when_one_is_stale(tmp_path):
    for path in (COMPOSE, DOCKERFILE, ROOT / "scripts" / "pin-images.sh"):
        target = tmp_path / path.relative_to(ROOT)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, target)
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "docker").write_text(FAKE_DOCKER)
    (tmp_path / "bin" / "docker").chmod(0o755)
    env = {"PATH": f"{tmp_path / 'bin'}:/usr/bin:/bin"}
    script = ["bash", str(tmp_path / "scripts" / "pin-images.sh")]
    compose, dockerfile = tmp_path / COMPOSE.name, tmp_path / DOCKERFILE.name
    before = pins(compose, dockerfile)
    assert {tag.split(":")[0] for tag, _ in before} == {"zookeeper", "caddy", "python"}

    assert subprocess.run([*script, "--check"], env=env, capture_output=True, text=True).returncode == 1
    assert pins(compose, dockerfile) == before, "--check must not write"
    result = subprocess.run(script, env=env, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    after = pins(compose, dockerfile)
    assert [tag for tag, _ in after] == [tag for tag, _ in before]
    assert all(digest == "sha256:" + hashlib.sha256(tag.encode()).hexdigest() for tag, digest in after)
    assert subprocess.run([*script, "--check"], env=env, capture_output=True, text=True).returncode == 0
