#!/bin/sh
# deploy/images/busybox.sh OUT: the test and demo image from Debian's
# busybox-static (/bin/busybox and its applet symlinks, /etc/passwd with root
# and 'work' uid 1000, /home/work, /tmp) as an OCI image layout at OUT, by
# tools/oci-image.py (reproducible: the same busybox gives the same digest).
# Labels: ai.backend.runtime-path=/bin/sh,
# ai.backend.service-ports=echo:http:8080,tcpecho:tcp:9000, tessera.app.tcpecho.start.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
out=${1:?usage: busybox.sh OUT}
[ -x /bin/busybox ] || { echo "busybox.sh: /bin/busybox is missing: run tools/deps.sh (busybox-static)" >&2; exit 1; }
python3 "$repo/tools/oci-image.py" busybox "$out" >/dev/null
echo "busybox: $out ($(python3 "$repo/tools/oci-image.py" digest "$out"))"
