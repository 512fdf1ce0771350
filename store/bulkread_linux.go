package store

import (
	"io"
	"net"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// bulkReading is c read in large pieces while data streams in. A large COPY arrives a few
// kilobytes at a time, as PostgreSQL writes it, and a reader woken for each piece spends more
// on being woken (a context switch, dear on virtual machines, and the Go scheduler's work
// around it) than on reading: twice the server's CPU of a large export. So after a large
// read, a read that finds nothing waits in poll(2) until lowWater bytes have arrived
// (SO_RCVLOWAT) or lowWait has passed, and reads what is there. Otherwise, and when even
// that wait brought nothing, it waits in the runtime's poller for the first byte, as a plain
// connection does, which keeps the connection's deadlines.
func bulkReading(c net.Conn) net.Conn {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return c
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return c
	}
	return &bulkConn{Conn: c, rc: rc}
}

type bulkConn struct {
	net.Conn
	rc   syscall.RawConn
	bulk bool // the last read was large: data streams in
	low  bool // SO_RCVLOWAT is lowWater (else 1)
}

const (
	bulkRead = 8 << 10  // a read at least this large is data streaming in
	lowWater = 64 << 10 // bytes a streaming read waits for
	lowWait  = 1        // ms a streaming read waits at most
)

func (c *bulkConn) Read(p []byte) (int, error) {
	var n int
	var rerr error
	err := c.rc.Read(func(fd uintptr) bool {
		waited := false
		for {
			n, rerr = syscall.Read(int(fd), p)
			if rerr != syscall.EAGAIN {
				return true
			}
			if !c.bulk || waited {
				c.bulk = false
				c.setLow(fd, false)
				return false // the runtime's poller
			}
			c.setLow(fd, true)
			fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
			for {
				if _, err := unix.Poll(fds, lowWait); err != unix.EINTR {
					break
				}
			}
			waited = true
		}
	})
	switch {
	case err != nil:
		return 0, err
	case rerr != nil:
		return 0, os.NewSyscallError("read", rerr)
	case n == 0 && len(p) > 0:
		return 0, io.EOF
	}
	c.bulk = n >= bulkRead
	return n, nil
}

// setLow sets the socket's receive low-water mark to lowWater (low) or 1.
func (c *bulkConn) setLow(fd uintptr, low bool) {
	if c.low == low {
		return
	}
	v := 1
	if low {
		v = lowWater
	}
	if syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVLOWAT, v) == nil {
		c.low = low
	}
}
