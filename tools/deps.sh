#!/bin/sh
# deps.sh: install the Debian packages Tessera needs to build, test and run its
# development stack. Idempotent and fast when everything is present: a single
# dpkg-query decides; apt-get runs only for what is missing. Prints one line.
set -eu

PKGS="build-essential pkg-config clang clang-format libclang-rt-14-dev
librdkafka-dev libmicrohttpd-dev libjansson-dev libprotobuf-c-dev protobuf-c-compiler
libpq-dev libhiredis-dev libcmocka-dev libcurl4-openssl-dev libsodium-dev
libarchive-dev libsystemd-dev openssl stunnel4
postgresql redis-server docker-registry runc containernetworking-plugins
prometheus kcat nginx wrk
python3 python3-pytest python3-requests python3-cryptography
python3-aiohttp python3-click python3-tqdm python3-humanize python3-tabulate python3-yarl
python3-multidict python3-attr python3-dateutil python3-appdirs python3-janus python3-rich
python3-redis python3-typeguard python3-pydantic python3-lark python3-tenacity python3-dotenv
python3-async-timeout python3-pycryptodome python3-msgpack python3-aiofiles
systemd curl iproute2 iptables util-linux procps xfsprogs e2fsprogs openssh-client
busybox-static mmdebstrap
chromium chromium-driver python3-selenium fonts-dejavu-core"

# missing: print the packages from $PKGS that are not fully installed.
missing() {
  # dpkg-query exits non-zero when some package is unknown; its output for the
  # known ones is still what we need, and unknown ones are simply absent there.
  # shellcheck disable=SC2086 # word splitting of the package list is intended
  installed=" $(dpkg-query -W -f='${Package} ${db:Status-Abbrev}\n' $PKGS 2>/dev/null |
    awk '$2 == "ii" { print $1 }' | tr '\n' ' ') " || true
  for p in $PKGS; do
    case "$installed" in
      *" $p "*) ;;
      *) printf '%s ' "$p" ;;
    esac
  done
}

miss=$(missing)
# Node.js and npm build the web console and run the compatibility suite
# (tests/compat, Backend.AI's JavaScript SDK): Debian's packages unless a node with
# npm is there already (e.g. NodeSource's nodejs, which conflicts with them).
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  miss="${miss}nodejs npm "
fi
if [ -z "$miss" ]; then
  echo "deps: all $(echo "$PKGS" | wc -w) packages already installed"
  exit 0
fi
miss=${miss% }

if [ "$(id -u)" -ne 0 ]; then
  echo "deps: missing packages: $miss" >&2
  echo "deps: install them as root: sudo apt-get update && sudo apt-get install -y --no-install-recommends $miss" >&2
  exit 1
fi

export DEBIAN_FRONTEND=noninteractive
log=$(mktemp "${TMPDIR:-/tmp}/tessera-deps.XXXXXX")
trap 'rm -f "$log"' EXIT

updated=no
apt_update() {
  [ "$updated" = yes ] && return 0
  if ! apt-get update -q >>"$log" 2>&1; then
    echo "deps: apt-get update failed; last lines:" >&2
    tail -n 20 "$log" >&2
    exit 1
  fi
  updated=yes
}

# Package lists: refresh when there are none or the newest is over a day old.
lists=/var/lib/apt/lists
if [ -z "$(find "$lists" -maxdepth 1 -name '*_Packages*' -mtime -1 2>/dev/null | head -n 1)" ]; then
  apt_update
fi

install() {
  # shellcheck disable=SC2086 # word splitting of the package list is intended
  apt-get install -y -q --no-install-recommends $miss >>"$log" 2>&1
}

if ! install; then
  if [ "$updated" = no ]; then
    # Likely stale lists ("Unable to locate package", 404 on a .deb): refresh once.
    apt_update
    : >"$log"
    install || { echo "deps: apt-get install failed; last lines:" >&2; tail -n 20 "$log" >&2; exit 1; }
  else
    echo "deps: apt-get install failed; last lines:" >&2
    tail -n 20 "$log" >&2
    exit 1
  fi
fi

still=$(missing)
if [ -n "$still" ]; then
  echo "deps: still missing after install: $still" >&2
  exit 1
fi
echo "deps: installed $(echo "$miss" | wc -w) package(s) (apt-get update: $updated): $miss"
