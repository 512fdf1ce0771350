package extdb

import (
	"errors"
	"net"
	"net/netip"
	"os"
	"syscall"
	"testing"
)

func TestNetworksAllows(t *testing.T) {
	none := Networks(nil)
	lan := Networks{netip.MustParsePrefix("10.1.0.0/16"), netip.MustParsePrefix("127.0.0.1/32")}
	for _, tc := range []struct {
		ip        string
		none, lan bool
	}{
		{"8.8.8.8", true, true},
		{"2606:4700::1111", true, true},
		{"127.0.0.1", false, true},
		{"127.0.0.2", false, false},
		{"::1", false, false},
		{"::ffff:127.0.0.1", false, true}, // IPv4-mapped is the IPv4 address
		{"10.1.2.3", false, true},
		{"10.2.0.1", false, false},
		{"192.168.1.1", false, false},
		{"172.16.0.1", false, false},
		{"169.254.169.254", false, false}, // cloud metadata
		{"fe80::1", false, false},
		{"fd00::1", false, false},
		{"0.0.0.0", false, false},
		{"100.64.0.1", false, false},
		{"64:ff9b::7f00:1", false, false}, // NAT64 of 127.0.0.1
		{"224.0.0.1", false, false},
		{"::7f00:1", false, false},            // IPv4-compatible 127.0.0.1
		{"::a01:203", false, false},           // IPv4-compatible 10.1.2.3: not the IPv4 address
		{"fec0::1", false, false},             // site-local
		{"100::1", false, false},              // discard
		{"2001:0:4136:e378::1", false, false}, // Teredo
		{"2002:7f00:1::1", false, false},      // 6to4 of 127.0.0.1
		{"3fff::1", false, false},             // documentation
		{"2a00:1450:4001::200e", true, true},
		{"255.255.255.255", false, false},
	} {
		ip := netip.MustParseAddr(tc.ip)
		if got := none.Allows(ip); got != tc.none {
			t.Errorf("default: %s allowed = %v, want %v", tc.ip, got, tc.none)
		}
		if got := lan.Allows(ip); got != tc.lan {
			t.Errorf("with networks: %s allowed = %v, want %v", tc.ip, got, tc.lan)
		}
	}
}

// TestDialErrorKeepsTheServerNetwork: what a failed dial tells the caller names their host,
// never the server's resolver or the address a name led to.
func TestDialErrorKeepsTheServerNetwork(t *testing.T) {
	refused := Networks(nil).Control("DP_CONNECTION_NETWORKS")("tcp4", "127.0.0.1:5432", nil)
	for _, tc := range []struct {
		err  error
		want string
	}{
		{&net.OpError{Op: "dial", Net: "tcp", Err: &net.DNSError{Err: "no such host", Name: "0x7f000001", Server: "10.255.255.53:53", IsNotFound: true}},
			"the host 0x7f000001 does not resolve"},
		{&net.DNSError{Err: "i/o timeout", Name: "db.example", Server: "10.255.255.53:53", IsTimeout: true}, "the host db.example could not be resolved in time"},
		{&net.OpError{Op: "dial", Net: "tcp", Addr: &net.TCPAddr{IP: net.ParseIP("127.0.0.1"), Port: 5432}, Err: refused},
			"refused address: the host's address is neither public nor in DP_CONNECTION_NETWORKS"},
		{&net.OpError{Op: "dial", Net: "tcp", Addr: &net.TCPAddr{IP: net.ParseIP("10.9.8.7"), Port: 5432}, Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)},
			"the host's address cannot be reached: connection refused"},
		{errors.New("password authentication failed"), "password authentication failed"},
	} {
		got := DialError(tc.err)
		if got.Error() != tc.want {
			t.Errorf("%v: %q, want %q", tc.err, got, tc.want)
		}
		if tc.want[0] == 'r' && !errors.Is(got, ErrRefusedAddress) {
			t.Errorf("%v: not ErrRefusedAddress", got)
		}
	}
}
