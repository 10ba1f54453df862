#!/usr/bin/env bash
# The files of the built .deb and .rpm (dpkg-deb -c, rpm -qp) against the one
# list both must match, packaging/test/contents.txt: a file missing from
# either package, one too many, or a mode changed fails. Run by .ci/run after
# the release build; needs dpkg-deb and rpm, not root.
#
#   packaging/test/contents.sh [DEB [RPM]]
set -euo pipefail
cd "$(dirname "$0")/../.."
. packaging/test/root.sh

need dpkg-deb dpkg
need rpm rpm
deb=${1:-$(ls dist/certorder_*_"$(dpkg --print-architecture)".deb)}
rpm=${2:-$(ls dist/certorder-*."$(uname -m)".rpm)}

# want PACKAGE: the list's "MODE PATH" lines for PACKAGE, sorted.
want() { grep -v '^#' packaging/test/contents.txt | awk -v p="$1" '{ for (i = 3; i <= NF; i++) if ($i == p) print $1, $2 }' | sort; }
# The packages' files as "MODE PATH", directories left out.
got_deb=$(dpkg-deb -c "$deb" | awk '$1 !~ /^d/ { sub(/^\./, "", $6); print $1, $6 }' | sort)
got_rpm=$(rpm -qp --qf '[%{FILEMODES:perms} %{FILENAMES}\n]' "$rpm" 2>/dev/null | awk '$1 !~ /^d/' | sort)

fail=0
for p in deb rpm; do
  got=got_$p
  if ! diff=$(diff <(want "$p") <(printf '%s\n' "${!got}")); then
    echo "FAIL: the .$p's files differ from packaging/test/contents.txt (< listed only, > in the package only):" >&2
    echo "$diff" | grep '^[<>]' >&2
    fail=1
  fi
done
[ "$fail" = 0 ] || exit 1
echo "the .deb's $(want deb | wc -l) files and the .rpm's $(want rpm | wc -l) are those of packaging/test/contents.txt, modes included"
