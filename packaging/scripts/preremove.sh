#!/bin/sh
# Before the files go (deb: prerm remove|upgrade|...; rpm: %preun, $1 = 0 on
# erase, 1 on upgrade). On removal, stop and disable the units; an upgrade
# leaves them running, and postinstall restarts the service.
set -e

case "$1" in
  remove | 0) ;;
  *) exit 0 ;;
esac

if [ -d /run/systemd/system ]; then
  systemctl disable --now certorder.service certorder-sync.timer certorder-sync.service >/dev/null 2>&1 || true
fi
exit 0
