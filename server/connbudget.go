package server

// DescriptorReserve is what serve keeps of its descriptor limit for all
// but the API's connections: the store (its files, or PostgreSQL's pool
// and its notification and sync connections), outgoing webhooks (32 at
// once and up to 100 idle), CertCentral, the metrics listener, the log:
// the larger of 256 and an eighth of the limit, but at most half of it.
func DescriptorReserve(limit int) int {
	return min(limit/2, max(256, limit/8))
}

// DescriptorBudget is the most connections the API listener may hold:
// the process's descriptor limit, read now, less DescriptorReserve. limit
// is 0 where the system has no such limit (then the budget is
// DefaultConnBudget).
func DescriptorBudget() (budget, limit int) {
	limit = descriptorLimit()
	if limit <= 0 {
		return DefaultConnBudget, 0
	}
	return limit - DescriptorReserve(limit), limit
}

// DefaultConnBudget is the budget where the system sets no descriptor
// limit (Windows).
const DefaultConnBudget = 10000
