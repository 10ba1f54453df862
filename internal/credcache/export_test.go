package credcache

// Compressed says whether the cache holds the member's order orderID of
// generation gen with its record compressed.
func Compressed(c *Cache, gen uint64, memberID, orderID int64) bool {
	k := orderKeyOf(gen, memberID, orderID)
	v, ok := c.a.get(nil, k[:])
	return ok && len(v) > 0 && v[0] == compressed
}

// RingBytes is the size of the cache's rings, and of the entries in them
// (fillers at a lap's end included).
func RingBytes(c *Cache) (size, used int) {
	for i := range c.a.shards {
		s := &c.a.shards[i]
		s.mu.RLock()
		size += len(s.ring)
		used += int(s.head - s.tail)
		s.mu.RUnlock()
	}
	return size, used
}
