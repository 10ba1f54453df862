package credcache

// Compressed says whether the cache holds the member's order orderID of
// generation gen with its document compressed.
func Compressed(c *Cache, gen uint64, memberID, orderID int64) bool {
	v, ok := c.c.GetIfPresent(key{gen: gen, memberID: memberID, orderID: orderID})
	return ok && len(v.order) > 0 && v.order[0] == 2
}
