package digicerttest

import (
	"fmt"
	"math/rand/v2"
	"time"
)

// Generated counts what Generate made.
type Generated struct {
	Orders     int
	Containers int
	Renewals   int // orders that renew an earlier one
	// CrossContainer counts renewals placed in another division than the
	// order they renew.
	CrossContainer int
	Pending        int // orders not issued (no valid_till yet)
}

// Generate adds n orders spread over the three years before the
// simulator's now, in divisions of about 2000 orders (at least 3), the same
// for the same seed and clock. About a third of the orders renew an earlier
// one, which makes renewal chains; a fifth of those renewals sit in another
// division than the order they renew. Orders of the last ten days are
// partly still pending; a few are revoked or canceled.
func (s *Server) Generate(n int, seed int64) (Generated, error) {
	if n < 0 {
		return Generated{}, fmt.Errorf("digicerttest: Generate(%d): negative count", n)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	rng := rand.New(rand.NewPCG(uint64(seed), 0x5eed))
	now := s.now().UTC()
	span := 3 * 365 * 24 * time.Hour
	first := now.Add(-span)

	var g Generated
	containers := make([]int64, max(3, n/2000))
	for i := range containers {
		id := int64(10001 + i)
		if _, ok := s.containers[id]; !ok {
			s.containers[id] = fmt.Sprintf("Division %c%d", 'A'+rune(i%26), i/26)
		}
		containers[i] = id
	}
	g.Containers = len(containers)

	var renewable []int64 // issued orders not renewed yet
	for i := range n {
		created := first.Add(time.Duration(float64(span) * float64(i) / float64(max(n, 1))))
		created = created.Add(time.Duration(rng.Int64N(int64(time.Hour))))
		var id int64
		if len(renewable) > 0 && rng.IntN(3) == 0 {
			k := rng.IntN(len(renewable))
			old := renewable[k]
			renewable[k] = renewable[len(renewable)-1]
			renewable = renewable[:len(renewable)-1]
			container := int64(0)
			if rng.IntN(5) == 0 {
				container = containers[rng.IntN(len(containers))]
				if container == s.orders[old].containerID {
					container = containers[(rng.IntN(len(containers)-1)+1+indexOf(containers, container))%len(containers)]
				}
				g.CrossContainer++
			}
			var err error
			if id, err = s.renew(old, container, created); err != nil {
				return g, fmt.Errorf("digicerttest: %w", err)
			}
			g.Renewals++
		} else {
			host := fmt.Sprintf("host%d.%s.example.com", i, []string{"shop", "api", "mail", "intranet"}[rng.IntN(4)])
			spec := OrderSpec{
				ContainerID:   containers[rng.IntN(len(containers))],
				CommonName:    host,
				DNSNames:      []string{host, "www." + host},
				ProductNameID: Products[rng.IntN(len(Products))].NameID,
				ValidityYears: 1 + rng.IntN(3),
				Created:       created,
			}
			switch rng.IntN(3) {
			case 0:
				spec.APIKeyName = "automation key"
			case 1:
				spec.ACMEDirectory = "https://acme.digicert.com/v2/acme/directory/"
			}
			if spec.ProductNameID == "ssl_wildcard" {
				spec.Wildcards = 1
			}
			var err error
			if id, err = s.addOrder(spec); err != nil {
				return g, err
			}
		}
		o := s.orders[id]
		recent := now.Sub(created) < 10*24*time.Hour
		switch {
		case recent && rng.IntN(2) == 0:
			g.Pending++ // stays pending
		case rng.IntN(50) == 0:
			s.issue(o, notAfter(created.Add(time.Hour), now))
			o.status = []string{"revoked", "canceled"}[rng.IntN(2)]
			o.statusChanged = notAfter(created.Add(48*time.Hour), now).Truncate(time.Second)
		default:
			s.issue(o, notAfter(created.Add(time.Duration(rng.Int64N(int64(72*time.Hour)))), now))
			renewable = append(renewable, id)
		}
		g.Orders++
	}
	return g, nil
}

// notAfter keeps generated events out of the future.
func notAfter(t, now time.Time) time.Time {
	if t.After(now) {
		return now
	}
	return t
}

func indexOf(list []int64, v int64) int {
	for i, x := range list {
		if x == v {
			return i
		}
	}
	return -1
}
