#!/usr/bin/env bash
# The real ACME clients from Debian (certbot, lego) across a contract renewal:
# certorder on loopback, the test ACME server (Pebble behind the gate that
# plays DigiCert's directory URL, internal/acmegate) on loopback. Each client
# gets a certificate for order OLD; certorder records the renewal OLD -> NEW
# (NEW pending, not issued); the client renews with the URL
# "certorder acme-url" prints, and the gate must have issued under NEW with
# no second ACME account registered. Under CI=true a missing client fails.
# No secret (API key, EAB HMAC key) is printed: they live in files.
set -euo pipefail
cd "$(dirname "$0")/.."
ci() { [ "${CI:-}" = "true" ]; }
start=$SECONDS

missing=()
command -v certbot >/dev/null 2>&1 || missing+=(certbot)
command -v lego >/dev/null 2>&1 || missing+=(lego)
command -v jq >/dev/null 2>&1 || missing+=(jq)      # reads the gate's status
command -v curl >/dev/null 2>&1 || missing+=(curl)
if [ ${#missing[@]} -gt 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  { apt-get update -qq && apt-get install -y -qq "${missing[@]}" >/dev/null; } || echo "could not install: ${missing[*]}" >&2
fi
for c in certbot lego jq curl python3; do
  if ! command -v $c >/dev/null 2>&1; then
    if ci; then echo "FAIL: $c is not installed (apt-get install -y certbot lego jq curl)" >&2; exit 1; fi
    echo "$c is not installed: the ACME client check is skipped (apt-get install -y certbot lego jq curl)"
    exit 0
  fi
done
echo "certbot $(certbot --version 2>&1 | awk '{print $2}'), lego $(dpkg-query -W -f='${Version}' lego 2>/dev/null || echo '?')"

tmp=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT
go build -o "$tmp/certorder" ./cmd/certorder
go build -o "$tmp/acmegate" ./internal/acmegate/cmd/acmegate
certorder="$tmp/certorder"

# fail MESSAGE: says it, with the logs (secrets masked), and stops.
fail() {
  echo "FAIL: $*" >&2
  for f in "$tmp"/*.log "$tmp"/certbot/logs/letsencrypt.log; do
    [ -f "$f" ] || continue
    echo "--- $f (last 40 lines)" >&2
    tail -40 "$f" | sed -e "s/$(cat "$tmp/hmac")/***/g" -e "s/$(cat "$tmp/key")/***/g" >&2
  done
  exit 1
}
# free_port: a TCP port nobody listens on now.
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
# wait_for FILE PATTERN: the first match of PATTERN's group in FILE, within 20 s.
wait_for() {
  for _ in $(seq 1 200); do
    m=$(sed -nE "s#.*$2.*#\\1#p" "$1" | head -1)
    [ -n "$m" ] && { echo "$m"; return; }
    sleep 0.1
  done
  fail "nothing matched '$2' in $1"
}

# certorder: member acme, order OLD issued.
OLD=21000105 NEW=21000106 LOLD=21000205 LNEW=21000206
export CERTORDER_DB="$tmp/certorder.db"
"$certorder" admin migrate >/dev/null
"$certorder" admin member add acme >/dev/null
"$certorder" admin key create acme --label "ACME CI" | tail -1 >"$tmp/key"
chmod 600 "$tmp/key"
order() { # order ID STATUS [VALID_TILL]
  local till=""
  [ -n "${3:-}" ] && till=",\"valid_from\":\"2026-01-01\",\"valid_till\":\"$3\""
  printf '{"OrderId":%s,"certificate":{"id":%s,"common_name":"www.certorder.test","dns_names":["www.certorder.test"],"status":"%s"%s},"status":"%s","product":{"name_id":"ssl_basic","name":"Basic","type":"ssl_certificate","csr_required":true}}' \
    "$1" "$1" "$2" "$till" "$2"
}
echo "[$(order $OLD issued 2099-01-01),$(order $LOLD issued 2099-01-01)]" >"$tmp/old.json"
"$certorder" admin order import --member acme "$tmp/old.json" >/dev/null
"$certorder" serve --addr 127.0.0.1:0 --web=false >"$tmp/serve.log" 2>&1 &
pids+=($!)
endpoint=$(wait_for "$tmp/serve.log" 'listening on (http://[^ ]+)')
export CERTORDER_URL=$endpoint CERTORDER_ACCESS_NAME=acme
acme_url() { "$certorder" acme-url --access-key-file "$tmp/key" "$@"; }

# The gate and Pebble. Pebble's validation is skipped (PEBBLE_VA_ALWAYS_VALID):
# certbot refuses a one-label name such as localhost, and other names do not
# resolve to loopback here; go test does http-01 for real on loopback.
head -c 32 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=\n' >"$tmp/hmac"
httpport=$(free_port)
PEBBLE_VA_NOSLEEP=1 PEBBLE_VA_ALWAYS_VALID=1 PEBBLE_WFE_NONCEREJECT=0 "$tmp/acmegate" -addr 127.0.0.1:0 -tls-ca-out "$tmp/gate-ca.pem" \
  -eab-kid kid-1 -eab-hmac-file "$tmp/hmac" -url "$endpoint" -access-name acme -access-key-file "$tmp/key" \
  -http-port "$httpport" >"$tmp/gate.log" 2>&1 &
pids+=($!)
gate=$(wait_for "$tmp/gate.log" 'listening on (https://[^ ]+)')
directory="$gate/mpki/api/v1/acme/v2/directory"
status() { curl -sf --cacert "$tmp/gate-ca.pem" "$gate/gate-status"; }
# issued: the orders the gate issued under, space-separated.
issued() { status | jq -r '[.issuances[].orderId] | map(tostring) | join(" ")'; }
accounts() { status | jq -r .accounts; }
# renew_in_certorder OLD NEW: NEW, pending, renews OLD.
renew_in_certorder() {
  order "$2" pending >"$tmp/new.json"
  "$certorder" admin order import --member acme "$tmp/new.json" >/dev/null
  "$certorder" admin order renew "$1" "$2" >/dev/null
}

echo "== certbot: a certificate for order $OLD"
cb=(--config-dir "$tmp/certbot/config" --work-dir "$tmp/certbot/work" --logs-dir "$tmp/certbot/logs")
export REQUESTS_CA_BUNDLE="$tmp/gate-ca.pem"
url=$(acme_url "$directory?action=renew&orderId=$OLD")
[ "$url" = "$directory?action=renew&orderId=$OLD" ] || fail "acme-url before the renewal: $url"
certbot certonly "${cb[@]}" --non-interactive --agree-tos --register-unsafely-without-email \
  --standalone --http-01-address 127.0.0.1 --http-01-port "$httpport" \
  --server "$url" --eab-kid kid-1 --eab-hmac-key "$(cat "$tmp/hmac")" \
  --cert-name www -d www.certorder.test >"$tmp/certbot.log" 2>&1 || fail "certbot certonly"
[ "$(issued)" = "$OLD" ] || fail "the gate issued under '$(issued)', want $OLD"

echo "== certorder: $NEW (pending) renews $OLD; certbot renew with the unchanged command"
renew_in_certorder $OLD $NEW
conf="$tmp/certbot/config/renewal/www.conf"
cp "$conf" "$tmp/www.conf.before"
server=$(acme_url --certbot-renewal "$conf" 2>"$tmp/acme-url.err")
cmp -s "$conf" "$tmp/www.conf.before" || fail "acme-url changed the renewal file"
[ "$server" = "$directory?action=renew&orderId=$NEW" ] || fail "acme-url --certbot-renewal: $server"
grep -qx "order $OLD was renewed by $NEW (pending)" "$tmp/acme-url.err" || fail "acme-url's note: $(cat "$tmp/acme-url.err")"
# The member's timer line, as docs/ACME.md gives it:
certbot renew "${cb[@]}" --cert-name www --force-renewal --no-random-sleep-on-renew \
  --server "$(acme_url --certbot-renewal "$conf")" >>"$tmp/certbot.log" 2>&1 || fail "certbot renew"
[ "$(issued)" = "$OLD $NEW" ] || fail "the gate issued under '$(issued)', want $OLD $NEW"
[ "$(accounts)" = 1 ] || fail "$(accounts) ACME accounts registered, want 1"
n=$(find "$tmp/certbot/config/accounts" -name regr.json | wc -l)
[ "$n" = 1 ] || fail "certbot has $n accounts, want 1"
grep -q "^server = $directory?action=renew&orderId=$NEW\$" "$conf" || fail "certbot did not keep the new server in its renewal file"
code=$(curl -s -o "$tmp/stale.json" -w '%{http_code}' --cacert "$tmp/gate-ca.pem" "$directory?action=renew&orderId=$OLD")
[ "$code" = 403 ] && jq -e '.type == "urn:ietf:params:acme:error:unauthorized"' "$tmp/stale.json" >/dev/null &&
  grep -q "renewed by order $NEW" "$tmp/stale.json" || fail "the stale URL was not refused: $code $(cat "$tmp/stale.json")"
echo "certbot: issued under $OLD, renewed under $NEW, one account; the stale URL refused"

echo "== lego: a certificate for order $LOLD, renewal $LNEW, lego renew"
export LEGO_CA_CERTIFICATES="$tmp/gate-ca.pem"
lg=(--path "$tmp/lego" --email acme@certorder.test --domains www.certorder.test --http --http.port "127.0.0.1:$httpport")
member_url="$directory?action=renew&orderId=$LOLD"   # the member's configuration, never edited
lego "${lg[@]}" --accept-tos --eab --kid kid-1 --hmac "$(cat "$tmp/hmac")" --server "$(acme_url "$member_url")" \
  run >"$tmp/lego.log" 2>&1 || fail "lego run"
[ "$(issued)" = "$OLD $NEW $LOLD" ] || fail "the gate issued under '$(issued)', want $OLD $NEW $LOLD"
renew_in_certorder $LOLD $LNEW
# lego 4.9 wants --eab whenever the server requires it, but registers only
# when it has no account for the server's host: the gate counts registrations.
lego "${lg[@]}" --eab --kid kid-1 --hmac "$(cat "$tmp/hmac")" --server "$(acme_url "$member_url")" renew --days 100000 --no-random-sleep >>"$tmp/lego.log" 2>&1 ||
  fail "lego renew"
[ "$(issued)" = "$OLD $NEW $LOLD $LNEW" ] || fail "the gate issued under '$(issued)', want $OLD $NEW $LOLD $LNEW"
[ "$(accounts)" = 2 ] || fail "$(accounts) ACME accounts registered, want 2 (one for certbot, one for lego)"
n=$(find "$tmp/lego/accounts" -name account.json | wc -l)
[ "$n" = 1 ] || fail "lego has $n accounts, want 1"
echo "lego: issued under $LOLD, renewed under $LNEW, one account"

echo "ACME clients passed in $((SECONDS - start)) s"
