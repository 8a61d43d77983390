package egress

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"testing"
	"time"
)

func TestRefused(t *testing.T) {
	for _, tc := range []struct {
		addr, why string
	}{
		{"8.8.8.8", ""},
		{"1.1.1.1", ""},
		{"2606:4700:4700::1111", ""},
		{"127.0.0.1", "loopback"},
		{"127.9.9.9", "loopback"},
		{"::1", "loopback"},
		{"::ffff:127.0.0.1", "loopback"},
		{"169.254.169.254", "link-local"},
		{"fe80::1", "link-local"},
		{"10.0.0.1", "private"},
		{"172.16.5.4", "private"},
		{"172.31.255.255", "private"},
		{"172.32.0.1", ""},
		{"192.168.1.1", "private"},
		{"fc00::1", "private"},
		{"fd00:ec2::254", "private"},
		{"0.0.0.0", "unspecified"},
		{"::", "unspecified"},
		{"0.1.2.3", "this network"},
		{"224.0.0.1", "multicast"},
		{"239.255.255.250", "multicast"},
		{"ff02::1", "multicast"},
		{"100.100.100.200", "shared address space"},
		{"255.255.255.255", "reserved"},
		{"64:ff9b::a9fe:a9fe", "NAT64"},
	} {
		if got := Refused(netip.MustParseAddr(tc.addr)); got != tc.why {
			t.Errorf("Refused(%s) = %q, want %q", tc.addr, got, tc.why)
		}
	}
}

func TestParse(t *testing.T) {
	p, err := Parse([]string{"10.1.0.0/16", " 192.168.1.7 ", "[::1]", "Hooks.Internal.", ""})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		addr string
		ok   bool
	}{
		{"10.1.2.3", true},
		{"10.2.0.1", false},
		{"192.168.1.7", true},
		{"192.168.1.8", false},
		{"::1", true},
		{"127.0.0.1", false},
		{"::ffff:10.1.0.9", true},
		{"93.184.216.34", true}, // public: never refused
	} {
		err := p.check(netip.MustParseAddr(tc.addr))
		if (err == nil) != tc.ok {
			t.Errorf("check(%s) = %v, want allowed %v", tc.addr, err, tc.ok)
		}
		if err != nil && !errors.Is(err, ErrRefused) {
			t.Errorf("check(%s) = %v, not ErrRefused", tc.addr, err)
		}
	}
	if !p.hosts["hooks.internal"] {
		t.Errorf("host entry not kept as hooks.internal: %v", p.hosts)
	}
	for _, bad := range []string{"10.0.0.0/33", "not a host", "*.example.com", "a:b"} {
		if _, err := Parse([]string{bad}); err == nil {
			t.Errorf("Parse(%q) accepted", bad)
		}
	}
}

// TestDialContext connects to a loopback listener through policies that
// refuse and admit it. "localhost" passes no check by its name: it is its
// resolved address that is refused.
func TestDialContext(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	for _, tc := range []struct {
		name  string
		allow []string
		host  string
		ok    bool
	}{
		{"loopback address refused", nil, "127.0.0.1", false},
		{"name resolving to loopback refused", nil, "localhost", false},
		{"address admitted", []string{"127.0.0.1"}, "127.0.0.1", true},
		{"prefix admitted", []string{"127.0.0.0/8"}, "127.0.0.1", true},
		{"other prefix", []string{"10.0.0.0/8"}, "127.0.0.1", false},
		{"host admitted", []string{"localhost"}, "localhost", true},
		{"host admits only itself", []string{"example.invalid"}, "localhost", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Parse(tc.allow)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			c, err := p.DialContext(&net.Dialer{})(ctx, "tcp", net.JoinHostPort(tc.host, port))
			if c != nil {
				c.Close()
			}
			if tc.ok && err != nil {
				t.Fatalf("dial: %v", err)
			}
			if !tc.ok && !errors.Is(err, ErrRefused) {
				t.Fatalf("dial = %v, want ErrRefused", err)
			}
		})
	}
}
