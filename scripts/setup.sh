#!/usr/bin/env bash
# Install what Kafka Controller Lab needs, skipping whatever is already there. Safe to re-run.
#
#   apt     zookeeper (the server jars; no service is started), a JRE >= 17, chromium (browser
#           tests), docker-compose (CI validates docker-compose.yml with it; no Docker engine is
#           needed) -- with --no-install-recommends, else chromium drags in a systemd upgrade
#   .venv/  the Python packages of pyproject.toml, editable, with the `test` extra; skipped when
#           the stamp (a hash of pyproject.toml and the Python version) is unchanged
#   npm     `npm ci`, once package.json and package-lock.json exist
#
# Needs root or sudo only when an apt package is missing. PYTHON=... picks the interpreter (>= 3.11).
set -euo pipefail
cd "$(dirname "$0")/.."
started=$SECONDS
PYTHON=${PYTHON:-python3}

say() { echo "setup: $*"; }
die() { echo "setup: $*" >&2; exit 1; }
as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"
  elif command -v sudo >/dev/null; then sudo "$@"
  else die "need root or sudo to run: $*"; fi
}
have_deb() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "ok installed"; }
java_major() { java -version 2>&1 | sed -n 's/.* version "\([0-9]*\).*/\1/p' | head -n 1; }

command -v "$PYTHON" >/dev/null || die "$PYTHON not found: install Python 3.11 or newer"
"$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))' ||
  die "$PYTHON is $("$PYTHON" -V 2>&1); Kafka Controller Lab needs Python 3.11 or newer (PYTHON=...)"

# --- system packages ------------------------------------------------------------------------
missing=()
have_deb zookeeper || missing+=(zookeeper)
major=$(java_major || true)
[ "${major:-0}" -ge 17 ] 2>/dev/null || missing+=(openjdk-17-jre-headless)
have_deb chromium || missing+=(chromium)
command -v docker-compose >/dev/null || missing+=(docker-compose)
if [ ! -x .venv/bin/python ] && ! "$PYTHON" -c 'import ensurepip, venv' 2>/dev/null; then
  missing+=(python3-venv)  # Debian's own python3 ships without ensurepip
fi
if [ -f package.json ] && ! command -v npm >/dev/null; then missing+=(npm); fi

if ((${#missing[@]})); then
  say "apt-get install ${missing[*]}"
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive \
    apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# --- Python packages ------------------------------------------------------------------------
if [ -e .venv ] && ! .venv/bin/python -c 'import pip' 2>/dev/null; then
  say ".venv is unusable (its Python moved or pip is missing): recreating it"
  rm -rf .venv
fi
[ -x .venv/bin/python ] || { say "creating .venv with $("$PYTHON" -V)"; "$PYTHON" -m venv .venv; }
stamp=.venv/.kclab-installed
want=$({ sha256sum pyproject.toml; .venv/bin/python -VV; } | sha256sum | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ] || [ ! -x .venv/bin/kclab ]; then
  say "pip install -e '.[test]' into .venv (the first time builds pyspark: about a minute)"
  .venv/bin/python -m pip install -q --disable-pip-version-check -e '.[test]'
  echo "$want" >"$stamp"
fi

# --- npm packages (front-end libraries, served from our own origin) ---------------------------
npm_state="no package.json yet"
if [ -f package.json ] && [ ! -f package-lock.json ]; then
  die "package.json has no package-lock.json: run 'npm install' once and commit the lock file"
elif [ -f package.json ]; then
  want_npm=$(sha256sum package-lock.json | cut -d' ' -f1)
  if [ "$(cat node_modules/.kclab-installed 2>/dev/null)" != "$want_npm" ]; then
    say "npm ci"
    npm ci --no-audit --no-fund --loglevel=error
    echo "$want_npm" >node_modules/.kclab-installed
  fi
  npm_state="npm packages installed"
fi

zk=$(.venv/bin/python -c 'from backend.runtime.zk_classpath import find_zookeeper_classpath as f
c = f(); print(f"ZooKeeper {c.version} from {c.source}")' 2>&1 | tail -n 1)
echo "setup OK ($((SECONDS - started)) s): $(.venv/bin/python -V) in .venv, Java $(java_major)," \
  "$zk, chromium $(dpkg-query -W -f='${Version}' chromium), $npm_state"
