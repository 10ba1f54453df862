package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"iter"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/client"
	"github.com/certorder/certorder/internal/importfile"
	"github.com/certorder/certorder/internal/printable"
	"github.com/certorder/certorder/internal/storekit"
	"github.com/certorder/certorder/wire"
)

func (e *env) orderImport(fs *flag.FlagSet) adminFunc {
	flagMember := fs.String("member", "", "the member the orders belong to, instead of the MEMBER argument")
	dryRun := fs.Bool("dry-run", false, "check every order and count what the import would do, as it would do it; write nothing")
	return role(func(ctx context.Context, store storekit.OrderStore, args []string) error {
		member, file := *flagMember, args[len(args)-1]
		if len(args) == 2 { // MEMBER FILE, as order list, webhook add and notice add take it
			if *flagMember != "" && *flagMember != args[0] {
				return usageError("order import: the member is given twice, %q as the argument and %q as --member: give it once",
					args[0], *flagMember)
			}
			member = args[0]
		}
		if member == "" {
			return usageError("order import: a MEMBER argument or --member is required (certorder admin order import MEMBER FILE|-)")
		}
		r, err := e.openInput(file)
		if err != nil {
			return err
		}
		defer r.Close()
		orders := withStatus(importfile.Decode(r))
		if *dryRun {
			var dry storekit.DryCounts
			_, err := store.ImportOrders(storekit.DryRun(ctx, &dry), member, orders)
			if !errors.Is(err, storekit.ErrDryRun) {
				return fmt.Errorf("dry run: the import would fail, nothing written: %w", err)
			}
			fmt.Fprintf(e.stdout, "dry run, nothing written: would import %d order(s) for member %s (%d new, %d replaced)\n",
				dry.Orders, member, dry.New, dry.Replaced)
			return nil
		}
		n, err := store.ImportOrders(ctx, member, orders)
		if err != nil {
			return fmt.Errorf("nothing imported: %w", err)
		}
		fmt.Fprintf(e.stdout, "imported %d order(s) for member %s\n", n, member)
		return nil
	})
}

// withStatus refuses an order without a status: OrderInfo answers with
// one, and a member's order without it could not say whether it is issued.
func withStatus(orders iter.Seq2[*certorder.Order, error]) iter.Seq2[*certorder.Order, error] {
	return func(yield func(*certorder.Order, error) bool) {
		for o, err := range orders {
			if err == nil && o.Status == "" {
				err = fmt.Errorf("%w: OrderId %d: status is missing (give the CA's status, such as \"issued\")",
					certorder.ErrInvalid, o.ID)
			}
			if !yield(o, err) || err != nil {
				return
			}
		}
	}
}

func orderIDArg(s string) (int64, error) {
	id, ok := wire.ParseOrderID([]byte(s))
	if !ok {
		return 0, usageError("%q is not an order number", s)
	}
	return id, nil
}

func (e *env) orderRenew(ctx context.Context, store storekit.OrderStore, args []string) error {
	oldID, err := orderIDArg(args[0])
	if err != nil {
		return err
	}
	newID, err := orderIDArg(args[1])
	if err != nil {
		return err
	}
	if err := store.RecordRenewal(ctx, oldID, newID); err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "order %d renewed by order %d\n", oldID, newID)
	return nil
}

func (e *env) orderList(fs *flag.FlagSet) adminFunc {
	var w certorder.Windows
	opts := windowOptions(&w)
	defineOptions(fs, opts)
	only := fs.String("next-step", "", "list only the orders whose next step is this: "+stepNames())
	return role(func(ctx context.Context, store orderLister, args []string) error {
		if err := e.applyEnv(fs, opts); err != nil {
			return err
		}
		if err := checkWindows("order list", w); err != nil {
			return err
		}
		if *only != "" && !slices.Contains(certorder.Steps, certorder.Step(*only)) {
			return usageError("order list: --next-step %q: give one of %s", *only, stepNames())
		}
		m, err := store.FindMember(ctx, args[0])
		if err != nil {
			return err
		}
		orders, err := store.ListOrders(ctx, certorder.OrderQuery{MemberID: m.ID})
		if err != nil {
			return err
		}
		now := time.Now()
		tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ORDER\tCOMMON NAME\tSTATUS\tVALID TILL\tDAYS\tPLAN ENDS\tRENEWED BY\tNEXT STEP")
		for _, o := range orders {
			next := w.Next(o.Lifecycle(), now)
			if *only != "" && next.Step != certorder.Step(*only) {
				continue
			}
			renewed := "-"
			if o.RenewedBy != 0 {
				renewed = strconv.FormatInt(o.RenewedBy, 10)
			}
			till, days, plan := "-", "-", "-" // not issued yet: no expiry
			if c := o.Certificate; c.ValidTill != "" {
				till, days = printable.String(c.ValidTill), strconv.Itoa(certorder.DaysRemaining(c.ValidTill, now))
			}
			if o.PlanTill != "" {
				plan = printable.String(o.PlanTill)
			}
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", o.ID, printable.String(o.Certificate.CommonName), printable.String(o.Status),
				till, days, plan, renewed, stepText(next))
		}
		return tw.Flush()
	})
}

// orderLister is what admin order list reads.
type orderLister interface {
	storekit.MemberStore
	storekit.OrderReader
}

// stepNames lists the steps for a usage line.
func stepNames() string {
	names := make([]string, len(certorder.Steps))
	for i, s := range certorder.Steps {
		names[i] = string(s)
	}
	return strings.Join(names, ", ")
}

// orderShow prints the OrderInfo answer alone, for jq; --summary prints
// the member's summary (as `certorder info` does) with the owner first.
func (e *env) orderShow(fs *flag.FlagSet) adminFunc {
	summary := fs.Bool("summary", false, "print a readable summary with the owning member instead of the JSON")
	return role(func(ctx context.Context, store storekit.OrderReader, args []string) error {
		id, err := orderIDArg(args[0])
		if err != nil {
			return err
		}
		o, err := store.FindOrder(ctx, id)
		if errors.Is(err, certorder.ErrNotFound) {
			return fmt.Errorf("order show: no order %d in the store", id)
		} else if err != nil {
			return err
		}
		answer := wire.AppendOrderInfo(nil, o, time.Now())
		if *summary {
			var co client.Order
			if err := json.Unmarshal(answer, &co); err != nil {
				return err
			}
			return e.printOrder(&co, nil, o.Member, nil)
		}
		var out bytes.Buffer
		if err := json.Indent(&out, answer, "", "  "); err != nil {
			return err
		}
		fmt.Fprintln(e.stdout, strings.TrimSpace(out.String()))
		return nil
	})
}
