package export

import "io"

// flusher writes buffered output in 256 KiB chunks, pushing each to w from a goroutine of its
// own, so that writing (to the network) overlaps reading the next rows; a writer with a
// Flush() method (an http.Flusher) is flushed after each chunk.
type flusher struct {
	closed bool
	buf    []byte
	ch     chan []byte
	done   chan error
	free   chan []byte
}

const chunk = 256 << 10

func newFlusher(w io.Writer) *flusher {
	f := &flusher{buf: make([]byte, 0, chunk+4096), ch: make(chan []byte, 2), done: make(chan error, 1), free: make(chan []byte, 3)}
	go func() {
		var err error
		for b := range f.ch {
			if err == nil {
				if _, err = w.Write(b); err == nil {
					if fl, ok := w.(interface{ Flush() }); ok {
						fl.Flush()
					}
				}
			}
			select {
			case f.free <- b[:0]:
			default:
			}
		}
		f.done <- err
	}()
	return f
}

// maybe sends the buffer once it holds a chunk.
func (f *flusher) maybe() {
	if len(f.buf) < chunk {
		return
	}
	f.ch <- f.buf
	select {
	case f.buf = <-f.free:
	default:
		f.buf = make([]byte, 0, chunk+4096)
	}
}

// close sends what is left and waits for the writer.
func (f *flusher) close() error {
	if f.closed {
		return nil
	}
	f.closed = true
	if len(f.buf) > 0 {
		f.ch <- f.buf
	}
	close(f.ch)
	return <-f.done
}
