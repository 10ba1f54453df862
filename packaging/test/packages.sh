#!/usr/bin/env bash
# The built packages under their distributions' own tools: lintian on the
# .deb, rpmlint on the .rpm (packaging/README.md, "Linters", argues what they
# still say), and the .rpm installed and erased with rpm --root in a scratch
# root. Run by .ci/run under CI=true; needs root (rpm --root chroots).
#
#   packaging/test/packages.sh [DEB [RPM]]
set -euo pipefail
cd "$(dirname "$0")/../.."
. packaging/test/root.sh

[ "$(id -u)" = 0 ] || { echo "FAIL: packages.sh needs root (rpm --root)" >&2; exit 1; }
deb=$(realpath "${1:-$(ls dist/certorder_*_"$(dpkg --print-architecture)".deb)}")
rpm=$(realpath "${2:-$(ls dist/certorder-*."$(uname -m)".rpm)}")
need lintian lintian
need rpmlint rpmlint
# Without python3-magic (only recommended) rpmlint sees no binary at all.
if ! /usr/bin/python3 -c 'import magic' 2>/dev/null; then
  [ "${CI:-}" = true ] && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-magic >/dev/null
  /usr/bin/python3 -c 'import magic' || { echo "FAIL: rpmlint needs python3-magic (apt-get install python3-magic)" >&2; exit 1; }
fi
need rpm rpm
need cpio cpio

echo "-- lintian $(basename "$deb")"
lintian --fail-on error,warning --tag-display-limit 0 "$deb"
echo "lintian: no error or warning left (overrides: packaging/debian/lintian-overrides)"

echo "-- rpmlint $(basename "$rpm")"
# rpmlint unpacks with "rpm2cpio | cpio -id", and nfpm's payload has absolute
# paths, which GNU cpio would write into /: a cpio in front of the real one
# keeps them in rpmlint's temporary directory.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/bin"
printf '#!/bin/sh\nexec %s --no-absolute-filenames "$@"\n' "$(command -v cpio)" >"$tmp/bin/cpio"
chmod +x "$tmp/bin/cpio"
(cd "$tmp" && PATH=$tmp/bin:$PATH rpmlint -c "$OLDPWD/packaging/rpmlint.toml" "$rpm")

echo "-- the rpm's requirements"
want='/bin/sh /usr/bin/kill /usr/sbin/groupadd /usr/sbin/groupdel /usr/sbin/useradd /usr/sbin/userdel'
got=$(rpm -qpR "$rpm" 2>/dev/null | grep -v '^rpmlib(' | sort | tr '\n' ' ' | sed 's/ $//')
[ "$got" = "$want" ] || { echo "FAIL: Requires: $got; want $want" >&2; exit 1; }
[ "$(rpm -qp --qf '%{LICENSE}' "$rpm" 2>/dev/null)" = Apache-2.0 ] || { echo "FAIL: License is not Apache-2.0" >&2; exit 1; }
echo "Requires: $got; License: Apache-2.0"

echo "-- rpm --root: install, scripts, erase"
root=$tmp/root
mkdir "$root"
debian_root "$root" "$(deb_root_include "$deb")"   # systemd.sh's root, cached
in_root() { chroot "$root" "$@"; }
rpm --root "$root" --initdb
# --nodeps: the root's files are Debian's, in no rpm database.
rpm --root "$root" -i --nodeps "$rpm" 2>&1 | grep -v 'use Alien\|assuming you know'
in_root getent passwd certorder >/dev/null || { echo "FAIL: %post made no certorder user" >&2; exit 1; }
[ "$(in_root stat -c %U:%G:%a /var/lib/certorder)" = certorder:certorder:750 ] ||
  { echo "FAIL: /var/lib/certorder is $(in_root stat -c %U:%G:%a /var/lib/certorder)" >&2; exit 1; }
[ "$(in_root stat -c %U:%G:%a /etc/certorder/certorder.env)" = root:certorder:640 ] ||
  { echo "FAIL: certorder.env is $(in_root stat -c %U:%G:%a /etc/certorder/certorder.env)" >&2; exit 1; }
in_root /usr/bin/certorder version
unowned=$(cd "$root" && for d in etc/certorder usr/share/doc/certorder usr/share/licenses/certorder; do
  rpm --root "$root" -qf "/$d" >/dev/null 2>&1 || echo "/$d"; done)
[ -z "$unowned" ] || { echo "FAIL: directories no package owns: $unowned" >&2; exit 1; }
rpm --root "$root" -e certorder 2>&1 | grep -v 'use Alien\|assuming you know' || true
if in_root getent passwd certorder >/dev/null || [ -e "$root/etc/certorder" ] || [ -e "$root/var/lib/certorder" ] ||
  [ -e "$root/usr/bin/certorder" ] || [ -e "$root/usr/share/doc/certorder" ]; then
  echo "FAIL: rpm -e left certorder behind" >&2; exit 1
fi
echo "installed with its scripts, its directories owned, erased without a trace"
