package server

import (
	"fmt"
	"testing"
	"time"

	"github.com/certorder/certorder"
)

// A different AccessName on each refused request (the limits off, so that
// nothing else stops one address) is at most maxNamed entries a flush and
// one for the rest, counting every request; it was one entry each.
func TestAuditRefusedNamesBounded(t *testing.T) {
	t.Parallel()
	a := &auditor{refused: map[refusal]*certorder.AuditEntry{}}
	const requests = 3000
	for i := range requests {
		a.refuseCredentials(certorder.AuditEntry{Time: time.Now(), Member: fmt.Sprintf("guess%d", i), Outcome: 111, ClientIP: "192.0.2.1"})
	}
	a.refuseCredentials(certorder.AuditEntry{Time: time.Now(), Member: "guess0", Outcome: 111, ClientIP: "192.0.2.1"}) // counted with its own
	es := a.take(nil)
	counted, rest := 0, 0
	for _, e := range es {
		counted += e.Count
		if e.Member == "*" {
			rest = e.Count
		}
	}
	if len(es) != maxNamed+1 || counted != requests+1 || rest != requests-maxNamed || es[0].Count != 2 {
		t.Fatalf("%d refusals written as %d entries counting %d (%d for the rest)", requests+1, len(es), counted, rest)
	}
	a.refuseCredentials(certorder.AuditEntry{Time: time.Now(), Member: "next", Outcome: 111, ClientIP: "192.0.2.1"})
	if es := a.take(nil); len(es) != 1 || es[0].Member != "next" {
		t.Fatalf("the next flush: %+v", es)
	}
}
