# shellcheck shell=sh
# deploy/images/lib.sh: what the Debian-based image recipes share (sourced by
# python.sh and jupyter.sh, POSIX sh): one function that builds a Debian
# minbase root file system with mmdebstrap, with a 'work' user uid 1000 and
# /home/work, docs, man pages and locales left out, and turns it into a
# one-layer OCI image layout with tools/oci-image.py.
#
#   debian_image NAME OUT PACKAGES [tools/oci-image.py rootfs options...]
#
# NAME: the image's name (tessera/NAME in org.opencontainers.image.title);
# OUT: the OCI image layout written (replaced only when the build succeeds);
# PACKAGES: comma-separated Debian packages. The options (--label K=V,
# --env K=V, --cmd ...) come after the common ones: a --label given again
# replaces the common value; --env replaces the common PATH and LANG, so a
# recipe that sets --env lists them (DEBIAN_IMAGE_ENV holds them).
#
# Environment: TESSERA_IMAGE_SUITE (default bookworm), TESSERA_IMAGE_MIRROR
# (default: the host's apt sources), TESSERA_IMAGE_PACKAGES (extra packages,
# comma-separated, for every image).

# shellcheck disable=SC2034 # used by the recipes that source this
DEBIAN_IMAGE_ENV_PATH=PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

debian_image() {
  _di_name=${1:?debian_image NAME OUT PACKAGES [options]}
  _di_out=${2:?debian_image NAME OUT PACKAGES [options]}
  _di_pkgs=${3:?debian_image NAME OUT PACKAGES [options]}
  shift 3
  _di_repo=$(cd "$(dirname "$0")/../.." && pwd)
  _di_suite=${TESSERA_IMAGE_SUITE:-bookworm}
  _di_mirror=${TESSERA_IMAGE_MIRROR:-}
  _di_extra=${TESSERA_IMAGE_PACKAGES:-}
  command -v mmdebstrap >/dev/null 2>&1 ||
    { echo "$_di_name: mmdebstrap is missing: run tools/deps.sh" >&2; return 1; }

  _di_work=$(mktemp -d "${TMPDIR:-/tmp}/tessera-image-$_di_name.XXXXXX")
  # shellcheck disable=SC2064 # expand now: the path of this build
  trap "rm -rf '$_di_work'" EXIT INT TERM

  # shellcheck disable=SC2016,SC2086 # hooks see $1 (the chroot); the mirror is one optional word
  mmdebstrap --variant=minbase --include="$_di_pkgs${_di_extra:+,$_di_extra}" --skip=output/dev \
    --dpkgopt='path-exclude=/usr/share/man/*' \
    --dpkgopt='path-exclude=/usr/share/doc/*' \
    --dpkgopt='path-include=/usr/share/doc/*/copyright' \
    --dpkgopt='path-exclude=/usr/share/locale/*' \
    --dpkgopt='path-exclude=/usr/share/info/*' \
    --customize-hook='chroot "$1" groupadd -g 1000 work' \
    --customize-hook='chroot "$1" useradd -u 1000 -g 1000 -m -d /home/work -s /bin/bash work' \
    --customize-hook='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/* "$1"/var/log/*.log' \
    "$_di_suite" "$_di_work/rootfs.tar" $_di_mirror || return 1

  rm -rf "$_di_out.new"
  python3 "$_di_repo/tools/oci-image.py" rootfs "$_di_work/rootfs.tar" "$_di_out.new" \
    --label ai.backend.kernelspec=1 \
    --label "ai.backend.features=batch query uid-match" \
    --label ai.backend.base-distro=debian12 \
    --label "org.opencontainers.image.title=tessera/$_di_name" \
    --workdir /home/work "$@" || return 1
  rm -rf "$_di_out"
  mv "$_di_out.new" "$_di_out"
}
