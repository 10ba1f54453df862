package main

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The request scenarios (orderinfo, auth, authfail, renewcheck, mix): one
// run's result, what it did not expect, and the table's arithmetic.

type result struct {
	rps                              float64
	p50, p99                         time.Duration
	requests, failures, socketErrors int // failures: answers of status 400 or above
}

// unexpected counts the answers a scenario did not expect: failures where
// it expects 200, successes where it expects a refusal, transport errors.
// The mix expects its 10% of failures.
func unexpected(scenario string, r result) int {
	switch scenario {
	case "authfail":
		return r.requests - r.failures + r.socketErrors
	case "mix":
		return max(0, r.failures-r.requests*12/100) + r.socketErrors // 10% expected, and some slack for chance
	}
	return r.failures + r.socketErrors
}

// drive runs one scenario with the chosen generator.
func drive(c *config, dir, url, scenario, access, key string, seed int, d time.Duration) (result, error) {
	if c.generator == "wrk" {
		return wrkLoad(c, dir, url, scenario, access, key, seed, d)
	}
	return goLoad(url, scenarios(key, c.orders)[scenario], c.orders, access, c.conns, seed, d), nil
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func join(v []float64, format string) string {
	parts := make([]string, len(v))
	for i, x := range v {
		parts[i] = fmt.Sprintf(format, x)
	}
	return strings.Join(parts, ", ")
}

func orderInfo(key string, id int) []byte {
	return []byte(`{"AccessName":"bench","AccessKey":"` + key + `","action":"OrderInfo","orderId":` + strconv.Itoa(id) + `}`)
}

func post(hc *http.Client, url string, body []byte) ([]byte, error) {
	resp, err := hc.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %d %s", url, resp.StatusCode, b)
	}
	return b, err
}
