package certorder

// Record is one item of an export (see internal/export): exactly one of its fields is set.
// Key.Member, Link.Member, Order.Member, Endpoint.Member and Notice.Member name the owner.
type Record struct {
	Member   *Member
	Key      *Key
	Link     *ContainerLink
	Order    *Order
	History  []Certificate // with Order: its certificate history, oldest first, as exported
	Endpoint *Endpoint
	Notice   *NoticeAddress
}
