package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// wrkScript makes wrk send the benchmark's requests: each thread draws
// order numbers itself, uniformly or by Zipf's law (the rejection-inversion
// sampler of Hörmann and Derflinger, as Go's math/rand.Zipf), from a seed
// of its own, so that the same run sends the same requests to the bare
// handler and to the service. A rank is mapped to an order number by a
// fixed permutation, so that the popular orders are spread over the store
// rather than packed at its start. done() prints one line the Go side
// reads.
const wrkScript = `
local counter = 0
function setup(thread)
  counter = counter + 1
  thread:set("tid", counter)
end

local mode, access, n, key, name, seed
local zq, zv, zimax, zomq, zomqinv, zhxm, zhx0mhxm, zs

local function h(x) return math.exp(zomq * math.log(zv + x)) * zomqinv end
local function hinv(x) return math.exp(zomqinv * math.log(zomq * x)) - zv end

local function zipf()
  while true do
    local ur = zhxm + math.random() * zhx0mhxm
    local x = hinv(ur)
    local k = math.floor(x + 0.5)
    if k - x <= zs then return k end
    if ur >= h(k + 0.5) - math.exp(-math.log(k + zv) * zq) then return k end
  end
end

-- rank 0.. n-1 to order number 1..n: k*7919 mod n is a permutation when n is
-- not a multiple of 7919.
local function order(k) return (k * 7919) % n + 1 end

local function draw()
  if access == "zipf" then return order(zipf()) end
  return order(math.random(0, n - 1))
end

local heads = {}
local function req(body)
  local len = #body
  local head = heads[len]
  if head == nil then
    head = "POST " .. wrk.path .. " HTTP/1.1\r\nHost: " .. wrk.host .. ":" .. tostring(wrk.port) ..
      "\r\nContent-Type: application/json\r\nContent-Length: " .. len .. "\r\n\r\n"
    heads[len] = head
  end
  return head .. body
end

local authBody, failBody, prefix
function init(args)
  mode, access, n, key, name, seed = args[1], args[2], tonumber(args[3]), args[4], args[5], tonumber(args[6])
  math.randomseed(seed + tid * 7919)
  zq, zv, zimax = 1.1, 1.0, n - 1
  zomq = 1.0 - zq
  zomqinv = 1.0 / zomq
  zhxm = h(zimax + 0.5)
  zhx0mhxm = h(0.5) - math.exp(math.log(zv) * (-zq)) - zhxm
  zs = 1 - hinv(h(1.5) - math.exp(-zq * math.log(zv + 1.0)))
  prefix = '{"AccessName":"' .. name .. '","AccessKey":"' .. key .. '","action":'
  authBody = req(prefix .. '"Auth"}')
  failBody = req('{"AccessName":"' .. name .. '","AccessKey":"' .. key:sub(1, #key - 4) .. 'aaaa","action":"Auth"}')
end

local function info(id) return req(prefix .. '"OrderInfo","orderId":' .. string.format("%d", id) .. '}') end
local function renew(id)
  if id % 2 == 0 then id = id - 1 end -- odd orders are renewed by the next one
  return req(prefix .. '"RenewCheck","orderId":' .. string.format("%d", id) .. '}')
end

function request()
  if mode == "info" then return info(draw()) end
  if mode == "auth" then return authBody end
  if mode == "authfail" then return failBody end
  if mode == "renew" then return renew(draw()) end
  -- mix: 40% OrderInfo, 30% RenewCheck, 20% Auth, 5% a wrong key, 5% no such order
  local p = math.random(0, 99)
  if p < 5 then return failBody end
  if p < 10 then return info(n + 1 + math.random(0, n - 1)) end
  if p < 50 then return info(draw()) end
  if p < 80 then return renew(draw()) end
  return authBody
end

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format("RESULT requests=%d duration_us=%d status_errors=%d socket_errors=%d p50_us=%d p99_us=%d\n",
    summary.requests, summary.duration, e.status, e.connect + e.read + e.write + e.timeout,
    latency:percentile(50), latency:percentile(99)))
end
`

// wrkMode is the script's mode for a scenario.
var wrkMode = map[string]string{
	"bare": "info", "orderinfo": "info", "auth": "auth", "authfail": "authfail", "renewcheck": "renew", "mix": "mix",
}

var wrkResult = regexp.MustCompile(`RESULT requests=(\d+) duration_us=(\d+) status_errors=(\d+) socket_errors=(\d+) p50_us=(\d+) p99_us=(\d+)`)

// wrkLoad drives url with wrk for d: c.threads threads, c.conns
// connections, the scenario's requests drawn from seed.
func wrkLoad(c *config, dir, url, scenario, access, key string, seed int, d time.Duration) (result, error) {
	script := filepath.Join(dir, "bench.lua")
	if err := os.WriteFile(script, []byte(wrkScript), 0o600); err != nil {
		return result{}, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), d+30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "wrk", "-t", strconv.Itoa(c.threads), "-c", strconv.Itoa(c.conns),
		"-d", fmt.Sprintf("%ds", max(1, int(d.Round(time.Second).Seconds()))), "--timeout", "10s", "-s", script, url,
		"--", wrkMode[scenario], access, strconv.Itoa(c.orders), key, "bench", strconv.Itoa(seed))
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return result{}, fmt.Errorf("wrk: %v\n%s%s", err, out.String(), errOut.String())
	}
	m := wrkResult.FindStringSubmatch(out.String())
	if m == nil {
		return result{}, fmt.Errorf("wrk said:\n%s%s", out.String(), errOut.String())
	}
	v := make([]float64, len(m)-1)
	for i, s := range m[1:] {
		v[i], _ = strconv.ParseFloat(s, 64)
	}
	r := result{rps: v[0] / (v[1] / 1e6), p50: time.Duration(v[4]) * time.Microsecond, p99: time.Duration(v[5]) * time.Microsecond}
	r.requests, r.failures, r.socketErrors = int(v[0]), int(v[2]), int(v[3])
	return r, nil
}

// wrkVersion names wrk as it names itself.
func wrkVersion() string {
	out, _ := exec.Command("wrk", "-v").CombinedOutput()
	first, _, _ := strings.Cut(string(out), "\n")
	if f := strings.Fields(first); len(f) >= 2 {
		return "wrk " + f[1]
	}
	return "wrk"
}
