#!/bin/sh
# After the files are gone (deb: postrm remove|purge|upgrade|...; rpm:
# %postun, $1 = 0 on erase). The store in /var/lib/certorder is data, not
# configuration: even a purge keeps it if it holds anything, and then keeps
# the certorder user that owns it. An empty state directory and the user go
# with a purge (deb) or an erase (rpm, which has no purge).
set -e

case "$1" in
  purge | 0) ;;
  remove)
    [ -d /run/systemd/system ] && systemctl daemon-reload >/dev/null 2>&1 || true
    exit 0 ;;
  *) exit 0 ;;
esac

[ -d /run/systemd/system ] && systemctl daemon-reload >/dev/null 2>&1 || true
# systemd's record of the timer's last run (Persistent=true).
rm -f /var/lib/systemd/timers/stamp-certorder-sync.timer

if [ -d /var/lib/certorder ] && ! rmdir /var/lib/certorder 2>/dev/null; then
  echo "certorder: /var/lib/certorder holds data and is kept, with the certorder user that owns it;" \
    "remove both by hand if you mean to" >&2
  exit 0
fi
if getent passwd certorder >/dev/null; then
  userdel certorder || true
fi
if getent group certorder >/dev/null; then
  groupdel certorder 2>/dev/null || true
fi
exit 0
