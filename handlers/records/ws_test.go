package records

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// TestWSFrames: frames made by wsFrame, gathered on a corked connection beside one the
// WebSocket library writes and written straight after it, reach a WebSocket client whole
// and in order, in each of the three length forms.
func TestWSFrames(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sizes := []int{0, 125, 126, 65535, 65536, 70000}
	msg := func(i int) []byte { return bytes.Repeat([]byte{byte('a' + i)}, sizes[i]) }
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hj := &corkingHijacker{ResponseWriter: w}
		conn, err := websocket.Accept(hj, r, nil)
		if err != nil {
			return
		}
		defer func() { _ = conn.CloseNow() }()
		hj.conn.cork()
		for i := range 3 {
			_, _ = hj.conn.Write(wsFrame(msg(i)))
		}
		_ = conn.Write(ctx, websocket.MessageText, []byte("the library's"))
		if err := hj.conn.uncork(); err != nil {
			t.Error(err)
		}
		for i := 3; i < len(sizes); i++ {
			_, _ = hj.conn.Write(wsFrame(msg(i)))
		}
		_, _, _ = conn.Read(ctx) // until the client closes
	}))
	defer srv.Close()
	conn, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(srv.URL, "http"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.CloseNow() }()
	conn.SetReadLimit(1 << 20)
	want := [][]byte{msg(0), msg(1), msg(2), []byte("the library's"), msg(3), msg(4), msg(5)}
	for i, w := range want {
		typ, got, err := conn.Read(ctx)
		if err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		if typ != websocket.MessageText || !bytes.Equal(got, w) {
			t.Fatalf("message %d: %d bytes of type %v, want %d bytes %.10q", i, len(got), typ, len(w), w)
		}
	}
	_ = conn.Close(websocket.StatusNormalClosure, "")
}
