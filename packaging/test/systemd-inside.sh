#!/usr/bin/env bash
# Runs inside the booted bookworm container of systemd.sh, as root: installs
# /root/certorder.deb and does what an operator does with it. Each check
# says what it found; the first failure stops it.
set -euo pipefail
step() { echo "-- $*"; }
fail() { echo "FAIL: $*" >&2; exit 1; }
unit=certorder.service
url=http://127.0.0.1:8080/api/digicert/

# What the system holds before: every file and dangling symlink outside the
# places that change by themselves (logs, caches, dpkg's and apt's records).
snapshot() {
  find / -xdev \( -path /proc -o -path /sys -o -path /run -o -path /tmp -o -path /var/tmp -o -path /var/log \
    -o -path /var/cache -o -path /var/lib/dpkg -o -path /var/lib/apt -o -path /var/lib/systemd -o -path /root \) -prune \
    -o -print | sort
}
dangling() { find / -xdev \( -path /proc -o -path /sys -o -path /run \) -prune -o -xtype l -print | sort; }
snapshot >/root/files.before
dangling >/root/dangling.before

step "install (dpkg -i, with nothing but the package's declared dependencies present)"
dpkg -i /root/certorder.deb >/root/dpkg.log 2>&1 || { cat /root/dpkg.log; fail "dpkg -i"; }
systemctl is-enabled --quiet $unit && fail "installing enabled the service"
systemctl is-active --quiet $unit && fail "installing started the service"

waitfor() { # waitfor SECONDS COMMAND...: until COMMAND succeeds
  local end=$((SECONDS + $1)); shift
  until "$@" >/dev/null 2>&1; do [ $SECONDS -lt $end ] || return 1; sleep 0.1; done
}
mainpid() { systemctl show -P MainPID $unit; }
as_certorder() { runuser -u certorder -- env CERTORDER_DB=/var/lib/certorder/certorder.db "$@"; }
auth() { certorder auth --url $url --access-name ci --access-key-file /root/key --timeout 5s; }

step "start: enable --now, the store made, Auth answered on loopback"
systemctl enable --now $unit
waitfor 20 test -f /var/lib/certorder/certorder.db || fail "no store after start: $(systemctl status $unit --no-pager)"
as_certorder certorder admin member add ci >/dev/null
as_certorder certorder admin key create ci | tail -1 >/root/key
chmod 600 /root/key
waitfor 20 auth || { auth || true; fail "Auth did not answer"; }
echo "Auth answered by PID $(mainpid)"

step "reload under load: same main PID, nothing lost, logged"
pid=$(mainpid)
( n=0; for i in $(seq 1 60); do auth >/dev/null || n=$((n + 1)); done; echo $n >/root/lost ) &
load=$!
sleep 0.2
for i in 1 2 3; do systemctl reload $unit || fail "systemctl reload: $(systemctl status $unit --no-pager -n 5)"; sleep 0.2; done
wait $load
[ "$(cat /root/lost)" = 0 ] || fail "$(cat /root/lost) of 60 requests failed around the reloads"
systemctl is-active --quiet $unit || fail "reload stopped the service"
[ "$(mainpid)" = "$pid" ] || fail "reload changed the main PID: $pid -> $(mainpid)"
# The journal lags a little behind the process.
logged() { journalctl _SYSTEMD_UNIT=$unit _PID="$1" -o cat | grep -q "$2"; }
waitfor 10 logged "$pid" 'SIGHUP: nothing to reload' || fail "no reload line in the journal"
auth >/dev/null || fail "no answer after reload"
echo "3 reloads, 60 requests, none lost; PID $pid"

step "restart: a new main PID that answers"
systemctl restart $unit
[ "$(mainpid)" != "$pid" ] || fail "restart kept PID $pid"
waitfor 20 auth || fail "no answer after restart"
echo "PID $pid -> $(mainpid)"

step "journal: every line of the service's process is structured"
structured() { # structured PID REGEX
  local lines bad
  lines=$(journalctl _SYSTEMD_UNIT=$unit _PID="$1" -o cat)
  [ -n "$lines" ] || fail "no journal lines from PID $1"
  bad=$(grep -Ev "$2" <<<"$lines" || true)
  [ -z "$bad" ] || fail "unstructured journal lines from PID $1: $bad"
  echo "$(wc -l <<<"$lines") lines, all matching $2"
}
waitfor 10 logged "$(mainpid)" 'msg=listening' || fail "no listening line"
structured "$(mainpid)" '^time=[^ ]+ level=[A-Z]+ msg='
echo CERTORDER_LOG_FORMAT=json >>/etc/certorder/certorder.env
systemctl restart $unit
waitfor 20 auth || fail "no answer with json logs"
waitfor 10 logged "$(mainpid)" '"msg":"listening"' || fail "no listening line"
structured "$(mainpid)" '^\{"time":"[^"]+","level":"[A-Z]+","msg":'

step "systemd-analyze security: exposure at most $MAX_EXPOSURE"
exposure=$(systemd-analyze security $unit --no-pager | sed -n 's/.*Overall exposure level for [^:]*: \([0-9.]*\).*/\1/p')
[ -n "$exposure" ] || fail "no exposure level"
awk -v e="$exposure" -v m="$MAX_EXPOSURE" 'BEGIN { exit !(e <= m) }' ||
  fail "exposure $exposure is above $MAX_EXPOSURE: systemd-analyze security $unit"
echo "exposure $exposure"

step "the sync timer and the units are valid (systemd-analyze verify)"
out=$(systemd-analyze verify /usr/lib/systemd/system/certorder-sync.timer /usr/lib/systemd/system/certorder-sync.service \
  /usr/lib/systemd/system/$unit 2>&1) || fail "verify: $out"
[ -z "$out" ] || fail "verify: $out"
systemctl enable --now certorder-sync.timer
systemctl is-active --quiet certorder-sync.timer || fail "the timer is not active"
echo "verified; timer next: $(systemctl show -P NextElapseUSecRealtime certorder-sync.timer)"

step "stop: exits cleanly"
pid=$(mainpid)
systemctl stop $unit
[ "$(systemctl show -P Result $unit)" = success ] || fail "stop: Result=$(systemctl show -P Result $unit)"
[ "$(systemctl show -P ExecMainStatus $unit)" = 0 ] || fail "stop: exit status $(systemctl show -P ExecMainStatus $unit)"
waitfor 10 logged "$pid" '"msg":"stopped"' || fail "no stopped line"
echo "exit status 0"

step "purge: what the package made is gone, no dangling symlinks"
# The store is data: a purge keeps a non-empty /var/lib/certorder (and its
# user). Emptied first, everything must go.
rm -rf /var/lib/certorder/*
apt-get purge -y -qq certorder >/root/purge.log 2>&1 || { cat /root/purge.log; fail "apt-get purge"; }
getent passwd certorder >/dev/null && fail "the certorder user is left"
getent group certorder >/dev/null && fail "the certorder group is left"
systemctl daemon-reload
systemctl list-unit-files 'certorder*' --no-legend | grep -q . && fail "units left: $(systemctl list-unit-files 'certorder*' --no-legend)"
left=$(comm -13 /root/files.before <(snapshot))
[ -z "$left" ] || fail "left behind: $left"
[ -e /var/lib/systemd/timers/stamp-certorder-sync.timer ] && fail "the timer's stamp file is left"
dl=$(comm -13 /root/dangling.before <(dangling))
[ -z "$dl" ] || fail "dangling symlinks: $dl"
echo "the system is as before the install"
