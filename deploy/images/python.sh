#!/bin/sh
# deploy/images/python.sh OUT: the Python image (Debian bookworm minbase +
# python3, a 'work' user uid 1000 with /home/work), built with mmdebstrap from
# the Debian mirror and turned into a one-layer OCI image layout at OUT by
# tools/oci-image.py (deploy/images/lib.sh, shared with jupyter.sh). Takes
# about a minute; `make images` runs it.
#
# Environment: TESSERA_IMAGE_SUITE (default bookworm), TESSERA_IMAGE_MIRROR
# (default: the host's apt sources), TESSERA_IMAGE_PACKAGES (extra packages,
# comma-separated).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=deploy/images/lib.sh
. "$here/lib.sh"
out=${1:?usage: python.sh OUT}

debian_image python "$out" python3,python3-venv,ca-certificates,tini \
  --label ai.backend.runtime-type=python \
  --label ai.backend.runtime-path=/usr/bin/python3 \
  --label ai.backend.service-ports=http:http:8000 \
  --label ai.backend.resource.min.cpu=1 \
  --label ai.backend.resource.min.mem=256m \
  --env "$DEBIAN_IMAGE_ENV_PATH" --env LANG=C.UTF-8 --env PYTHONUNBUFFERED=1 \
  --cmd /usr/bin/python3
