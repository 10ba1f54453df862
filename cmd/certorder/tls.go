package main

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
)

// tlsConfig offers TLS 1.2 and 1.3; for 1.2, only the AEAD suites with
// forward secrecy of Mozilla's "intermediate" profile (Go has no DHE), so
// that no CBC suite is offered. TLS 1.3's suites are not configurable.
func tlsConfig(getCert func(*tls.ClientHelloInfo) (*tls.Certificate, error)) *tls.Config {
	return &tls.Config{
		MinVersion:     tls.VersionTLS12,
		GetCertificate: getCert,
		CipherSuites: []uint16{
			tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
			tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
			tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
			tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
			tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
			tls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
		},
	}
}

// certReloader holds the TLS certificate and reloads it from its files.
type certReloader struct {
	certFile, keyFile string
	cert              atomic.Pointer[tls.Certificate]
}

func (c *certReloader) load() error {
	cert, err := tls.LoadX509KeyPair(c.certFile, c.keyFile)
	if err != nil {
		return fmt.Errorf("TLS certificate: %w", err)
	}
	c.cert.Store(&cert)
	return nil
}

func (c *certReloader) get(*tls.ClientHelloInfo) (*tls.Certificate, error) { return c.cert.Load(), nil }

// reloadOnSIGHUP handles SIGHUP until the function it returns is called:
// it reloads the TLS pair when there is one (a pair that fails to load
// leaves the old one in use), and otherwise logs that there is nothing to
// reload. Either way the service keeps serving. The other settings come
// from flags and the environment, which a running process cannot re-read:
// changing them takes a restart.
func reloadOnSIGHUP(logger *slog.Logger, certs *certReloader) func() {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-hup:
				if certs == nil {
					logger.Info("SIGHUP: nothing to reload (no TLS); settings change with a restart")
				} else if err := certs.load(); err != nil {
					logger.Error("SIGHUP: TLS reload failed; the previous certificate stays in use", "err", err)
				} else {
					logger.Info("SIGHUP: TLS certificate reloaded", "cert", certs.certFile)
				}
			case <-done:
				return
			}
		}
	}()
	return func() { signal.Stop(hup); close(done) }
}
