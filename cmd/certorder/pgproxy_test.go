package main

import (
	"errors"
	"io"
	"net"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5/pgproto3"
)

// listenRefusingProxy stands between clients and the PostgreSQL at dsn
// and answers every LISTEN with the error a hot standby gives (the
// statement is never sent on); everything else passes. It returns the DSN
// to reach PostgreSQL through it.
func listenRefusingProxy(t *testing.T, dsn string) string {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	target := u.Host
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	go func() {
		for {
			client, err := ln.Accept()
			if err != nil {
				return
			}
			server, err := net.Dial("tcp", target)
			if err != nil {
				client.Close()
				continue
			}
			mu.Lock()
			conns = append(conns, client, server)
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer client.Close()
				defer server.Close()
				relayRefusingListen(client, server)
			}()
		}
	}()
	u.Host = ln.Addr().String()
	return u.String()
}

func relayRefusingListen(client, server net.Conn) {
	be := pgproto3.NewBackend(client, client)
	fe := pgproto3.NewFrontend(server, server)
	sm, err := be.ReceiveStartupMessage()
	if err != nil {
		return
	}
	if _, ssl := sm.(*pgproto3.SSLRequest); ssl { // sslmode=disable sends none, but say no
		if _, err := client.Write([]byte("N")); err != nil {
			return
		}
		if sm, err = be.ReceiveStartupMessage(); err != nil {
			return
		}
	}
	fe.Send(sm)
	if fe.Flush() != nil {
		return
	}
	var wmu sync.Mutex // the server's bytes and the refusals share the client's socket
	go func() {
		buf := make([]byte, 32<<10)
		for {
			n, err := server.Read(buf)
			wmu.Lock()
			_, werr := client.Write(buf[:n])
			wmu.Unlock()
			if err != nil || werr != nil {
				client.Close()
				return
			}
		}
	}()
	for {
		msg, err := be.Receive()
		if err != nil {
			if !errors.Is(err, io.EOF) {
				server.Close()
			}
			return
		}
		if q, ok := msg.(*pgproto3.Query); ok && strings.HasPrefix(strings.ToUpper(strings.TrimSpace(q.String)), "LISTEN") {
			out, _ := (&pgproto3.ErrorResponse{Severity: "ERROR", SeverityUnlocalized: "ERROR", Code: "25006",
				Message: "cannot execute LISTEN during recovery"}).Encode(nil)
			out, _ = (&pgproto3.ReadyForQuery{TxStatus: 'I'}).Encode(out)
			wmu.Lock()
			_, err := client.Write(out)
			wmu.Unlock()
			if err != nil {
				return
			}
			continue
		}
		fe.Send(msg)
		if fe.Flush() != nil {
			return
		}
	}
}
