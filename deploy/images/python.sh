#!/bin/sh
# deploy/images/python.sh OUT: the Python image (Debian bookworm minbase +
# python3, a 'work' user uid 1000 with /home/work), built with mmdebstrap from
# the Debian mirror and turned into a one-layer OCI image layout at OUT by
# tools/oci-image.py. Takes a few minutes; `make images` runs it.
#
# Environment: TESSERA_IMAGE_SUITE (default bookworm), TESSERA_IMAGE_MIRROR
# (default: the host's apt sources), TESSERA_IMAGE_PACKAGES (extra packages,
# comma-separated).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
out=${1:?usage: python.sh OUT}
suite=${TESSERA_IMAGE_SUITE:-bookworm}
mirror=${TESSERA_IMAGE_MIRROR:-}
extra=${TESSERA_IMAGE_PACKAGES:-}
command -v mmdebstrap >/dev/null 2>&1 || { echo "python.sh: mmdebstrap is missing: run tools/deps.sh" >&2; exit 1; }

work=$(mktemp -d "${TMPDIR:-/tmp}/tessera-image-python.XXXXXX")
trap 'rm -rf "$work"' EXIT INT TERM

pkgs="python3,python3-venv,ca-certificates,tini${extra:+,$extra}"
# shellcheck disable=SC2016,SC2086 # hooks see $1 (the chroot); the mirror is one optional word
mmdebstrap --variant=minbase --include="$pkgs" --skip=output/dev \
  --dpkgopt='path-exclude=/usr/share/man/*' \
  --dpkgopt='path-exclude=/usr/share/doc/*' \
  --dpkgopt='path-include=/usr/share/doc/*/copyright' \
  --dpkgopt='path-exclude=/usr/share/locale/*' \
  --dpkgopt='path-exclude=/usr/share/info/*' \
  --customize-hook='chroot "$1" groupadd -g 1000 work' \
  --customize-hook='chroot "$1" useradd -u 1000 -g 1000 -m -d /home/work -s /bin/bash work' \
  --customize-hook='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/* "$1"/var/log/*.log' \
  "$suite" "$work/rootfs.tar" $mirror

rm -rf "$out.new"
python3 "$repo/tools/oci-image.py" rootfs "$work/rootfs.tar" "$out.new" \
  --label ai.backend.kernelspec=1 \
  --label "ai.backend.features=batch query uid-match" \
  --label ai.backend.base-distro=debian12 \
  --label ai.backend.runtime-type=python \
  --label ai.backend.runtime-path=/usr/bin/python3 \
  --label ai.backend.service-ports=http:http:8000 \
  --label ai.backend.resource.min.cpu=1 \
  --label ai.backend.resource.min.mem=256m \
  --label org.opencontainers.image.title=tessera/python \
  --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  --env LANG=C.UTF-8 --env PYTHONUNBUFFERED=1 \
  --cmd /usr/bin/python3 --workdir /home/work
rm -rf "$out"
mv "$out.new" "$out"
