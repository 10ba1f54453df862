package storetest

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/internal/storekit"
)

func testMembers(t *testing.T, s storekit.Store) {
	ctx := context.Background()
	for _, name := range []string{"bob", "alice"} {
		m, err := s.AddMember(ctx, name)
		must(t, err)
		if m.Name != name || m.ID == 0 || m.CreatedAt.IsZero() {
			t.Fatalf("AddMember = %+v", m)
		}
	}
	_, err := s.AddMember(ctx, "alice")
	wantErr(t, err, certorder.ErrConflict)
	_, err = s.AddMember(ctx, "no spaces")
	wantErr(t, err, certorder.ErrInvalid)
	wantErr(t, s.SetMemberDisabled(ctx, "nobody", true), certorder.ErrNotFound)
	must(t, s.SetMemberDisabled(ctx, "bob", true))

	ms, err := s.Members(ctx)
	must(t, err)
	var got []string
	for _, m := range ms {
		got = append(got, fmt.Sprintf("%s:%v", m.Name, m.Disabled))
	}
	if want := []string{"alice:false", "bob:true"}; !slices.Equal(got, want) {
		t.Fatalf("Members = %v, want %v", got, want)
	}
	must(t, s.SetMemberDisabled(ctx, "bob", false))
	ms, err = s.Members(ctx)
	must(t, err)
	if ms[1].Disabled {
		t.Fatal("bob still disabled after enabling")
	}

	// Self-service keys: on by default, switched per member.
	wantErr(t, s.SetSelfServiceKeys(ctx, "nobody", false), certorder.ErrNotFound)
	if ms[0].SelfServiceKeysOff || ms[1].SelfServiceKeysOff {
		t.Fatalf("self-service keys off by default: %+v", ms)
	}
	must(t, s.SetSelfServiceKeys(ctx, "bob", false))
	bob, err := s.FindMember(ctx, "bob")
	must(t, err)
	alice, err := s.FindMember(ctx, "alice")
	must(t, err)
	if !bob.SelfServiceKeysOff || alice.SelfServiceKeysOff {
		t.Fatalf("after turning bob's off: bob %+v, alice %+v", bob, alice)
	}
	must(t, s.SetSelfServiceKeys(ctx, "bob", true))
	ms, err = s.Members(ctx)
	must(t, err)
	if ms[1].SelfServiceKeysOff {
		t.Fatal("bob's self-service keys still off after turning them on")
	}
}

func testKeys(t *testing.T, s storekit.Store) {
	ctx := context.Background()
	_, err := s.AddMember(ctx, "alice")
	must(t, err)
	text, k, err := certorder.NewKey("cron")
	must(t, err)
	wantErr(t, s.AddKey(ctx, "nobody", k), certorder.ErrNotFound)
	must(t, s.AddKey(ctx, "alice", k))
	wantErr(t, s.AddKey(ctx, "alice", k), certorder.ErrConflict)

	c, o, err := s.FindCredential(ctx, k.ID, 0)
	must(t, err)
	if !c.Verify("alice", text) || o != nil {
		t.Fatalf("fresh key does not verify: %+v", c)
	}
	if c.Verify("bob", text) || c.Verify("alice", text+"x") {
		t.Fatal("Verify accepts a wrong name or key")
	}
	_, _, err = s.FindCredential(ctx, "000000000000", 0)
	wantErr(t, err, certorder.ErrNotFound)
	_, err = s.Keys(ctx, "nobody")
	wantErr(t, err, certorder.ErrNotFound)

	must(t, s.SetMemberDisabled(ctx, "alice", true))
	c, _, err = s.FindCredential(ctx, k.ID, 0)
	must(t, err)
	if !c.MemberDisabled || c.Verify("alice", text) {
		t.Fatal("disabled member's key still verifies")
	}
	must(t, s.SetMemberDisabled(ctx, "alice", false))

	must(t, s.RevokeKey(ctx, k.ID))
	must(t, s.RevokeKey(ctx, k.ID)) // twice is fine
	wantErr(t, s.RevokeKey(ctx, "000000000000"), certorder.ErrNotFound)
	c, _, err = s.FindCredential(ctx, k.ID, 0)
	must(t, err)
	if !c.KeyRevoked || c.Verify("alice", text) {
		t.Fatal("revoked key still verifies")
	}
	// A member's revocation touches only its own keys.
	bob, err := s.AddMember(ctx, "bob")
	must(t, err)
	alice, err := s.FindMember(ctx, "alice")
	must(t, err)
	bobText, bk, err := certorder.NewKey("bob's")
	must(t, err)
	must(t, s.AddKey(ctx, "bob", bk))
	wantErr(t, s.RevokeMemberKey(ctx, alice.ID, bk.ID), certorder.ErrNotFound)
	wantErr(t, s.RevokeMemberKey(ctx, alice.ID, "000000000000"), certorder.ErrNotFound)
	c, _, err = s.FindCredential(ctx, bk.ID, 0)
	must(t, err)
	if !c.Verify("bob", bobText) {
		t.Fatal("alice's revocation reached bob's key")
	}
	must(t, s.RevokeMemberKey(ctx, bob.ID, bk.ID))
	must(t, s.RevokeMemberKey(ctx, bob.ID, bk.ID)) // twice is fine
	c, _, err = s.FindCredential(ctx, bk.ID, 0)
	must(t, err)
	if !c.KeyRevoked || c.Verify("bob", bobText) {
		t.Fatal("a key revoked by its member still verifies")
	}

	keys, err := s.Keys(ctx, "alice")
	must(t, err)
	if len(keys) != 1 || keys[0].ID != k.ID || keys[0].Label != "cron" || !keys[0].Revoked() ||
		!bytes.Equal(keys[0].Hash, k.Hash) || keys[0].CreatedAt.IsZero() {
		t.Fatalf("Keys = %+v", keys)
	}
}

// FindCredential reads the member's own order too, never another member's.
func testCredentialWithOrder(t *testing.T, s storekit.Store) {
	ctx := context.Background()
	for _, name := range []string{"alice", "bob"} {
		_, err := s.AddMember(ctx, name)
		must(t, err)
	}
	_, k, err := certorder.NewKey("")
	must(t, err)
	must(t, s.AddKey(ctx, "alice", k))
	_, err = s.ImportOrders(ctx, "alice", Orders(t, OrderJSON(1, 2, "2030-01-01")))
	must(t, err)
	_, err = s.ImportOrders(ctx, "bob", Orders(t, OrderJSON(9, 0, "2030-01-01")))
	must(t, err)

	c, got, err := s.FindCredential(ctx, k.ID, 1)
	must(t, err)
	want, err := s.FindOrder(ctx, 1)
	must(t, err)
	if got == nil || got.ID != 1 || got.MemberID != c.MemberID || got.Member != "alice" || got.RenewedBy != 2 ||
		got.Certificate.CommonName != want.Certificate.CommonName || got.Status != want.Status || got.Certificate.ValidTill != want.Certificate.ValidTill ||
		got.CertEnd != want.CertEnd || !bytes.Equal(got.Doc, want.Doc) {
		t.Fatalf("FindCredential order = %+v\nwant %+v", got, want)
	}
	_, got, err = s.FindCredential(ctx, k.ID, 99)
	must(t, err)
	if got != nil {
		t.Fatalf("missing order read as %+v", got)
	}
	_, got, err = s.FindCredential(ctx, k.ID, 9)
	must(t, err)
	if got != nil {
		t.Fatalf("bob's order read for alice's key: %+v", got)
	}
	_, _, err = s.FindCredential(ctx, "000000000000", 1)
	wantErr(t, err, certorder.ErrNotFound)
}

func testSessions(t *testing.T, s storekit.Store) {
	ctx := context.Background()
	m, err := s.AddMember(ctx, "alice")
	must(t, err)
	_, k, err := certorder.NewKey("")
	must(t, err)
	must(t, s.AddKey(ctx, "alice", k))
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	mk := func(token string, expires time.Time) certorder.Session {
		return certorder.Session{TokenHash: certorder.HashKey(token), MemberID: m.ID, KeyID: k.ID, CSRF: "csrf-" + token,
			Created: now, Expires: expires}
	}
	must(t, s.AddSession(ctx, mk("a", now.Add(time.Hour))))
	must(t, s.AddSession(ctx, mk("b", now.Add(-time.Minute))))

	got, err := s.FindSession(ctx, certorder.HashKey("a"))
	must(t, err)
	if got.Member != "alice" || got.MemberID != m.ID || got.KeyID != k.ID || got.CSRF != "csrf-a" ||
		!got.Expires.Equal(now.Add(time.Hour)) || !got.Created.Equal(now) || !got.Valid(now) || got.Valid(now.Add(time.Hour)) {
		t.Fatalf("FindSession = %+v", got)
	}
	_, err = s.FindSession(ctx, certorder.HashKey("nope"))
	wantErr(t, err, certorder.ErrNotFound)
	must(t, s.SetSelfServiceKeys(ctx, "alice", false))
	if got, err = s.FindSession(ctx, certorder.HashKey("a")); err != nil || !got.SelfServiceKeysOff || !got.Valid(now) {
		t.Fatalf("FindSession after turning self-service keys off = %+v, %v", got, err)
	}
	// A session naming a key of another member is no session.
	_, err = s.AddMember(ctx, "bob")
	must(t, err)
	_, bk, err := certorder.NewKey("")
	must(t, err)
	must(t, s.AddKey(ctx, "bob", bk))
	crossed := mk("crossed", now.Add(time.Hour))
	crossed.KeyID = bk.ID
	if err := s.AddSession(ctx, crossed); err == nil {
		_, err = s.FindSession(ctx, certorder.HashKey("crossed"))
		wantErr(t, err, certorder.ErrNotFound)
	}

	// Disabling the member ends its sessions: enabling it again does not
	// bring them back.
	must(t, s.SetMemberDisabled(ctx, "alice", true))
	must(t, s.SetMemberDisabled(ctx, "alice", false))
	_, err = s.FindSession(ctx, certorder.HashKey("a"))
	wantErr(t, err, certorder.ErrNotFound)
	must(t, s.AddSession(ctx, mk("a", now.Add(time.Hour))))
	must(t, s.RevokeKey(ctx, k.ID))
	got, err = s.FindSession(ctx, certorder.HashKey("a"))
	must(t, err)
	if !got.KeyRevoked || got.Valid(now) {
		t.Fatal("a session of a revoked key is valid")
	}

	must(t, s.PruneSessions(ctx, now))
	_, err = s.FindSession(ctx, certorder.HashKey("b"))
	wantErr(t, err, certorder.ErrNotFound)
	must(t, s.DeleteSession(ctx, certorder.HashKey("a")))
	must(t, s.DeleteSession(ctx, certorder.HashKey("a")))
	_, err = s.FindSession(ctx, certorder.HashKey("a"))
	wantErr(t, err, certorder.ErrNotFound)
}
