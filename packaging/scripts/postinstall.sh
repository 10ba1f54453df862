#!/bin/sh
# After the files are in place (deb: postinst configure; rpm: %post, $1 = 1
# on install, 2 on upgrade). Makes the certorder system user, gives it the
# state directory and the configuration file's group, and restarts a running
# service after an upgrade. It never enables or starts the service: the
# operator reviews /etc/certorder/certorder.env first.
set -e

case "$1" in
  configure | 1 | 2) ;;
  *) exit 0 ;; # deb abort-upgrade and the like
esac

if ! getent group certorder >/dev/null; then
  groupadd --system certorder
fi
if ! getent passwd certorder >/dev/null; then
  nologin=$(command -v nologin || echo /usr/sbin/nologin)
  useradd --system --gid certorder --home-dir /var/lib/certorder --no-create-home \
    --shell "$nologin" --comment "certorder service" certorder
fi

install -d -o certorder -g certorder -m 0750 /var/lib/certorder
# The environment file may hold a database password.
chown root:certorder /etc/certorder/certorder.env
chmod 0640 /etc/certorder/certorder.env

if [ -d /run/systemd/system ]; then
  systemctl daemon-reload || true
  # An upgrade: a running service moves to the new binary.
  systemctl try-restart certorder.service || true
fi

if [ "$1" = configure ] && [ -z "$2" ] || [ "$1" = 1 ]; then
  cat <<'MSG'
certorder is installed. Review /etc/certorder/certorder.env, then:
  systemctl enable --now certorder.service
Operator commands run as the certorder user, with the service's store:
  sudo -u certorder CERTORDER_DB=/var/lib/certorder/certorder.db certorder admin member list
MSG
fi
exit 0
