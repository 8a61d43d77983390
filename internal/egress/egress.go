// Package egress guards the connections Ferry opens on a user's behalf
// (SNS HTTP/S deliveries) so that they cannot be turned against the
// network Ferry runs in: addresses on the machine itself, link-local ones
// (cloud metadata services), private ranges, and unspecified or multicast
// ones are refused unless an allow-list admits them.
//
// The check runs on the address being connected to, after name
// resolution (a net.Dialer's Control), so a name that resolves to a public
// address when looked up and to a private one a moment later (DNS
// rebinding) cannot pass.
package egress

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"syscall"
)

// Policy decides which addresses outgoing connections may reach. The zero
// Policy admits only public addresses.
type Policy struct {
	nets  []netip.Prefix
	hosts map[string]bool
}

// Parse builds a policy whose allow-list is entries: CIDR prefixes
// ("10.1.0.0/16", "fd00::/8"), single addresses, or host names, which
// admit whatever they resolve to (compared without case or trailing dot).
func Parse(entries []string) (*Policy, error) {
	p := &Policy{hosts: map[string]bool{}}
	for _, e := range entries {
		e = strings.TrimSpace(e)
		if e == "" {
			continue
		}
		if strings.Contains(e, "/") {
			pfx, err := netip.ParsePrefix(e)
			if err != nil {
				return nil, fmt.Errorf("egress: allow-list entry %q: %w", e, err)
			}
			p.nets = append(p.nets, pfx.Masked())
			continue
		}
		if a, err := netip.ParseAddr(strings.Trim(e, "[]")); err == nil {
			a = a.Unmap()
			p.nets = append(p.nets, netip.PrefixFrom(a, a.BitLen()))
			continue
		}
		if strings.ContainsAny(e, " :*") {
			return nil, fmt.Errorf("egress: allow-list entry %q is neither a CIDR, an address nor a host name", e)
		}
		p.hosts[canonicalHost(e)] = true
	}
	return p, nil
}

func canonicalHost(h string) string { return strings.TrimSuffix(strings.ToLower(h), ".") }

// special are the ranges refused besides those netip classifies
// (loopback, private, link-local, multicast, unspecified).
var special = []struct {
	pfx    netip.Prefix
	reason string
}{
	{netip.MustParsePrefix("0.0.0.0/8"), "this network"},
	// Carrier-grade NAT space; some clouds serve metadata here
	// (100.100.100.200).
	{netip.MustParsePrefix("100.64.0.0/10"), "shared address space"},
	{netip.MustParsePrefix("192.0.0.0/24"), "IETF protocol assignments"},
	{netip.MustParsePrefix("198.18.0.0/15"), "benchmarking"},
	{netip.MustParsePrefix("240.0.0.0/4"), "reserved"},
	// NAT64 addresses embed an IPv4 address the gateway connects to.
	{netip.MustParsePrefix("64:ff9b::/96"), "NAT64"},
	{netip.MustParsePrefix("64:ff9b:1::/48"), "NAT64"},
}

// Refused reports why a is not a public address ("" when it is).
func Refused(a netip.Addr) string {
	a = a.Unmap()
	switch {
	case !a.IsValid():
		return "invalid"
	case a.IsUnspecified():
		return "unspecified"
	case a.IsLoopback():
		return "loopback"
	case a.IsLinkLocalUnicast():
		return "link-local"
	case a.IsMulticast(), a.IsLinkLocalMulticast(), a.IsInterfaceLocalMulticast():
		return "multicast"
	case a.IsPrivate():
		return "private"
	}
	for _, s := range special {
		if s.pfx.Contains(a) {
			return s.reason
		}
	}
	return ""
}

// ErrRefused is in the chain of every connection a policy refuses.
var ErrRefused = errors.New("address not allowed")

// check is the verdict on one resolved address.
func (p *Policy) check(a netip.Addr) error {
	a = a.Unmap()
	why := Refused(a)
	if why == "" {
		return nil
	}
	for _, n := range p.nets {
		if n.Contains(a) {
			return nil
		}
	}
	return fmt.Errorf("%w: %s is %s", ErrRefused, a, why)
}

// control is a net.Dialer Control: it runs for each address the dialer
// tries, after resolution and before the connection is made.
func (p *Policy) control(network, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("%w: %q is not an address", ErrRefused, address)
	}
	return p.check(ap.Addr())
}

// DialContext dials as d does, refusing addresses the policy does not
// admit. A host on the allow-list is dialled as d would, whatever it
// resolves to. d's own Control, if any, is replaced.
func (p *Policy) DialContext(d *net.Dialer) func(ctx context.Context, network, addr string) (net.Conn, error) {
	guarded := *d
	guarded.Control = p.control
	guarded.ControlContext = nil
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		if host, _, err := net.SplitHostPort(addr); err == nil && p.hosts[canonicalHost(host)] {
			return d.DialContext(ctx, network, addr)
		}
		return guarded.DialContext(ctx, network, addr)
	}
}
