package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/certorder/certorder/internal/printable"
	"github.com/certorder/certorder/stores"
)

// refuseRealStore is serve --demo's guard: the demo adds member demo, its
// orders and a key to the store it serves, which must then be a store of
// its own. A store with a member other than demo, or with CertCentral
// orders a sync left unassigned, is a real one: refused before it is
// opened (so before any migration or write), with what to do instead. A
// new store, an empty one and one that only a demo has used are fine.
func refuseRealStore(ctx context.Context, db string) error {
	ms, unassigned, err := stores.Occupants(ctx, db)
	if err != nil {
		return fmt.Errorf("serve: --demo: reading the store %s: %w", redactDSN(db), err)
	}
	var others []string
	for _, m := range ms {
		if m != demoMember {
			others = append(others, printable.String(m))
		}
	}
	what := ""
	switch n := len(others); {
	case n == 1:
		what = "member " + others[0]
	case n > 3:
		what = fmt.Sprintf("members %s and %d more", strings.Join(others[:3], ", "), n-3)
	case n > 0:
		what = "members " + strings.Join(others, ", ")
	case unassigned > 0:
		what = fmt.Sprintf("%d CertCentral order(s) from a sync", unassigned)
	}
	if what == "" {
		return nil
	}
	return usageError("serve: --demo would add member %s, its orders and a key to the store %s, which holds %s: "+
		"give the demo a store of its own (--db demo.db), or drop --demo to serve this one", demoMember, redactDSN(db), what)
}
