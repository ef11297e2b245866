#!/usr/bin/env bash
# Install what Kafka Controller Lab needs, skipping whatever is already there. Safe to re-run.
#
#   scripts/setup.sh run     what running the app needs (`make run`)
#   scripts/setup.sh test    that, plus what the tests need (`make setup`, `make test`; the default)
#
# System packages, from apt, and only those that are missing:
#   needed to run   a Java runtime 17 or newer ($JAVA_HOME/bin/java, else `java` on PATH; apt gives
#                   openjdk-17-jre-headless on Debian 12, openjdk-21-jre-headless on Debian 13),
#                   npm (only until node_modules/ is installed), python3-venv (only when the Python
#                   has no ensurepip, as Debian's own python3 has not)
#   wanted to run   zookeeper (the server jars; without them the app uses the ZooKeeper jars inside
#                   the pyspark package), redis-server (the message queue of several app workers;
#                   without it the app runs one worker)
#   needed to test  zookeeper (zkCli.sh), chromium (browser tests), docker-compose (validates
#                   docker-compose.yml, no Docker engine needed), caddy (the reverse proxy of the
#                   compose file, run for real by tests/deploy)
# apt runs with --no-install-recommends (else chromium drags in a systemd upgrade) and needs root
# or sudo. Without them (a laptop without admin rights) a missing wanted package is only
# mentioned, and a missing needed one stops the set-up with what is missing and how to get it.
#
# Python packages: .venv/ gets requirements.lock (run) or requirements-test.lock (test), every
# file checked against its hash, then the project itself, editable; skipped while the stamp (the
# lock's hash and the Python version) is unchanged. npm: `npm ci` from package-lock.json.
#
# PYTHON=... picks the interpreter (3.11 or newer).
set -euo pipefail

say() { echo "setup: $*"; }
die() { echo "setup: $*" >&2; exit 1; }

# --- facts about this machine -----------------------------------------------------------------
have_deb() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "ok installed"; }

java_bin() {  # the java that the app will start: ZooKeeper and Spark look at JAVA_HOME first too
  if [ -n "${JAVA_HOME:-}" ] && [ -x "$JAVA_HOME/bin/java" ]; then echo "$JAVA_HOME/bin/java"
  else command -v java || true; fi
}

java_major() {  # "17.0.15" -> 17, "21" -> 21, "1.8.0_392" -> 8 (Java 8 and older say "1.N")
  local bin version
  bin=$(java_bin)
  [ -n "$bin" ] || return 0
  version=$("$bin" -version 2>&1 | sed -n 's/.* version "\([^"]*\)".*/\1/p' | head -n 1)
  case $version in
    1.*) version=${version#1.}; echo "${version%%[._]*}" ;;
    *) echo "${version%%[._+-]*}" ;;
  esac
}

java_ok() { local major; major=$(java_major); [ -n "$major" ] && [ "$major" -ge 17 ] 2>/dev/null; }

java_package() {  # the JRE package this release has: 17 on Debian 12, 21 on Debian 13
  local package
  for package in openjdk-17-jre-headless openjdk-21-jre-headless; do
    if apt-cache show "$package" >/dev/null 2>&1; then echo "$package"; return; fi
  done
  echo default-jre-headless
}

compose_tool() {  # Debian 12 ships docker-compose 1.29 as a command, newer releases the v2 plugin
  command -v docker-compose || { [ -x /usr/libexec/docker/cli-plugins/docker-compose ] &&
    echo /usr/libexec/docker/cli-plugins/docker-compose; } || true
}

venv_ok() { [ -x .venv/bin/python ] || "$PYTHON" -c 'import ensurepip, venv' 2>/dev/null; }

node_modules_ok() { [ "$(cat node_modules/.kclab-installed 2>/dev/null)" = "$(sha256sum package-lock.json | cut -d' ' -f1)" ]; }

can_root() {  # $1 = prompt: may sudo ask for a password (only worth it for a needed package)
  [ "$(id -u)" -eq 0 ] && return 0
  command -v sudo >/dev/null || return 1
  sudo -n true 2>/dev/null && return 0
  [ "$1" = prompt ] && [ -t 0 ] && sudo -v
}

as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }

# --- what is missing, and how to get it without admin rights -----------------------------------
# Each entry: "apt-package|what it is|how to get it without apt". JAVA is resolved after apt-get update.
needed=() wanted=()
check_system() {
  local mode=$1 found
  if ! java_ok; then
    found=$(java_bin)
    needed+=("JAVA|a Java runtime 17 or newer (${found:+found Java $(java_major) at $found}${found:-no java on PATH, JAVA_HOME unset})|unpack a JDK or JRE 17 or 21 (e.g. Eclipse Temurin's .tar.gz for Linux) in your home directory and run: JAVA_HOME=\$HOME/<that directory> make $mode")
  fi
  venv_ok || needed+=("python3-venv|Python's venv with ensurepip ($PYTHON has none)|use a Python 3.11+ that has it (python.org, pyenv, conda): make $mode PYTHON=/path/to/python3")
  if [ -f package.json ] && ! node_modules_ok && ! command -v npm >/dev/null; then
    needed+=("npm|npm, to install the page's JavaScript libraries (d3, socket.io client)|install Node.js 18+ from nodejs.org into your home directory and put its bin/ on PATH")
  fi
  have_deb zookeeper || wanted+=("zookeeper|Debian's ZooKeeper server jars|the app uses the ZooKeeper jars inside the pyspark package")
  have_deb redis-server || wanted+=("redis-server|the message queue of several app workers|the app runs one worker")
  if [ "$mode" = test ]; then
    have_deb zookeeper || needed+=("zookeeper|Debian's ZooKeeper (the tests run its zkCli.sh)|ask an admin")
    have_deb chromium || needed+=("chromium|Chromium, for the browser tests|ask an admin")
    [ -n "$(compose_tool)" ] || needed+=("docker-compose|docker-compose, which validates docker-compose.yml|ask an admin")
    command -v caddy >/dev/null || needed+=("caddy|Caddy, the reverse proxy that tests/deploy runs|ask an admin")
  fi
}

packages_of() { local entry; for entry in "$@"; do echo "${entry%%|*}"; done | sort -u; }

explain_missing() {  # no apt: say what is missing, what it is for and how to get it, then stop
  local entry rest
  echo "setup: cannot install system packages: $1." >&2
  for entry in "${wanted[@]}"; do
    rest=${entry#*|}
    have_listed "${entry%%|*}" || echo "setup: note: ${entry%%|*} is not installed (${rest%%|*}): ${rest#*|}." >&2
  done
  ((${#needed[@]})) || return 0
  echo "setup: missing, and needed:" >&2
  for entry in "${needed[@]}"; do
    rest=${entry#*|}
    echo "  - ${rest%%|*}: without admin rights, ${rest#*|}" >&2
  done
  local packages
  packages=$(packages_of "${needed[@]}" | sed "s/^JAVA$/$(java_package)/" | tr '\n' ' ')
  echo "setup: an admin installs them all with: sudo apt-get install --no-install-recommends $packages" >&2
  exit 1
}

have_listed() { local entry; for entry in "${needed[@]}"; do [ "${entry%%|*}" = "$1" ] && return 0; done; return 1; }

install_system() {
  local mode=$1 prompt=no packages package
  check_system "$mode"
  ((${#needed[@]} + ${#wanted[@]})) || return 0
  ((${#needed[@]})) && prompt=prompt
  if ! command -v apt-get >/dev/null; then explain_missing "this is not a Debian-like system (no apt-get)"; return; fi
  if ! can_root "$prompt"; then explain_missing "not root, and sudo is missing or may not be used"; return; fi
  as_root apt-get update -qq
  packages=$(packages_of "${needed[@]}" | sed "s/^JAVA$/$(java_package)/")
  for package in $(packages_of "${wanted[@]}"); do  # a release without one must not stop apt-get
    have_listed "$package" && continue
    if apt-cache show "$package" >/dev/null 2>&1; then packages="$packages $package"
    else say "note: this release has no $package package; going on without it"; fi
  done
  say "apt-get install" $packages
  # shellcheck disable=SC2086  # one word per package
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $packages
  java_ok || die "the Java runtime apt installed is not the one found first ($(java_bin), Java $(java_major)): unset JAVA_HOME or point it at Java 17+"
}

# --- Python and npm packages --------------------------------------------------------------------
install_python() {
  local mode=$1 lock=requirements-test.lock stamp=.venv/.kclab-installed want have
  [ "$mode" = run ] && lock=requirements.lock
  if [ -e .venv ] && ! .venv/bin/python -c 'import pip' 2>/dev/null; then
    [ -O .venv ] || die ".venv is not usable by $(id -un) (its Python is $(readlink -f .venv/bin/python)), and not" \
      "theirs to recreate: work in a copy of the repository of your own"
    say ".venv is unusable (its Python moved or pip is missing): recreating it"
    rm -rf .venv
  fi
  [ -x .venv/bin/python ] || { say "creating .venv with $("$PYTHON" -V)"; "$PYTHON" -m venv .venv; }
  want=$({ sha256sum "$lock"; .venv/bin/python -VV; } | sha256sum | cut -d' ' -f1)
  have=$(cat "$stamp" 2>/dev/null || true)
  if [ "$mode" = run ] && [ "$have" = "$({ sha256sum requirements-test.lock; .venv/bin/python -VV; } | sha256sum | cut -d' ' -f1)" ]; then
    want=$have  # the test set includes everything running needs
  fi
  if [ "$have" != "$want" ] || [ ! -x .venv/bin/kclab ]; then
    say "pip install -r $lock (hash-checked) into .venv (the first time builds pyspark: about a minute)"
    .venv/bin/python -m pip install -q --disable-pip-version-check --require-hashes --no-deps -r "$lock"
    .venv/bin/python -m pip install -q --disable-pip-version-check --no-deps -e .
    echo "$want" >"$stamp"
  fi
}

install_npm() {
  [ -f package.json ] || { npm_state="no package.json yet"; return; }
  [ -f package-lock.json ] || die "package.json has no package-lock.json: run 'npm install' once and commit the lock file"
  if ! node_modules_ok; then
    say "npm ci"
    npm ci --no-audit --no-fund --loglevel=error
    sha256sum package-lock.json | cut -d' ' -f1 >node_modules/.kclab-installed
  fi
  npm_state="npm packages installed"
}

summary() {
  local mode=$1 zk extra=""
  zk=$(.venv/bin/python -c 'from backend.zkserver.classpath import find_zookeeper_classpath as f
c = f(); print(f"ZooKeeper {c.version} from {c.source}")' 2>&1 | tail -n 1)
  have_deb redis-server || extra=", no redis-server (one app worker)"
  [ "$mode" = test ] && extra="$extra, chromium $(dpkg-query -W -f='${Version}' chromium 2>/dev/null)"
  echo "setup OK for $mode ($((SECONDS - started)) s): $(.venv/bin/python -V) in .venv, Java $(java_major)" \
    "($(java_bin)), $zk, $npm_state$extra"
}

main() {
  local mode=${1:-test}
  case $mode in run|test) ;; *) die "usage: scripts/setup.sh [run|test] (got '$mode')" ;; esac
  cd "$(dirname "${BASH_SOURCE[0]}")/.."
  started=$SECONDS
  command -v "$PYTHON" >/dev/null || die "$PYTHON not found: install Python 3.11 or newer (or make $mode PYTHON=...)"
  "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))' ||
    die "$PYTHON is $("$PYTHON" -V 2>&1); Kafka Controller Lab needs Python 3.11 or newer (make $mode PYTHON=...)"
  install_system "$mode"
  install_python "$mode"
  install_npm
  summary "$mode"
}

PYTHON=${PYTHON:-python3}
npm_state=""
if [ "${BASH_SOURCE[0]}" = "$0" ]; then main "$@"; fi
