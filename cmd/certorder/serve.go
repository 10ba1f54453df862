package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/certorder/certorder/server"
)

func (e *env) serve(ctx context.Context, args []string) error {
	fs := e.newFlags("serve", "[flags]")
	addr := fs.String("addr", e.envDefault("CERTORDER_ADDR", "127.0.0.1:8080"), "listen address (env CERTORDER_ADDR)")
	db := e.dbFlag(fs)
	segment := fs.String("ca-segment", e.envDefault("CERTORDER_CA_SEGMENT", "digicert"),
		"path segment of the endpoint /api/<segment>/ (env CERTORDER_CA_SEGMENT)")
	demo := fs.Bool("demo", false, "add demo data and print working credentials and curl commands")
	storeTimeout := fs.Duration("store-timeout", server.DefaultStoreTimeout, "give up on the store after this long in one request (503)")
	errorsAs200 := fs.Bool("errors-as-200", false, "answer failures with HTTP 200 (the body still carries error_message)")
	logFormat := fs.String("log-format", e.envDefault("CERTORDER_LOG_FORMAT", "text"), "log format: text or json (env CERTORDER_LOG_FORMAT)")
	accessLog := fs.Bool("access-log", true, "log one line per request")
	if _, err := parse(fs, args, 0); err != nil {
		return err
	}
	if err := server.ValidSegment(*segment); err != nil {
		return usageError("%v", err)
	}
	var logger *slog.Logger
	switch *logFormat {
	case "text":
		logger = slog.New(slog.NewTextHandler(e.stderr, nil))
	case "json":
		logger = slog.New(slog.NewJSONHandler(e.stderr, nil))
	default:
		return usageError("serve: --log-format is text or json, not %q", *logFormat)
	}

	store, err := openStore(ctx, *db)
	if err != nil {
		return err
	}
	defer store.Close()

	handler, err := server.New(store, server.Config{
		CASegment:    *segment,
		ErrorsAs200:  *errorsAs200,
		StoreTimeout: *storeTimeout,
		Logger:       logger,
		NoAccessLog:  !*accessLog,
	})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	endpoint := fmt.Sprintf("http://%s/api/%s/", ln.Addr(), *segment)
	if *demo {
		if err := e.seedDemo(ctx, store, endpoint, *db); err != nil {
			ln.Close()
			return err
		}
	}
	srv := &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       120 * time.Second,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	logger.Info("listening", "endpoint", endpoint, "db", *db)
	fmt.Fprintf(e.stderr, "certorder: listening on %s\n", endpoint)

	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	// Stop accepting, let the requests in flight finish, then close the store (deferred).
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	logger.Info("stopped")
	return nil
}
