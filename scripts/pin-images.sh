#!/usr/bin/env bash
# Pin every external image of docker-compose.yml and the Dockerfile to the digest its tag has
# today. Run it on a host with Docker (buildx) after changing a tag, or to take a base image's
# security updates; then review `git diff`, `docker compose build --pull && docker compose up -d`,
# and commit. Each image is written as TAG@sha256:DIGEST, in one place (tests/deploy checks that).
#
#   scripts/pin-images.sh            re-pin every image
#   scripts/pin-images.sh --check    only say which pins differ from their tag's digest (exit 1 if any)
set -euo pipefail
cd "$(dirname "$0")/.."
FILES=(docker-compose.yml Dockerfile)
check=false
[ "${1:-}" = --check ] && check=true

index_digest() {  # the digest of the tag's index (all platforms), as `docker pull TAG@DIGEST` wants it
  docker buildx imagetools inspect "$1" --format '{{json .Manifest}}' |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["digest"])'
}

stale=0
for ref in $(grep -ohE '[a-z0-9][a-z0-9./_-]*:[A-Za-z0-9._-]+@sha256:[0-9a-f]{64}' "${FILES[@]}" | sort -u); do
  tag=${ref%@*}
  digest=$(index_digest "$tag")
  [[ $digest =~ ^sha256:[0-9a-f]{64}$ ]] || { echo "pin-images: no digest for $tag (got '$digest')" >&2; exit 1; }
  if [ "$ref" = "$tag@$digest" ]; then echo "pin-images: $tag is current"; continue; fi
  stale=1
  if $check; then echo "pin-images: $tag is pinned to ${ref#*@}, the tag is now $digest"; continue; fi
  sed -i "s|$ref|$tag@$digest|g" "${FILES[@]}"
  echo "pin-images: $tag -> $digest"
done
if $check; then exit "$stale"; fi
