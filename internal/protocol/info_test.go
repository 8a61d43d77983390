package protocol

import "testing"

func TestRemoteIP(t *testing.T) {
	tests := []struct {
		remote, want string
		free         bool // answered without an allocation
	}{
		{"127.0.0.1:40000", "127.0.0.1", true},
		{"10.1.2.3:1", "10.1.2.3", true},
		{"[::1]:80", "::1", false},
		{"[::ffff:10.0.0.1]:5", "10.0.0.1", false},
		{"[2001:DB8:0:0::1]:443", "2001:db8::1", false},
		{"[fe80::1%eth0]:80", "fe80::1%eth0", false},
		{"010.1.2.3:1", "", false},
		{"127.0.0.1", "", false},
		{"", "", false},
		{"pipe", "", false},
	}
	for _, tt := range tests {
		if got := remoteIP(tt.remote); got != tt.want {
			t.Errorf("remoteIP(%q) = %q, want %q", tt.remote, got, tt.want)
		}
		if n := testing.AllocsPerRun(10, func() { remoteIP(tt.remote) }); tt.free && n > 0 {
			t.Errorf("remoteIP(%q) allocates %v times", tt.remote, n)
		}
	}
}
