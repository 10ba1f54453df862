package digicerttest

import "time"

// ExampleKey is the API key "certorder dev simulator" accepts unless given
// another: the data are made up, and the simulator listens on loopback only.
const ExampleKey = "certorder-simulator"

// ExampleOrder describes one order of the example data set.
type ExampleOrder struct {
	ID         int64
	Division   int64
	CommonName string
	Status     string
	Renews     int64 // the order this one renewed, 0 if none
}

// The example data set's divisions.
const (
	ExampleAcme    = 10001
	ExampleGlobex  = 10002
	ExampleInitech = 10003
)

// AddExample adds the data set "certorder dev simulator" serves and
// docs/SYNC.md ("Try it") walks through, dated from the simulator's now:
// three divisions; in Acme Corp's a renewal chain of three orders whose
// newest is pending, a canceled order and a wildcard renewed into Initech's
// division; two orders in Globex's, one pending; one in Initech's. It is
// the same on every start but for the dates. Call it on an empty simulator:
// the orders get the IDs it returns.
func (s *Server) AddExample() []ExampleOrder {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	ago := func(days int) time.Time { return now.AddDate(0, 0, -days) }
	s.containers[ExampleAcme] = "Acme Corp"
	s.containers[ExampleGlobex] = "Globex"
	s.containers[ExampleInitech] = "Initech"
	var out []ExampleOrder
	// add places an order (a renewal of renews, if not 0) created days
	// ago, and issues it issuedDays ago (-1: pending).
	add := func(division int64, name, product string, renews int64, days, issuedDays int) int64 {
		var id int64
		if renews != 0 {
			id, _ = s.renew(renews, division, ago(days)) // renews an order added above: cannot fail
		} else {
			id, _ = s.addOrder(OrderSpec{ContainerID: division, CommonName: name, DNSNames: []string{name},
				ProductNameID: product, Created: ago(days), ACMEDirectory: "https://acme.digicert.com/v2/acme/directory/"})
		}
		o := s.orders[id]
		if issuedDays >= 0 {
			s.issue(o, ago(issuedDays))
		}
		out = append(out, ExampleOrder{ID: id, Division: division, CommonName: o.commonName, Renews: renews})
		return id
	}
	shop := add(ExampleAcme, "shop.acme.example", "ssl_plus", 0, 400, 399)
	wildcard := add(ExampleAcme, "*.acme.example", "ssl_wildcard", 0, 362, 360)
	add(ExampleGlobex, "www.globex.example", "ssl_basic", 0, 200, 199)
	add(ExampleInitech, "intranet.initech.example", "ssl_dv_geotrust", 0, 50, 49)
	canceled := add(ExampleAcme, "api.acme.example", "ssl_plus", 0, 20, -1)
	s.orders[canceled].status, s.orders[canceled].statusChanged = "canceled", ago(19).UTC().Truncate(time.Second)
	renewal := add(ExampleAcme, "", "", shop, 35, 34)
	add(ExampleAcme, "", "", renewal, 2, -1)    // the chain's newest, pending
	add(ExampleInitech, "", "", wildcard, 3, 2) // Acme's wildcard, renewed into Initech's division
	add(ExampleGlobex, "mail.globex.example", "ssl_basic", 0, 1, -1)
	for i := range out {
		out[i].Status = s.orders[out[i].ID].status
	}
	return out
}
