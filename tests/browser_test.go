package tests

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// browser is headless Chromium (Debian's package, scripts/ensure-chromium.sh) driven over the
// DevTools protocol. Unlike chromiumDOM's --dump-dom it keeps cookies from page to page, runs
// script in the page (filling and submitting forms) and collects what the page got wrong:
// console errors, uncaught exceptions and Content-Security-Policy refusals.
type browser struct {
	t       *testing.T
	ctx     context.Context
	conn    *websocket.Conn
	session string // the page's DevTools session

	mu       sync.Mutex
	closed   bool
	nextID   int64
	pending  map[int64]chan cdpMessage
	problems []string
}

type cdpMessage struct {
	ID        int64           `json:"id,omitempty"`
	Method    string          `json:"method,omitempty"`
	Params    json.RawMessage `json:"params,omitempty"`
	SessionID string          `json:"sessionId,omitempty"`
	Result    json.RawMessage `json:"result,omitempty"`
	Error     *cdpError       `json:"error,omitempty"`
}

type cdpError struct {
	Message string `json:"message"`
}

// reportViolations makes every CSP refusal a console error, whatever Chromium logs of it.
const reportViolations = `document.addEventListener("securitypolicyviolation", function (e) {
  console.error("CSP violation: " + e.violatedDirective + " blocked " + (e.blockedURI || "inline code"));
});`

// newBrowser starts Chromium with one blank page; it stops with the test.
func newBrowser(t *testing.T) *browser {
	t.Helper()
	bin, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatalf("chromium is not installed: run scripts/ensure-chromium.sh (go tool task test does): %v", err)
	}
	// Its profile directory is removed by hand once every Chromium process is gone: t.TempDir's
	// cleanup would race the helper processes still writing into it.
	profile, err := os.MkdirTemp("", "dp-chromium-")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.Command(bin, "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
		"--no-first-run", "--user-data-dir="+profile, "--remote-debugging-address=127.0.0.1", "--remote-debugging-port=0", "about:blank")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // its helpers too are stopped with it
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var b *browser
	t.Cleanup(func() {
		if b != nil {
			_ = b.try("", "Browser.close", map[string]any{}, nil) // a clean exit, profile written
		}
		cancel()
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
		for i := 0; i < 50 && os.RemoveAll(profile) != nil; i++ {
			time.Sleep(100 * time.Millisecond) // a helper still exiting
		}
	})
	// Chromium says where its DevTools endpoint listens on stderr; the rest is drained.
	wsURL := ""
	sc := bufio.NewScanner(stderr)
	var seen []string
	for sc.Scan() {
		line := sc.Text()
		seen = append(seen, line)
		if _, u, ok := strings.Cut(line, "DevTools listening on "); ok {
			wsURL = strings.TrimSpace(u)
			break
		}
	}
	if wsURL == "" {
		t.Fatalf("chromium did not open its DevTools endpoint:\n%s", strings.Join(seen, "\n"))
	}
	go func() {
		for sc.Scan() {
		}
	}()
	conn, _, err := websocket.Dial(ctx, wsURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	conn.SetReadLimit(64 << 20)
	b = &browser{t: t, ctx: ctx, conn: conn, pending: map[int64]chan cdpMessage{}}
	go b.read()
	var target struct {
		TargetID string `json:"targetId"`
	}
	b.call("", "Target.createTarget", map[string]any{"url": "about:blank"}, &target)
	var attached struct {
		SessionID string `json:"sessionId"`
	}
	b.call("", "Target.attachToTarget", map[string]any{"targetId": target.TargetID, "flatten": true}, &attached)
	b.session = attached.SessionID
	for _, m := range []string{"Runtime.enable", "Log.enable", "Page.enable"} {
		b.call(b.session, m, map[string]any{}, nil)
	}
	b.call(b.session, "Page.addScriptToEvaluateOnNewDocument", map[string]any{"source": reportViolations}, nil)
	return b
}

// read dispatches answers to their calls and keeps the page's problems.
func (b *browser) read() {
	for {
		_, data, err := b.conn.Read(b.ctx)
		if err != nil {
			// The browser is gone: every call still waiting gets an error, later ones too.
			b.mu.Lock()
			b.closed = true
			for id, ch := range b.pending {
				delete(b.pending, id)
				ch <- cdpMessage{Error: &cdpError{Message: "the browser closed: " + err.Error()}}
			}
			b.mu.Unlock()
			return
		}
		var m cdpMessage
		if json.Unmarshal(data, &m) != nil {
			continue
		}
		b.mu.Lock()
		if ch, ok := b.pending[m.ID]; ok && m.ID != 0 {
			delete(b.pending, m.ID)
			ch <- m
		} else if p := problem(m); p != "" {
			b.problems = append(b.problems, p)
		}
		b.mu.Unlock()
	}
}

// problem describes an event that shows the page going wrong ("" for any other). Failed
// requests are the page's business (a wrong password is a 401 the page shows): not problems.
func problem(m cdpMessage) string {
	switch m.Method {
	case "Runtime.exceptionThrown":
		var p struct {
			ExceptionDetails struct {
				Text      string `json:"text"`
				Exception struct {
					Description string `json:"description"`
				} `json:"exception"`
			} `json:"exceptionDetails"`
		}
		_ = json.Unmarshal(m.Params, &p)
		return "exception: " + p.ExceptionDetails.Text + " " + p.ExceptionDetails.Exception.Description
	case "Runtime.consoleAPICalled":
		var p struct {
			Type string `json:"type"`
			Args []struct {
				Value       any    `json:"value"`
				Description string `json:"description"`
			} `json:"args"`
		}
		_ = json.Unmarshal(m.Params, &p)
		if p.Type != "error" && p.Type != "assert" {
			return ""
		}
		var parts []string
		for _, a := range p.Args {
			parts = append(parts, fmt.Sprint(a.Value)+a.Description)
		}
		return "console." + p.Type + ": " + strings.Join(parts, " ")
	case "Log.entryAdded":
		var p struct {
			Entry struct {
				Source string `json:"source"`
				Level  string `json:"level"`
				Text   string `json:"text"`
				URL    string `json:"url"`
			} `json:"entry"`
		}
		_ = json.Unmarshal(m.Params, &p)
		if p.Entry.Level != "error" || p.Entry.Source == "network" {
			return ""
		}
		return "log (" + p.Entry.Source + "): " + p.Entry.Text + " " + p.Entry.URL
	}
	return ""
}

// call sends a DevTools command (to the browser when session is empty) and decodes its
// result into out.
func (b *browser) call(session, method string, params any, out any) {
	b.t.Helper()
	if err := b.try(session, method, params, out); err != nil {
		b.t.Fatalf("DevTools %s: %v", method, err)
	}
}

func (b *browser) try(session, method string, params any, out any) error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return fmt.Errorf("the browser closed")
	}
	b.nextID++
	id := b.nextID
	ch := make(chan cdpMessage, 1)
	b.pending[id] = ch
	b.mu.Unlock()
	msg, _ := json.Marshal(map[string]any{"id": id, "method": method, "params": params, "sessionId": session})
	if session == "" {
		msg, _ = json.Marshal(map[string]any{"id": id, "method": method, "params": params})
	}
	if err := b.conn.Write(b.ctx, websocket.MessageText, msg); err != nil {
		return err
	}
	var m cdpMessage
	select {
	case m = <-ch:
	case <-b.ctx.Done():
		return b.ctx.Err()
	}
	if m.Error != nil {
		return fmt.Errorf("%s", m.Error.Message)
	}
	if out != nil {
		return json.Unmarshal(m.Result, out)
	}
	return nil
}

// open navigates the page to url.
func (b *browser) open(url string) {
	b.t.Helper()
	b.call(b.session, "Page.navigate", map[string]any{"url": url}, nil)
}

// eval runs expression in the page and answers its value (promises awaited).
func (b *browser) eval(expression string) (any, error) {
	var r struct {
		Result struct {
			Value any `json:"value"`
		} `json:"result"`
		ExceptionDetails *struct {
			Text string `json:"text"`
		} `json:"exceptionDetails"`
	}
	if err := b.try(b.session, "Runtime.evaluate", map[string]any{"expression": expression, "returnByValue": true, "awaitPromise": true}, &r); err != nil {
		return nil, err
	}
	if r.ExceptionDetails != nil {
		return nil, fmt.Errorf("%s", r.ExceptionDetails.Text)
	}
	return r.Result.Value, nil
}

// waitFor waits until expression is true in the page (a page being replaced by the next
// one answers nothing meanwhile). It gives up only near the test binary's own deadline
// (go test -timeout), saying where the page is.
func (b *browser) waitFor(what, expression string) {
	b.t.Helper()
	deadline, limited := b.t.Deadline()
	for {
		if v, err := b.eval(expression); err == nil && v == true {
			return
		}
		if limited && time.Until(deadline) < 30*time.Second {
			loc, _ := b.eval("location.href + '\\n' + document.body.innerText.slice(0, 2000)")
			b.t.Fatalf("the page never got to %s; it is at %v\nproblems: %v", what, loc, b.Problems())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Problems is what went wrong in the page so far.
func (b *browser) Problems() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.problems...)
}
