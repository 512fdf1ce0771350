// Command streamload measures change-stream fan-out: it opens N Server-Sent Events
// subscribers on one dataset (GET /api/v1/datasets/{id}/data/stream; with -transport
// websocket, WebSocket subscribers of /data/ws), then writes records
// through the record API at a fixed rate (POST /api/v1/datasets/{id}/data, each record
// carrying seq_no and t_ns, the client's clock just before the POST), and reports the
// delivery latency (event received − t_ns) p50/p90/p99/p99.9/max over every event every
// subscriber received, whether every subscriber got every event, and, given the server's
// pid, the server's RSS (at idle, after connecting, peak during the writes).
//
// The dataset needs integer columns seq_no and t_ns (scripts/bench-stream.sh makes one and
// runs this). Run by hand:
//
//	go run ./scripts/streamload -base http://127.0.0.1:18095 -token $TOK -dataset $DS \
//	    -n 1000 -rate 100 -duration 30s -pid $SERVER_PID
//
// It raises its own open-file limit to the hard limit; each subscriber is one connection.
package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

const bucketMs = 60000 // latency histogram: 1 ms buckets up to 60 s, then one overflow bucket

var (
	hist      [bucketMs + 1]atomic.Uint64 // write started (t_ns) → event received
	histAck   [bucketMs + 1]atomic.Uint64 // the write's response received (committed) → event received, 0 when before
	acked     []atomic.Int64              // per seq_no: when its POST's response came, unix ns
	connected atomic.Int64
	failed    atomic.Int64
	dropped   atomic.Int64 // streams that ended before the run did
)

type sub struct {
	// lat and latAck are the latencies of the events received, in ms (hist's and
	// histAck's buckets), kept by the subscriber and added up at the end: 10,000 readers
	// adding to shared counters for every event took a share of the processors the server
	// being measured needs.
	lat, latAck []uint16
	got         []uint64 // bitmap of seq_no received
	n           atomic.Int64
	dups        atomic.Int64
}

func main() {
	base := flag.String("base", "http://127.0.0.1:18095", "server address")
	token := flag.String("token", "", "bearer token")
	dataset := flag.String("dataset", "", "dataset id (integer fields seq_no and t_ns)")
	n := flag.Int("n", 1000, "subscribers")
	rate := flag.Int("rate", 100, "records written per second")
	dur := flag.Duration("duration", 30*time.Second, "how long to write")
	drain := flag.Duration("drain", 30*time.Second, "how long to wait after the writes for every subscriber to catch up")
	pid := flag.Int("pid", 0, "the server's pid, for its RSS")
	connConc := flag.Int("connect-concurrency", 32, "subscribers connecting at once")
	transport := flag.String("transport", "sse", "sse (/data/stream) or websocket (/data/ws)")
	metrics := flag.String("metrics", "", "the server's metrics address (DP_METRICS_ADDR), for its own view of the POST latency")
	flag.Parse()

	var rl syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl) == nil && rl.Cur < rl.Max {
		rl.Cur = rl.Max
		_ = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &rl)
	}
	total := int(dur.Seconds() * float64(*rate))
	words := (total + 63) / 64
	acked = make([]atomic.Int64, total)
	client := &http.Client{Transport: &http.Transport{DialContext: (&net.Dialer{Timeout: 30 * time.Second}).DialContext,
		MaxIdleConnsPerHost: 256, DisableCompression: true, ReadBufferSize: 16 << 10}}
	subscribeOne := subscribe
	if *transport == "websocket" {
		subscribeOne = subscribeWS
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	fmt.Printf("server RSS before subscribing: %d MB\n", rssMB(*pid))
	subs := make([]*sub, *n)
	t0 := time.Now()
	var wg sync.WaitGroup
	sem := make(chan struct{}, *connConc)
	var ready sync.WaitGroup
	for i := range subs {
		s := &sub{got: make([]uint64, words), lat: make([]uint16, 0, total), latAck: make([]uint16, 0, total)}
		subs[i] = s
		sem <- struct{}{}
		ready.Add(1)
		wg.Add(1)
		go func() {
			defer wg.Done()
			subscribeOne(ctx, client, *base, *token, *dataset, s, total, func() { <-sem; ready.Done() })
		}()
	}
	ready.Wait()
	fmt.Printf("subscribers: %d connected, %d failed, in %.1f s; server RSS %d MB\n",
		connected.Load(), failed.Load(), time.Since(t0).Seconds(), rssMB(*pid))
	time.Sleep(2 * time.Second)

	// Writes: one POST every 1/rate s, each in its own goroutine so a slow one does not slow
	// the rate; peak RSS sampled alongside.
	peak, stopRSS := sampleRSS(*pid)
	m0 := postBuckets(*metrics)
	c0 := costsNow(*pid)
	var werr, wlatSum atomic.Int64
	var wlat []time.Duration
	var wmu sync.Mutex
	var wwg sync.WaitGroup
	tick := time.NewTicker(time.Second / time.Duration(*rate))
	wstart := time.Now()
	for i := 0; i < total; i++ {
		<-tick.C
		wwg.Add(1)
		go func(i int) {
			defer wwg.Done()
			t := time.Now()
			if !post(client, *base, *token, *dataset, i, t, &werr) {
				return
			}
			acked[i].Store(time.Now().UnixNano())
			d := time.Since(t)
			wlatSum.Add(int64(d))
			wmu.Lock()
			wlat = append(wlat, d)
			wmu.Unlock()
		}(i)
	}
	tick.Stop()
	wwg.Wait()
	welapsed := time.Since(wstart)
	if m1 := postBuckets(*metrics); m1 != nil {
		fmt.Printf("server-side POST latency (its histogram, bucket upper bounds): p50 ≤%s p99 ≤%s\n", bucketPct(m0, m1, 50), bucketPct(m0, m1, 99))
	}
	drainAll(subs, int64(total)-werr.Load(), *drain)
	c1 := costsNow(*pid)
	close(stopRSS)
	cancel()
	wg.Wait() // every subscriber has stopped: their latencies can be read

	sort.Slice(wlat, func(i, j int) bool { return wlat[i] < wlat[j] })
	fmt.Printf("writes: %d of %d ok in %.1f s (%.0f/s); POST latency p50 %s p99 %s\n",
		len(wlat), total, welapsed.Seconds(), float64(len(wlat))/welapsed.Seconds(), pct(wlat, 50), pct(wlat, 99))
	summarize(subs, int64(len(wlat)))
	c1.report(c0, float64(len(wlat))*float64(connected.Load()))
	fmt.Printf("server RSS: peak %d MB during the writes, %d MB now\n", peak.Load(), rssMB(*pid))
}

// post writes record i (its sequence number and the time t it was sent); false when it
// failed, counted in werr (the first three reported).
func post(client *http.Client, base, token, dataset string, i int, t time.Time, werr *atomic.Int64) bool {
	body := fmt.Sprintf(`{"seq_no":%d,"t_ns":%d}`, i, t.UnixNano())
	req, _ := http.NewRequest(http.MethodPost, base+"/api/v1/datasets/"+dataset+"/data", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	res, err := client.Do(req)
	if err != nil {
		werr.Add(1)
		return false
	}
	b, _ := io.ReadAll(res.Body)
	_ = res.Body.Close()
	if res.StatusCode != http.StatusCreated && res.StatusCode != http.StatusOK {
		if werr.Add(1) <= 3 {
			fmt.Fprintf(os.Stderr, "write %d: %d %s\n", i, res.StatusCode, b)
		}
		return false
	}
	return true
}

// sampleRSS keeps the server's peak RSS, sampled every 200 ms until stop is closed.
func sampleRSS(pid int) (*atomic.Int64, chan struct{}) {
	peak, stop := &atomic.Int64{}, make(chan struct{})
	go func() {
		for {
			if r := rssMB(pid); int64(r) > peak.Load() {
				peak.Store(int64(r))
			}
			select {
			case <-stop:
				return
			case <-time.After(200 * time.Millisecond):
			}
		}
	}()
	return peak, stop
}

// drainAll waits until every subscriber has ok events, or the drain time is up.
func drainAll(subs []*sub, ok int64, drain time.Duration) {
	deadline := time.Now().Add(drain)
	for time.Now().Before(deadline) {
		done := true
		for _, s := range subs {
			if s.n.Load() < ok {
				done = false
				break
			}
		}
		if done {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// summarize prints what the subscribers received of the written events and the latencies.
func summarize(subs []*sub, written int64) {
	complete, missing, dups := 0, int64(0), int64(0)
	for _, s := range subs {
		if s.n.Load() >= written {
			complete++
		}
		missing += written - s.n.Load()
		dups += s.dups.Load()
	}
	for _, s := range subs {
		for i, ms := range s.lat {
			hist[ms].Add(1)
			histAck[s.latAck[i]].Add(1)
		}
	}
	fmt.Printf("delivery: %d of %d subscribers got every event; %d events missing in all, %d duplicates; %d streams ended early\n",
		complete, len(subs), missing, dups, dropped.Load())
	report("latency (write → event received)", &hist)
	report("latency (write committed: its response received → event received; 0 when the event came first)", &histAck)
}

func report(title string, hist *[bucketMs + 1]atomic.Uint64) {
	var count uint64
	for i := range hist {
		count += hist[i].Load()
	}
	q := func(p float64) string {
		want := uint64(float64(count) * p / 100)
		var c uint64
		for i := range hist {
			c += hist[i].Load()
			if c > want {
				if i == bucketMs {
					return ">60s"
				}
				return fmt.Sprintf("%dms", i)
			}
		}
		return "-"
	}
	mx := "-"
	for i := bucketMs; i >= 0; i-- {
		if hist[i].Load() > 0 {
			mx = fmt.Sprintf("%dms", i)
			break
		}
	}
	fmt.Printf("%s over %d events: p50 %s p90 %s p99 %s p99.9 %s max %s\n",
		title, count, q(50), q(90), q(99), q(99.9), mx)
}

// subscribe reads one SSE stream until ctx ends; ready is called once it is open (or failed).
func subscribe(ctx context.Context, client *http.Client, base, token, ds string, s *sub, total int, ready func()) {
	once := sync.Once{}
	defer once.Do(ready)
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/api/v1/datasets/"+ds+"/data/stream", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Accept", "text/event-stream")
	res, err := client.Do(req)
	if err != nil || res.StatusCode != http.StatusOK {
		if failed.Add(1) <= 3 {
			if err == nil {
				b, _ := io.ReadAll(res.Body)
				err = fmt.Errorf("%d %s", res.StatusCode, b)
			}
			fmt.Fprintf(os.Stderr, "subscribe: %v\n", err)
		}
		if res != nil {
			_ = res.Body.Close()
		}
		return
	}
	defer func() { _ = res.Body.Close() }()
	r := bufio.NewReaderSize(res.Body, 16<<10)
	first := true
	for {
		line, err := r.ReadSlice('\n')
		if err != nil {
			if ctx.Err() == nil {
				dropped.Add(1)
			}
			return
		}
		if first { // the stream's opening comment: subscribed
			first = false
			connected.Add(1)
			once.Do(ready)
		}
		if bytes.HasPrefix(line, []byte("data: ")) {
			s.event(line, total)
		}
	}
}

// subscribeWS is subscribe over the WebSocket endpoint (/data/ws): it subscribes from now on
// and reads a message per event. It speaks the protocol itself (an upgrade, then frames): a
// WebSocket library's cost per message made this client, not the server, the bottleneck.
func subscribeWS(ctx context.Context, _ *http.Client, base, token, ds string, s *sub, total int, ready func()) {
	once := sync.Once{}
	defer once.Do(ready)
	fail := func(err error) {
		if failed.Add(1) <= 3 {
			fmt.Fprintf(os.Stderr, "subscribe: %v\n", err)
		}
	}
	conn, err := (&net.Dialer{Timeout: 30 * time.Second}).DialContext(ctx, "tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		fail(err)
		return
	}
	defer func() { _ = conn.Close() }()
	stop := context.AfterFunc(ctx, func() { _ = conn.Close() })
	defer stop()
	key := make([]byte, 16)
	_, _ = rand.Read(key)
	_, _ = fmt.Fprintf(conn, "GET /api/v1/datasets/%s/data/ws HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"+
		"Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\nAuthorization: Bearer %s\r\n\r\n",
		ds, strings.TrimPrefix(base, "http://"), base64.StdEncoding.EncodeToString(key), token)
	r := bufio.NewReaderSize(conn, 16<<10)
	res, err := http.ReadResponse(r, nil)
	if err == nil && res.StatusCode != http.StatusSwitchingProtocols {
		err = fmt.Errorf("upgrade answered %d", res.StatusCode)
	}
	if err == nil {
		err = writeFrame(conn, 0x1, []byte(`{"action":"subscribe"}`))
	}
	if err != nil {
		fail(err)
		return
	}
	buf := make([]byte, 16<<10)
	for {
		op, msg, err := readFrame(r, buf)
		if err == nil && op == 0x9 { // ping: the server ends a stream whose client does not answer
			err = writeFrame(conn, 0xA, msg)
		}
		if err != nil || op == 0x8 {
			if ctx.Err() == nil {
				dropped.Add(1)
			}
			return
		}
		if op != 0x1 {
			continue
		}
		if bytes.Contains(msg, []byte(`"type":"subscribed"`)) {
			connected.Add(1)
			once.Do(ready)
			continue
		}
		s.event(msg, total)
	}
}

// readFrame reads a server's frame (unmasked, whole): its opcode and payload, in buf when
// it fits.
func readFrame(r *bufio.Reader, buf []byte) (byte, []byte, error) {
	var h [8]byte
	if _, err := io.ReadFull(r, h[:2]); err != nil {
		return 0, nil, err
	}
	op, n := h[0]&0x0f, uint64(h[1]&0x7f)
	switch n {
	case 126:
		if _, err := io.ReadFull(r, h[:2]); err != nil {
			return 0, nil, err
		}
		n = uint64(binary.BigEndian.Uint16(h[:2]))
	case 127:
		if _, err := io.ReadFull(r, h[:8]); err != nil {
			return 0, nil, err
		}
		n = binary.BigEndian.Uint64(h[:8])
	}
	p := buf
	if n > uint64(len(buf)) {
		p = make([]byte, n)
	}
	_, err := io.ReadFull(r, p[:n])
	return op, p[:n], err
}

// writeFrame writes a client's frame (final, masked with a zero key: the bytes as they are)
// of fewer than 126 bytes.
func writeFrame(w io.Writer, op byte, p []byte) error {
	_, err := w.Write(append([]byte{0x80 | op, 0x80 | byte(len(p)), 0, 0, 0, 0}, p...))
	return err
}

// event counts an event received now, whose text (a line or a message) holds its record.
func (s *sub) event(text []byte, total int) {
	now := time.Now().UnixNano()
	tns, ok1 := field(text, `"t_ns":`)
	seq, ok2 := field(text, `"seq_no":`)
	if !ok1 || !ok2 || seq < 0 || seq >= int64(total) {
		return
	}
	ms := min(max((now-tns)/int64(time.Millisecond), 0), bucketMs)
	ack := int64(0)
	if a := acked[seq].Load(); a != 0 && now > a {
		ack = min((now-a)/int64(time.Millisecond), bucketMs)
	}
	s.lat, s.latAck = append(s.lat, uint16(ms)), append(s.latAck, uint16(ack))
	w, b := seq/64, uint64(1)<<(seq%64)
	if s.got[w]&b != 0 {
		s.dups.Add(1)
		return
	}
	s.got[w] |= b
	s.n.Add(1)
}

// field is the integer after key in a JSON line, without decoding the line.
func field(line []byte, key string) (int64, bool) {
	i := bytes.Index(line, []byte(key))
	if i < 0 {
		return 0, false
	}
	rest := line[i+len(key):]
	j := 0
	for j < len(rest) && (rest[j] == '-' || rest[j] >= '0' && rest[j] <= '9') {
		j++
	}
	v, err := strconv.ParseInt(string(rest[:j]), 10, 64)
	return v, err == nil
}

// postBuckets is the server's cumulative histogram of record POST durations: le → count.
func postBuckets(addr string) map[float64]float64 {
	if addr == "" {
		return nil
	}
	res, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return nil
	}
	defer func() { _ = res.Body.Close() }()
	out := map[float64]float64{}
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		l := sc.Text()
		if !strings.HasPrefix(l, "dataplatform_http_request_duration_seconds_bucket{") || !strings.Contains(l, `method="POST"`) || !strings.Contains(l, `/data"`) {
			continue
		}
		i := strings.Index(l, `le="`)
		j := strings.Index(l[i+4:], `"`)
		le, _ := strconv.ParseFloat(l[i+4:i+4+j], 64)
		f := strings.Fields(l)
		n, _ := strconv.ParseFloat(f[len(f)-1], 64)
		out[le] += n
	}
	return out
}

// bucketPct is the upper bound of the bucket holding the p-th percentile of the requests
// counted between the histograms a and b.
func bucketPct(a, b map[float64]float64, p float64) string {
	var les []float64
	for le := range b {
		les = append(les, le)
	}
	sort.Float64s(les)
	total := b[les[len(les)-1]] - a[les[len(les)-1]]
	for _, le := range les {
		if b[le]-a[le] >= total*p/100 {
			return fmt.Sprintf("%gs", le)
		}
	}
	return "-"
}

func pct(d []time.Duration, p int) time.Duration {
	if len(d) == 0 {
		return 0
	}
	return d[(len(d)-1)*p/100].Round(time.Millisecond)
}

// costs are the server's and this process's CPU time and the server's write calls so far.
type costs struct {
	pid             int
	server, self    float64
	serverWriteCall int64
}

func costsNow(pid int) costs {
	c := costs{pid: pid}
	c.server, c.serverWriteCall = procCost(pid)
	c.self, _ = procCost(os.Getpid())
	return c
}

// report prints what the server spent since c0 per event delivered, and this client's CPU.
func (c costs) report(c0 costs, events float64) {
	if c.pid == 0 {
		return
	}
	cpu, w := c.server-c0.server, c.serverWriteCall-c0.serverWriteCall
	fmt.Printf("server cost from the first write to the last delivery: %.1f s CPU, %d write system calls (%.2f µs CPU and %.3f writes per event delivered)\n",
		cpu, w, cpu*1e6/events, float64(w)/events)
	fmt.Printf("this load client, on the same machine: %.1f s CPU\n", c.self-c0.self)
}

// procCost is the process's CPU time so far (user and system, s) and its count of write
// system calls.
func procCost(pid int) (cpu float64, syscw int64) {
	if pid == 0 {
		return 0, 0
	}
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil {
		f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+2:]))
		ut, _ := strconv.ParseFloat(f[11], 64)
		st, _ := strconv.ParseFloat(f[12], 64)
		cpu = (ut + st) / 100 // clock ticks
	}
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", pid)); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "syscw: "); ok {
				syscw, _ = strconv.ParseInt(v, 10, 64)
			}
		}
	}
	return cpu, syscw
}

func rssMB(pid int) int {
	if pid == 0 {
		return 0
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "VmRSS:") {
			kb, _ := strconv.Atoi(strings.Fields(l)[1])
			return kb / 1024
		}
	}
	return 0
}
