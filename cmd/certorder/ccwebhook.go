package main

import (
	"context"
	"log/slog"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/certorder/certorder/ccsync"
	"github.com/certorder/certorder/ccwebhook"
	"github.com/certorder/certorder/digicert"
	"github.com/certorder/certorder/server"
)

// certCentralWebhook is serve's receiver of CertCentral's webhook and the
// worker that applies its events; nil when it is off.
type certCentralWebhook struct {
	receiver *ccwebhook.Receiver
	worker   *ccwebhook.Worker
}

// ccStore is what serve's sync and CertCentral webhook use of the store.
type ccStore interface {
	ccsync.Store
	ccwebhook.Store
}

// newCertCentralWebhook makes serve's syncer (one for the poll and the
// events, so that they share the client's rate limiter) and, with a
// secret, the webhook's receiver and worker.
func newCertCentralWebhook(c *serveConfig, secret string, logger *slog.Logger, store ccStore, reg prometheus.Registerer,
	client *digicert.Client) (*certCentralWebhook, *ccsync.Syncer, error) {
	cfg := ccsync.Config{Store: store, Client: client, Logger: logger, Metrics: ccsync.NewMetrics(reg), MaxFetches: c.upstream.maxFetches}
	if secret == "" {
		syncer, err := ccsync.New(cfg)
		return nil, syncer, err
	}
	metrics := ccwebhook.NewMetrics(reg)
	cfg.Webhook = ccwebhook.Witness{Store: store, Metrics: metrics, Logger: logger}
	syncer, err := ccsync.New(cfg)
	if err != nil {
		return nil, nil, err
	}
	worker := ccwebhook.NewWorker(ccwebhook.WorkerConfig{Store: store, Sync: syncer, Metrics: metrics, Logger: logger})
	receiver, err := ccwebhook.NewReceiver(ccwebhook.ReceiverConfig{Store: store, Secret: secret, Allow: c.ccAllow,
		ClientIP: func(r *http.Request) string { return server.ClientIP(r, c.limits.TrustedProxies) },
		Metrics:  metrics, Logger: logger, StoreTimeout: c.storeTimeout, Queued: worker.Wake})
	if err != nil {
		return nil, nil, usageError("serve: --certcentral-webhook-secret-file: %v", err)
	}
	if c.syncEvery == 0 {
		logger.Warn("CertCentral's webhook is received, but no poll reconciles what it misses: set --sync-every too (an hour is plenty)")
	}
	return &certCentralWebhook{receiver: receiver, worker: worker}, syncer, nil
}

// handlers are the receiver's route on the main listener.
func (cc *certCentralWebhook) handlers() map[string]http.Handler {
	if cc == nil {
		return nil
	}
	return map[string]http.Handler{ccwebhook.Path: cc.receiver}
}

// start applies the events in the background until the function it
// returns is called.
func (cc *certCentralWebhook) start(ctx context.Context) func() {
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() { defer close(done); cc.worker.Run(ctx) }()
	return func() { cancel(); <-done }
}

// webhookSecret reads CertCentral's webhook secret from a file, as the
// other secret files are read (a file others may read is warned about),
// and checks it as CertCentral does.
func (e *env) webhookSecret(cmd, flagName, path string) (string, error) {
	secret, err := e.readKeyFile(cmd, flagName, path)
	if err != nil {
		return "", err
	}
	if len(secret) < digicert.MinWebhookSecret {
		return "", usageError("%s: --%s %s: the secret has %d characters; CertCentral needs at least %d", cmd, flagName, path,
			len(secret), digicert.MinWebhookSecret)
	}
	return secret, nil
}
