package server

import "net/netip"

// fairGroups are a ConnLimiter's connections by client (FairKey), and the
// clients ranked by how many they hold, so that admission at the total
// finds the client holding the most without looking at every other.
// Guarded by the limiter's mutex.
type fairGroups struct {
	byKey map[netip.Addr]*connGroup
	// ranks[n] lists the clients holding n connections (ranks[0] unused);
	// top is the largest n listed.
	ranks []*connGroup
	top   int
}

// connGroup is one client's connections, oldest first.
type connGroup struct {
	key         netip.Addr
	n           int
	first, last *limitedConn
	prev, next  *connGroup // in ranks[n]
}

func (f *fairGroups) add(c *limitedConn) {
	g := f.byKey[c.fairKey]
	if g == nil {
		g = &connGroup{key: c.fairKey}
		f.byKey[c.fairKey] = g
	} else {
		f.unrank(g)
	}
	c.group, c.prev, c.next = g, g.last, nil
	if g.last != nil {
		g.last.next = c
	} else {
		g.first = c
	}
	g.last = c
	g.n++
	f.rank(g)
}

func (f *fairGroups) remove(c *limitedConn) {
	g := c.group
	if g == nil {
		return
	}
	if c.prev != nil {
		c.prev.next = c.next
	} else {
		g.first = c.next
	}
	if c.next != nil {
		c.next.prev = c.prev
	} else {
		g.last = c.prev
	}
	c.group, c.prev, c.next = nil, nil, nil
	f.unrank(g)
	if g.n--; g.n == 0 {
		delete(f.byKey, g.key)
		return
	}
	f.rank(g)
}

// victim is an idle connection to close so that a new one from key may be
// admitted: of the client holding the most connections among those that
// hold more than key does, or else of key itself; evictable says whether a
// connection may be closed (and marks it so). nil if there is none.
func (f *fairGroups) victim(key netip.Addr, evictable func(*limitedConn) bool) *limitedConn {
	own := f.byKey[key]
	held := 0
	if own != nil {
		held = own.n
	}
	for n := f.top; n > held; n-- {
		for g := f.ranks[n]; g != nil; g = g.next {
			if c := g.idle(evictable); c != nil {
				return c
			}
		}
	}
	if own != nil {
		return own.idle(evictable)
	}
	return nil
}

// idle is g's oldest connection that evictable accepts, nil if none.
func (g *connGroup) idle(evictable func(*limitedConn) bool) *limitedConn {
	for c := g.first; c != nil; c = c.next {
		if evictable(c) {
			return c
		}
	}
	return nil
}

// rank lists g in ranks[g.n].
func (f *fairGroups) rank(g *connGroup) {
	for len(f.ranks) <= g.n {
		f.ranks = append(f.ranks, nil)
	}
	g.prev, g.next = nil, f.ranks[g.n]
	if g.next != nil {
		g.next.prev = g
	}
	f.ranks[g.n] = g
	f.top = max(f.top, g.n)
}

// unrank takes g out of ranks[g.n].
func (f *fairGroups) unrank(g *connGroup) {
	if g.prev != nil {
		g.prev.next = g.next
	} else {
		f.ranks[g.n] = g.next
	}
	if g.next != nil {
		g.next.prev = g.prev
	}
	g.prev, g.next = nil, nil
	for f.top > 0 && f.ranks[f.top] == nil {
		f.top--
	}
}
