package server

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync"
	"time"

	"dataplatform/handlers/apierr"
)

// tooSlow is the error of an upload body that arrived slower than the minimum rate: an API
// error, so that the handler reading the body answers it as it is.
func (b *pacedBody) tooSlow() error {
	return apierr.New(http.StatusRequestTimeout, apierr.CodeUploadTooSlow, fmt.Sprintf(
		"the upload arrived slower than %d bytes a second over %s; nothing was kept", b.min, b.window))
}

// pacedBody is an upload's body. Until its handler has checked the caller (start), it is read
// under the server's ordinary read timeout. After, instead of one long deadline that a trickle
// could hold a connection open with, every window must bring at least min bytes a second and
// no read may wait longer than one window.
type pacedBody struct {
	r      io.ReadCloser
	rc     *http.ResponseController
	min    int64 // bytes a second; 0: no minimum
	window time.Duration

	mu      sync.Mutex
	started bool
	from    time.Time // the current window's start
	got     int64     // bytes in the current window
}

// start lifts the read timeout: the caller may upload. The response may be written an hour
// after the headers at most.
func (b *pacedBody) start() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.started {
		return
	}
	b.started, b.from = true, time.Now()
	_ = b.rc.SetWriteDeadline(time.Now().Add(time.Hour + time.Minute))
}

func (b *pacedBody) isStarted() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.started
}

func (b *pacedBody) Read(p []byte) (int, error) {
	b.mu.Lock()
	started := b.started
	b.mu.Unlock()
	if !started {
		return b.r.Read(p)
	}
	_ = b.rc.SetReadDeadline(time.Now().Add(b.window))
	n, err := b.r.Read(p)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return n, b.tooSlow()
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.got += int64(n)
	if now := time.Now(); now.Sub(b.from) >= b.window {
		if b.min > 0 && float64(b.got) < float64(b.min)*now.Sub(b.from).Seconds() && err == nil {
			return n, b.tooSlow()
		}
		b.from, b.got = now, 0
	}
	return n, err
}

func (b *pacedBody) Close() error { return b.r.Close() }
