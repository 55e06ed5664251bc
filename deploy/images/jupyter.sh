#!/bin/sh
# deploy/images/jupyter.sh OUT: the Jupyter image: the Python image's base
# (Debian bookworm minbase + python3, a 'work' user uid 1000 with /home/work;
# deploy/images/lib.sh) plus Debian's Jupyter Notebook 6.4 (jupyter-notebook,
# python3-notebook) and the Python 3 kernel (python3-ipykernel), as a one-layer
# OCI image layout at OUT. Takes a minute or two (71 s here, with a nearby
# mirror); `make images` runs it.
#
# The app: service port jupyter:http:8888, started on demand (start-service,
# docs/agent.md "Apps") by the tessera.app.jupyter.start label's command: the
# notebook server on 0.0.0.0:8888, base URL /, in /home/work, with no token
# and no password (only a route through tessera-wsproxy reaches the port:
# access control is wsproxy's) and no browser. wsproxy keeps the client's
# Host, so Jupyter's own same-origin checks (WebSocket Origin, XSRF cookie)
# hold as they are; allow_remote_access accepts a Host that is not local.
#
# Environment: as python.sh (TESSERA_IMAGE_SUITE, TESSERA_IMAGE_MIRROR,
# TESSERA_IMAGE_PACKAGES).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=deploy/images/lib.sh
. "$here/lib.sh"
out=${1:?usage: jupyter.sh OUT}

# At most 511 bytes (the agent's limit); --allow-root: the container's user
# may be root; port_retries=0: 8888 or fail, never another port.
start="exec /usr/bin/jupyter-notebook --no-browser --allow-root --ip=0.0.0.0 --port=8888"
start="$start --port-retries=0 --notebook-dir=/home/work --NotebookApp.base_url=/"
start="$start --NotebookApp.token= --NotebookApp.password="
start="$start --NotebookApp.allow_remote_access=True --NotebookApp.trust_xheaders=True"

debian_image jupyter "$out" \
  python3,python3-venv,ca-certificates,tini,jupyter-notebook,python3-notebook,python3-ipykernel \
  --label ai.backend.runtime-type=python \
  --label ai.backend.runtime-path=/usr/bin/python3 \
  --label ai.backend.service-ports=jupyter:http:8888 \
  --label "tessera.app.jupyter.start=$start" \
  --label ai.backend.resource.min.cpu=1 \
  --label ai.backend.resource.min.mem=512m \
  --env "$DEBIAN_IMAGE_ENV_PATH" --env LANG=C.UTF-8 --env PYTHONUNBUFFERED=1 \
  --cmd /usr/bin/python3
