package server

import (
	"net/http"
	"net/http/httptest"
	"os"
	"testing"
)

func TestHostSet(t *testing.T) {
	hosts, err := newHostSet([]string{"ferry", "*.corp.example", "10.9.8.7"}, "127.0.0.1:4566", "http://queues.example:4566", "admin.example:9000")
	if err != nil {
		t.Fatal(err)
	}
	machine, _ := os.Hostname()
	for _, tc := range []struct {
		host string
		ok   bool
	}{
		{"localhost:4566", true},
		{"LOCALHOST.:4566", true},
		{"localhost", true},
		{"api.localhost:4566", true},
		{"127.0.0.1:4566", true},
		{"[::1]:4566", true},
		{"[::1]", true},
		{"192.168.1.20:4566", true}, // an address cannot be rebound
		{"sqs.us-east-1.localhost.localstack.cloud:4566", true},
		{"localhost.localstack.cloud:4566", true},
		{"host.docker.internal:4566", true},
		{"queues.example:4566", true}, // --queue-url-base
		{"admin.example:9000", true},  // --admin-listen
		{"ferry:4566", true},
		{"a.corp.example", true},
		{"corp.example", false},
		{"evil.example:4566", false},
		{"localhost.evil.example", false},
		{"evillocalhost", false},
		{"localstack.cloud", false},
		{machine, true},
		{"", true}, // HTTP/1.0 without Host: no browser's
	} {
		if got := hosts.allowsHost(tc.host); got != tc.ok {
			t.Errorf("allowsHost(%q) = %v, want %v", tc.host, got, tc.ok)
		}
	}
	anyHost, err := newHostSet([]string{"*"})
	if err != nil || !anyHost.allowsHost("evil.example") {
		t.Errorf("* does not accept any host: %v", err)
	}
	for _, bad := range []string{"a/b", "a b", "ev*il", "*evil", "**"} {
		if _, err := newHostSet([]string{bad}); err == nil {
			t.Errorf("allowed host %q accepted", bad)
		}
	}
}

func TestCrossSite(t *testing.T) {
	hosts, err := newHostSet([]string{"app.example", "*"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, origin, fetchSite string
		cross                   bool
	}{
		{"an SDK: neither header", "", "", false},
		{"a navigation from another site", "", "cross-site", true},
		{"typed into the address bar", "", "none", false},
		{"same origin", "", "same-origin", false},
		{"a page on localhost", "http://localhost:3000", "same-site", false},
		{"a page on 127.0.0.1 calling localhost", "http://127.0.0.1:3000", "cross-site", false},
		{"an allowed page", "https://app.example", "cross-site", false},
		{"another site", "https://evil.example", "cross-site", true},
		{"another site, no Sec-Fetch-Site", "https://evil.example", "", true},
		{"a public address: anyone's page", "http://203.0.113.9", "", true},
		{"a sandboxed page", "null", "", true},
	} {
		r := httptest.NewRequest("POST", "http://localhost:4566/", nil)
		if tc.origin != "" {
			r.Header.Set("Origin", tc.origin)
		}
		if tc.fetchSite != "" {
			r.Header.Set("Sec-Fetch-Site", tc.fetchSite)
		}
		if got := hosts.crossSite(r); got != tc.cross {
			t.Errorf("%s: crossSite = %v, want %v", tc.name, got, tc.cross)
		}
	}
}

func TestBearer(t *testing.T) {
	for _, tc := range []struct {
		header string
		ok     bool
	}{
		{"Bearer s3cret", true},
		{"bearer s3cret", true},
		{"Bearer s3cre", false},
		{"Bearer s3cret2", false},
		{"Basic s3cret", false},
		{"s3cret", false},
		{"", false},
	} {
		r := httptest.NewRequest("GET", "/metrics", nil)
		if tc.header != "" {
			r.Header.Set("Authorization", tc.header)
		}
		if got := bearer(r, "s3cret"); got != tc.ok {
			t.Errorf("bearer(%q) = %v, want %v", tc.header, got, tc.ok)
		}
	}
}

// BenchmarkGuardCheck is what the Host and cross-site checks add to each
// request an SDK sends.
func BenchmarkGuardCheck(b *testing.B) {
	hosts, err := newHostSet([]string{"ferry"}, "127.0.0.1:4566")
	if err != nil {
		b.Fatal(err)
	}
	g := &guard{hosts: hosts}
	h := g.check(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	for _, host := range []string{"127.0.0.1:4566", "sqs.us-east-1.localhost.localstack.cloud:4566"} {
		b.Run(host, func(b *testing.B) {
			r := httptest.NewRequest("POST", "http://"+host+"/", nil)
			w := httptest.NewRecorder()
			b.ReportAllocs()
			for b.Loop() {
				h.ServeHTTP(w, r)
			}
		})
	}
}
