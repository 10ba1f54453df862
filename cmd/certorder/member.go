package main

import (
	"context"
	"fmt"
)

func (e *env) member(ctx context.Context, cmd string, args []string) error {
	return fmt.Errorf("%s: not built yet", cmd)
}
