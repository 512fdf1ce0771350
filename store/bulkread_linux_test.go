package store

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"
)

// TestBulkReading: a connection read in large pieces gives every byte in order: a stream
// written in small pieces, then a short tail while the writer keeps the connection open
// (below the low-water mark: it must not wait for more), then the end. A read waiting with
// nothing to come keeps its deadline.
func TestBulkReading(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	want := make([]byte, 4<<20)
	for i := range want {
		want[i] = byte(i * 7)
	}
	tail := []byte("the tail")
	sent, closeNow := make(chan struct{}), make(chan struct{})
	go func() {
		w, err := ln.Accept()
		if err != nil {
			return
		}
		defer w.Close()
		for rest := want; len(rest) > 0; {
			n := min(len(rest), 8<<10) // as PostgreSQL writes a COPY
			if _, err := w.Write(rest[:n]); err != nil {
				return
			}
			rest = rest[n:]
		}
		time.Sleep(10 * time.Millisecond) // the stream pauses: the tail comes alone
		_, _ = w.Write(tail)
		close(sent)
		<-closeNow
	}()
	raw, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	c := bulkReading(raw)
	if _, ok := c.(*bulkConn); !ok {
		t.Fatalf("a TCP connection is not read in bulk: %T", c)
	}
	defer c.Close()
	got := make([]byte, 0, len(want)+len(tail))
	buf := make([]byte, 256<<10)
	// A deadline far off, so a read that waited for bytes that never come fails the test
	// rather than hang it.
	_ = c.SetReadDeadline(time.Now().Add(time.Minute))
	for len(got) < len(want)+len(tail) {
		n, err := c.Read(buf)
		if err != nil {
			t.Fatalf("after %d of %d bytes: %v", len(got), len(want)+len(tail), err)
		}
		got = append(got, buf[:n]...)
	}
	if !bytes.Equal(got, append(append([]byte(nil), want...), tail...)) {
		t.Fatal("the bytes read are not the bytes written")
	}
	<-sent
	_ = c.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	if _, err := c.Read(buf); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("a read with nothing to come past its deadline: %v", err)
	}
	_ = c.SetReadDeadline(time.Time{})
	close(closeNow)
	if n, err := c.Read(buf); n != 0 || err != io.EOF {
		t.Fatalf("at the end: %d bytes, %v; want io.EOF", n, err)
	}
}
