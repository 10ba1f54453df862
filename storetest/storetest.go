// Package storetest is the one test suite every storekit.Store must pass.
// A backend's test calls Run with a function that opens a fresh, empty store.
package storetest

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"strings"
	"testing"
	"time"

	"github.com/certorder/certorder"
	"github.com/certorder/certorder/internal/importfile"
	"github.com/certorder/certorder/internal/storekit"
)

// OrderJSON is an import document for order id; renewedBy 0 means not renewed.
func OrderJSON(id, renewedBy int64, validTill string) string {
	renewal := ""
	if renewedBy != 0 {
		renewal = fmt.Sprintf(`"is_renewed":true,"was_renewed_by_order_id":%d,`, renewedBy)
	}
	return fmt.Sprintf(`{"OrderId":%d,"certificate":{"id":%d,"common_name":"host%d.example.com",`+
		`"dns_names":["host%d.example.com"],"status":"issued","valid_from":"2025-01-01","valid_till":%q,`+
		`"user_id":"42","receipt_id":1234,"purchased_dns_names":"1","purchased_wildcard_names":0},`+
		`%s"status":"issued","product":{"name_id":"ssl_basic","name":"Basic","type":"ssl_certificate","csr_required":true},`+
		`"purchased_dns_names":1,"purchased_wildcard_names":null,"api_key":{"name":"k","key_type":"api"}}`,
		id, id*10, id, id, validTill, renewal)
}

// PendingJSON is an import document for an order not issued yet: a
// certificate without dates, serial or thumbprint, as CertCentral gives a
// pending order.
func PendingJSON(id int64, status string) string {
	return fmt.Sprintf(`{"OrderId":%d,"certificate":{"common_name":"host%d.example.com","dns_names":["host%d.example.com"],`+
		`"date_created":"2026-11-20T10:00:00+00:00","csr":"-----BEGIN CERTIFICATE REQUEST-----\nMIIC\n-----END CERTIFICATE REQUEST-----",`+
		`"signature_hash":"sha256","key_size":2048},"status":%q,"date_created":"2026-11-20T10:00:00+00:00","validity_years":1,`+
		`"product":{"name_id":"ssl_basic","name":"Basic","type":"ssl_certificate","csr_required":true}}`, id, id, id, status)
}

// Orders parses import documents into the sequence ImportOrders takes.
func Orders(t testing.TB, docs ...string) iter.Seq2[*certorder.Order, error] {
	t.Helper()
	return importfile.Decode(strings.NewReader("[" + strings.Join(docs, ",") + "]"))
}

// Run runs the suite, its tests in parallel. open must return a new, empty
// store, another on every call; the suite closes it.
func Run(t *testing.T, open func(t *testing.T) storekit.Store) {
	newStore := func(t *testing.T) storekit.Store {
		s := open(t)
		t.Cleanup(func() { s.Close() })
		return s
	}
	t.Run("Members", func(t *testing.T) { t.Parallel(); testMembers(t, newStore(t)) })
	t.Run("Keys", func(t *testing.T) { t.Parallel(); testKeys(t, newStore(t)) })
	t.Run("ImportAndFind", func(t *testing.T) { t.Parallel(); testImportAndFind(t, newStore(t)) })
	t.Run("ListOrders", func(t *testing.T) { t.Parallel(); testListOrders(t, newStore(t)) })
	t.Run("RenewalChain", func(t *testing.T) { t.Parallel(); testRenewalChain(t, newStore(t)) })
	t.Run("PendingOrders", func(t *testing.T) { t.Parallel(); testPendingOrders(t, newStore(t), newStore(t)) })
	t.Run("Unavailable", func(t *testing.T) { t.Parallel(); testUnavailable(t, open) })
	t.Run("CredentialWithOrder", func(t *testing.T) { t.Parallel(); testCredentialWithOrder(t, newStore(t)) })
	t.Run("ImportIsAtomic", func(t *testing.T) { t.Parallel(); testImportAtomic(t, newStore(t)) })
	t.Run("ImportOwnership", func(t *testing.T) { t.Parallel(); testImportOwnership(t, newStore(t)) })
	t.Run("ImportBatches", func(t *testing.T) { t.Parallel(); testImportBatches(t, newStore(t)) })
	t.Run("ExportRestoreLarge", func(t *testing.T) { t.Parallel(); testExportRestoreLarge(t, newStore(t), newStore(t)) })
	t.Run("Renewals", func(t *testing.T) { t.Parallel(); testRenewals(t, newStore(t)) })
	t.Run("ExportRestore", func(t *testing.T) { t.Parallel(); testExportRestore(t, newStore(t), newStore(t)) })
	t.Run("RestoreRules", func(t *testing.T) { t.Parallel(); testRestoreRules(t, open) })
	t.Run("RestoreNoticeChecks", func(t *testing.T) { t.Parallel(); testRestoreNoticeChecks(t, open) })
	t.Run("RestoreLongHistory", func(t *testing.T) { t.Parallel(); testRestoreLongHistory(t, newStore(t)) })
	t.Run("Audit", func(t *testing.T) { t.Parallel(); testAudit(t, newStore(t)) })
	t.Run("Sessions", func(t *testing.T) { t.Parallel(); testSessions(t, newStore(t)) })
	t.Run("Webhooks", func(t *testing.T) { t.Parallel(); testWebhooks(t, open) })
	t.Run("WebhookClaimOrder", func(t *testing.T) { t.Parallel(); testWebhookClaimOrder(t, newStore(t)) })
	t.Run("OrderEvents", func(t *testing.T) { t.Parallel(); testOrderEvents(t, open) })
	t.Run("CertificateHistory", func(t *testing.T) { t.Parallel(); testCertificateHistory(t, open) })
	t.Run("FindCertificates", func(t *testing.T) { t.Parallel(); testFindCertificates(t, newStore(t)) })
	t.Run("FindCertificatesOfMember", func(t *testing.T) { t.Parallel(); testFindCertificatesOfMember(t, newStore(t)) })
	t.Run("ContainerLinks", func(t *testing.T) { t.Parallel(); testContainerLinks(t, newStore(t)) })
	t.Run("ApplyUpstream", func(t *testing.T) { t.Parallel(); testApplyUpstream(t, newStore(t)) })
	t.Run("SyncState", func(t *testing.T) { t.Parallel(); testSyncState(t, newStore(t)) })
	t.Run("SyncLock", func(t *testing.T) { t.Parallel(); testSyncLock(t, newStore(t)) })
	t.Run("CertCentralWebhook", func(t *testing.T) { t.Parallel(); testCertCentralWebhook(t, newStore(t)) })
	t.Run("MemberWebhooks", func(t *testing.T) { t.Parallel(); testMemberWebhooks(t, newStore(t)) })
	t.Run("NoticeAddresses", func(t *testing.T) { t.Parallel(); testNoticeAddresses(t, open) })
	t.Run("NoticeOutbox", func(t *testing.T) { t.Parallel(); testNoticeOutbox(t, open) })
	t.Run("NoticeBudget", func(t *testing.T) { t.Parallel(); testNoticeBudget(t, open) })
	t.Run("DisabledMember", func(t *testing.T) { t.Parallel(); testDisabledMember(t, open) })
	t.Run("Ping", func(t *testing.T) {
		t.Parallel()
		if err := newStore(t).Ping(context.Background()); err != nil {
			t.Fatal(err)
		}
	})
}

func wantErr(t *testing.T, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("error = %v, want %v", err, want)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// A closed store and an expired deadline are ErrUnavailable (503), never
// an internal error.
func testUnavailable(t *testing.T, open func(t *testing.T) storekit.Store) {
	ctx := context.Background()
	s := open(t)
	_, err := s.AddMember(ctx, "alice")
	must(t, err)
	_, k, err := certorder.NewKey("")
	must(t, err)
	must(t, s.AddKey(ctx, "alice", k))

	expired, cancel := context.WithDeadline(ctx, time.Now().Add(-time.Second))
	defer cancel()
	_, _, err = s.FindCredential(expired, k.ID, 1)
	wantErr(t, err, certorder.ErrUnavailable)
	_, err = s.ImportOrders(expired, "alice", Orders(t, OrderJSON(1, 0, "2030-01-01")))
	wantErr(t, err, certorder.ErrUnavailable)
	wantErr(t, s.Ping(expired), certorder.ErrUnavailable)

	must(t, s.Close())
	_, _, err = s.FindCredential(ctx, k.ID, 1)
	wantErr(t, err, certorder.ErrUnavailable)
	_, err = s.Members(ctx)
	wantErr(t, err, certorder.ErrUnavailable)
	wantErr(t, s.RevokeKey(ctx, k.ID), certorder.ErrUnavailable)
	wantErr(t, s.Ping(ctx), certorder.ErrUnavailable)
}
