#!/usr/bin/env bash
# The .deb under real systemd: boots a Debian bookworm root (systemd-nspawn
# --boot --private-network) holding only the package's declared dependencies,
# installs the package and checks what an operator does with it
# (systemd-inside.sh). Run by .ci/run under CI=true; needs root.
#
#   packaging/test/systemd.sh [dist/certorder_..._amd64.deb]
set -euo pipefail
cd "$(dirname "$0")/../.."
. packaging/test/root.sh

# systemd-analyze security's overall exposure of certorder.service, measured
# with systemd 252 (bookworm): 1.5 when this was written. It may only go down.
max_exposure=${CERTORDER_MAX_EXPOSURE:-1.5}

[ "$(id -u)" = 0 ] || { echo "FAIL: systemd.sh needs root (systemd-nspawn)" >&2; exit 1; }
deb=${1:-$(ls dist/certorder_*_"$(dpkg --print-architecture)".deb)}
need systemd-nspawn systemd-container
need nsenter util-linux

root=$(mktemp -d /var/tmp/certorder-systemd.XXXXXX)
machine=certorder-ci-$$
log=$root.log
nspawn_pid=
cleanup() {
  local rc=$?
  if [ -n "$nspawn_pid" ] && kill -0 "$nspawn_pid" 2>/dev/null; then
    [ -n "${leader:-}" ] && nsenter -t "$leader" -a systemctl poweroff >/dev/null 2>&1 || kill "$nspawn_pid" 2>/dev/null || true
    for _ in $(seq 1 50); do kill -0 "$nspawn_pid" 2>/dev/null || break; sleep 0.2; done
    kill -9 "$nspawn_pid" 2>/dev/null || true
  fi
  [ $rc = 0 ] || { echo "--- the container's console:"; tail -40 "$log" 2>/dev/null || true; }
  rm -rf "$root" "$log"
  exit $rc
}
trap cleanup EXIT
t=$SECONDS
# The root: minbase, systemd, and what the package says it depends on.
debian_root "$root" "$(deb_root_include "$deb")"
echo "   (root ready: $((SECONDS - t)) s)"
cp "$deb" "$root/root/certorder.deb"
cp packaging/test/systemd-inside.sh "$root/root/inside.sh"

args=(--quiet --boot --private-network -D "$root" -M "$machine")
if [ ! -d /run/systemd/system ]; then
  # This machine does not run systemd (a CI container): nspawn cannot
  # register the machine or make a scope unit, and it removes its
  # propagation directory only from a tmpfs.
  args+=(--register=no --keep-unit)
  mkdir -p /run/systemd/nspawn
  mountpoint -q /run/systemd/nspawn || mount -t tmpfs -o mode=0755 tmpfs /run/systemd/nspawn
fi
systemd-nspawn "${args[@]}" </dev/null >"$log" 2>&1 &
nspawn_pid=$!

# The container's init is nspawn's child.
leader=
for _ in $(seq 1 100); do
  leader=$(pgrep -P "$nspawn_pid" -x systemd || true)
  [ -n "$leader" ] && break
  kill -0 "$nspawn_pid" 2>/dev/null || { echo "FAIL: systemd-nspawn exited" >&2; exit 1; }
  sleep 0.1
done
[ -n "$leader" ] || { echo "FAIL: no systemd in the container" >&2; exit 1; }
# systemctl answers once systemd's private socket is up: until then, retry.
state=
for _ in $(seq 1 300); do
  state=$(timeout 60 nsenter -t "$leader" -a systemctl is-system-running --wait 2>/dev/null || true)
  [ -n "$state" ] && break
  sleep 0.2
done
echo "booted ($state) in $((SECONDS - t)) s"
case $state in running | degraded) ;; *) echo "FAIL: the container did not boot: $state" >&2; exit 1 ;; esac

timeout 150 nsenter -t "$leader" -a env MAX_EXPOSURE="$max_exposure" bash /root/inside.sh
echo "systemd check passed in $((SECONDS - t)) s"
