package extdb

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"syscall"
	"time"
)

// Networks are the networks beyond the public internet that connected databases may be in
// (DP_CONNECTION_NETWORKS). Every other loopback, private, link-local (the cloud metadata
// address) or otherwise special address is refused, so a tenant cannot point the server at
// the host's own services, its platform database or the internal network.
type Networks []netip.Prefix

// ipv6Unicast is the only IPv6 space that is the public internet (IANA's global unicast
// allocation). Deciding IPv6 by allow-list leaves out, whatever else the special registry holds,
// the IPv4-compatible form (::7f00:1 is 127.0.0.1), deprecated site-local fec0::/10, discard
// 100::/64, and the NAT64 prefixes.
var ipv6Unicast = netip.MustParsePrefix("2000::/3")

// special are address ranges that are not the public internet. The IPv6 ones are those inside
// 2000::/3: IETF protocol assignments (Teredo, ORCHID: they carry or reach other addresses),
// documentation, and 6to4 (it embeds an IPv4 address).
var special = func() []netip.Prefix {
	var ps []netip.Prefix
	for _, s := range []string{"0.0.0.0/8", "100.64.0.0/10", "192.0.0.0/24", "192.0.2.0/24", "198.18.0.0/15",
		"198.51.100.0/24", "203.0.113.0/24", "240.0.0.0/4", "2001::/23", "2001:db8::/32", "2002::/16", "3fff::/20"} {
		ps = append(ps, netip.MustParsePrefix(s))
	}
	return ps
}()

// Allows reports whether a connection may reach ip.
func (n Networks) Allows(ip netip.Addr) bool {
	ip = ip.Unmap()
	for _, p := range n {
		if p.Contains(ip) {
			return true
		}
	}
	if !ip.IsGlobalUnicast() || ip.IsPrivate() || (ip.Is6() && !ipv6Unicast.Contains(ip)) {
		return false
	}
	for _, p := range special {
		if p.Contains(ip) {
			return false
		}
	}
	return true
}

// ErrRefusedAddress is a connection to an address outside the allowed networks.
var ErrRefusedAddress = errors.New("refused address")

// refusedError is Control's refusal. It names the setting that widens the networks, never the
// address: the caller gave a name, and where it leads inside the server's network is not
// theirs to learn.
type refusedError struct{ reason string }

func (e *refusedError) Error() string { return ErrRefusedAddress.Error() + ": " + e.reason }
func (e *refusedError) Unwrap() error { return ErrRefusedAddress }

// DialError is a failed connection's error as the caller may read it: what is wrong with the
// host they gave, and nothing of the server's own network. A name that does not resolve says
// so, without the resolver the server asked ("lookup x on 10.0.0.53:53"); a refused address
// says so, without the address dialled; other network errors lose the addresses net.OpError
// prints ("dial tcp 10.1.2.3:5432: ..."). Other errors are returned as they are.
func DialError(err error) error {
	if err == nil {
		return nil
	}
	var re *refusedError
	if errors.As(err, &re) {
		return re
	}
	var de *net.DNSError
	if errors.As(err, &de) {
		switch {
		case de.IsNotFound:
			return fmt.Errorf("the host %s does not resolve", de.Name)
		case de.IsTimeout:
			return fmt.Errorf("the host %s could not be resolved in time", de.Name)
		default:
			return fmt.Errorf("the host %s could not be resolved", de.Name)
		}
	}
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Err != nil {
		if oe.Timeout() {
			return errors.New("the host did not answer in time")
		}
		var se *os.SyscallError
		if errors.As(oe.Err, &se) && se.Err != nil {
			return fmt.Errorf("the host's address cannot be reached: %s", se.Err.Error()) // "connection refused"
		}
		return fmt.Errorf("the host's address cannot be reached: %s", oe.Err.Error())
	}
	return err
}

// dialer connects only to allowed addresses. The check runs on the address actually dialled
// (after name resolution), so a name that resolves to an internal address is refused too.
type dialer struct {
	nets    Networks
	reached *netip.Addr // the last address connected to
}

func (d dialer) netDialer(timeout time.Duration) *net.Dialer {
	check := d.nets.Control("DP_CONNECTION_NETWORKS")
	return &net.Dialer{Timeout: timeout, Control: func(network, address string, c syscall.RawConn) error {
		if err := check(network, address, c); err != nil {
			return err
		}
		*d.reached = netip.MustParseAddrPort(address).Addr().Unmap()
		return nil
	}}
}

// Control is a net.Dialer Control that refuses addresses the networks do not allow, named by
// setting (the environment variable that widens them) in the error. It sees the address
// actually dialled, after name resolution.
func (n Networks) Control(setting string) func(network, address string, _ syscall.RawConn) error {
	return func(network, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil { // a Unix socket
			return &refusedError{"the host is not a network address"}
		}
		if !n.Allows(ap.Addr()) {
			return &refusedError{"the host's address is neither public nor in " + setting}
		}
		return nil
	}
}

func (d dialer) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	return d.netDialer(ConnectTimeout).DialContext(ctx, network, address)
}

func (d dialer) Dial(network, address string) (net.Conn, error) {
	return d.DialContext(context.Background(), network, address)
}

func (d dialer) DialTimeout(network, address string, timeout time.Duration) (net.Conn, error) {
	return d.netDialer(timeout).Dial(network, address)
}
