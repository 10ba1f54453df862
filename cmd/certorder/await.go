package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/certorder/certorder/internal/storekit"
)

// awaitTimeout bounds how long a command that takes access away waits for
// the instances to confirm. It is longer than the time after which a silent
// instance no longer counts as live (10 s, postgres/cache.go), so that one
// that died is not waited for in vain.
const awaitTimeout = 15 * time.Second

// awaitInstances returns once every live instance serving the store has
// applied the change just committed (PostgreSQL instances cache, and learn
// of changes by notification); an error names those that did not confirm
// within awaitTimeout. With SQLite every request checks for changes
// itself: there is nothing to wait for.
func (e *env) awaitInstances(ctx context.Context, store any, what string) error {
	start := time.Now()
	waited, err := confirmInstances(ctx, store)
	if err != nil {
		return fmt.Errorf("%s, but %w", what, err)
	}
	if waited {
		fmt.Fprintf(e.stdout, "every serving instance has applied it (%v)\n", time.Since(start).Round(time.Millisecond))
	}
	return nil
}

// confirmInstances is awaitInstances' wait: false when the store has no
// instances to wait for.
func confirmInstances(ctx context.Context, store any) (waited bool, err error) {
	w, ok := store.(storekit.InstanceAwaiter)
	if !ok {
		return false, nil
	}
	ctx, cancel := context.WithTimeout(ctx, awaitTimeout)
	defer cancel()
	unconfirmed, err := w.AwaitInstances(ctx)
	if err != nil {
		return true, fmt.Errorf("whether every instance has applied it is unknown: %w", err)
	}
	if len(unconfirmed) > 0 {
		return true, fmt.Errorf("%d instance(s) did not confirm within %v and may answer from their cache until they do: %s",
			len(unconfirmed), awaitTimeout, strings.Join(unconfirmed, ", "))
	}
	return true, nil
}
