package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/certorder/certorder/internal/printable"
	"github.com/certorder/certorder/internal/storekit"
)

// refuseRealStore is serve --demo's guard: the demo adds member demo, its
// orders and a key to the store it serves, which must then be a store of
// its own. A store with a member other than demo, or with CertCentral
// orders a sync left unassigned, is a real one: refused, before anything
// is written, with what to do instead. An empty store and one that only a
// demo has used are fine.
func refuseRealStore(ctx context.Context, store storekit.MemberStore, db string) error {
	ms, err := store.Members(ctx)
	if err != nil {
		return fmt.Errorf("serve: --demo: reading the members: %w", err)
	}
	var others []string
	for _, m := range ms {
		if m.Name != demoMember {
			others = append(others, printable.String(m.Name))
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
	}
	if what == "" {
		if s, ok := store.(interface {
			UnassignedRefs(ctx context.Context) ([]storekit.UpstreamRef, error)
		}); ok {
			refs, err := s.UnassignedRefs(ctx)
			if err != nil {
				return fmt.Errorf("serve: --demo: reading the store: %w", err)
			}
			if len(refs) > 0 {
				what = fmt.Sprintf("%d CertCentral order(s) from a sync", len(refs))
			}
		}
	}
	if what == "" {
		return nil
	}
	return usageError("serve: --demo would add member %s, its orders and a key to the store %s, which holds %s: "+
		"give the demo a store of its own (--db demo.db), or drop --demo to serve this one", demoMember, redactDSN(db), what)
}
