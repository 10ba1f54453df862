# Sourced by the packaging checks: debian_root DIR INCLUDES makes DIR a fresh
# Debian bookworm root (mmdebstrap --variant=minbase plus INCLUDES, a comma-
# separated package list), from a tarball cached in $CERTORDER_CI_CACHE
# (default /var/cache/certorder-ci) keyed by the suite, mirror, architecture
# and package list, and rebuilt once a week. The first run downloads from the Debian mirror this
# machine's apt uses (about 40 s); later runs only unpack (a few seconds).

# need TOOL PACKAGE...: TOOL is on PATH, or under CI=true the packages are
# installed; otherwise the check fails. A check never skips silently.
need() {
  local tool=$1; shift
  command -v "$tool" >/dev/null 2>&1 && return 0
  if [ "${CI:-}" = true ]; then
    echo "installing $* (for $tool)"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null ||
      { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null; }
  fi
  command -v "$tool" >/dev/null 2>&1 || { echo "FAIL: $tool is missing (apt-get install $*)" >&2; exit 1; }
}

# debian_mirror: the first Debian archive (not the security one) in apt's
# sources, deb822 or one-line style.
debian_mirror() {
  local m
  m=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources 2>/dev/null |
    grep -Ev '^[[:space:]]*#' | grep -oE 'https?://[^ ]+' | grep -v -- '-security' | head -1)
  echo "${m:-http://deb.debian.org/debian}"
}

debian_root() {
  local dir=$1 include=$2 suite=bookworm
  need mmdebstrap mmdebstrap
  local mirror key cache tarball
  mirror=$(debian_mirror)
  key=$(printf '%s\n' "$suite" "$mirror" "$(dpkg --print-architecture)" "$include" | sha256sum | cut -c1-16)
  cache=${CERTORDER_CI_CACHE:-/var/cache/certorder-ci}
  tarball=$cache/$suite-$key.tar
  mkdir -p "$cache"
  (
    # Other checkouts on this machine may build the same root at once.
    flock 9
    # A week-old root is rebuilt: bookworm's point releases move on.
    find "$cache" -maxdepth 1 -name "$suite-$key.tar" -mtime +7 -delete
    if [ ! -f "$tarball" ]; then
      echo "building the $suite root ($include) from $mirror into $tarball"
      local t=$SECONDS
      rm -rf "$tarball.tmp" # a run that failed half-way
      mmdebstrap --quiet --format=tar --variant=minbase --include="$include" "$suite" "$tarball.tmp" "$mirror" ||
        { rm -rf "$tarball.tmp"; exit 1; }
      mv "$tarball.tmp" "$tarball"
      echo "   (mmdebstrap: $((SECONDS - t)) s)"
    fi
  ) 9>"$cache/lock"
  tar -xf "$tarball" -C "$dir"
}

# deb_root_include DEB: the packages of the roots the checks use: systemd and
# what DEB declares it depends on (so that both checks share one cached root).
deb_root_include() {
  echo "systemd,systemd-sysv,dbus,ca-certificates,$(dpkg-deb -f "$1" Depends | sed 's/([^)]*)//g; s/[[:space:]]//g')"
}
