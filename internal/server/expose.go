package server

import (
	"crypto/subtle"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"path"
	"strings"
	"sync"

	"github.com/ferrymq/ferry/internal/protocol"
)

// access is who may use an endpoint.
type access int

const (
	// accessAPI: the AWS APIs, whose requests the protocol layer
	// authenticates.
	accessAPI access = iota + 1
	// accessPublic: anyone who reaches the listener; nothing of any
	// account's messages, names or state.
	accessPublic
	// accessAdmin: reveals message contents, resource names of every
	// account, or changes state. It needs the admin token when one is
	// set, and is closed when auth is on and none is.
	accessAdmin
	// accessConsole: the console, whose pages are public and whose API
	// needs its own login (package console).
	accessConsole
)

func (a access) String() string {
	switch a {
	case accessAPI:
		return "api"
	case accessPublic:
		return "public"
	case accessAdmin:
		return "admin"
	case accessConsole:
		return "console"
	}
	return "unclassified"
}

// endpoint is a path Ferry serves, as the README lists it.
type endpoint struct {
	// pattern is the method and path as http.ServeMux reads them, where a
	// '*' stands for the part of a segment that varies (path.Match).
	pattern string
	access  access
	// exposes is what a caller learns or changes there.
	exposes string
}

// endpoints is every path the server serves. A path registered that is
// not here is served as admin, logged, and fails TestEndpointsClassified.
func endpoints() []endpoint {
	return []endpoint{
		{"/", accessAPI, "the SQS, SNS and CloudWatch APIs, including the SubscribeURL and UnsubscribeURL links"},
		{"GET /_ferry/health", accessPublic, "whether the store serves (running, degraded and why)"},
		{"GET /_localstack/health", accessPublic, "the same, at LocalStack's path"},
		{"GET /SimpleNotificationService-*.pem", accessPublic, "the SNS signing certificate (SigningCertURL)"},
		{"GET /_ferry/sns/SimpleNotificationService-*.pem", accessPublic, "the same certificate"},
		{"GET /metrics", accessAdmin, "Prometheus metrics: the names and figures of every account's queues and topics, the process's memory"},
		{"GET /_ferry/sns/counters", accessAdmin, "delivery counters of every topic and subscription, with their ARNs"},
		{"GET /_ferry/sns/deliveries", accessAdmin, "the recorded deliveries to lambda, sms, application, firehose and unsent email endpoints: message bodies"},
		{"DELETE /_ferry/sns/deliveries", accessAdmin, "empties the recorded deliveries"},
		{"GET /_ferry/sns/delivery-logs", accessAdmin, "the latest delivery status log lines: endpoints and their answers"},
		{"DELETE /_ferry/sns/delivery-logs", accessAdmin, "empties the delivery status log"},
		{"POST /_ferry/sns/sms-opt-outs", accessAdmin, "opts a phone number out of SMS (changes state)"},
		{"GET /_ferry/history", accessAdmin, "the failure history of a queue's messages: their receives with the consumers' addresses, user agents and access keys, expiries, moves"},
		{"GET /_ferry/export", accessAdmin, "the topology of an account: queue, topic and subscription names, attributes and policies, alarms"},
		{"POST /_ferry/reset", accessAdmin, "removes the state of every account, or of one account or service (changes state)"},
		{"POST /_ferry/faults", accessAdmin, "adds a fault rule: SQS actions or SNS deliveries that fail on purpose (changes behaviour)"},
		{"GET /_ferry/faults", accessAdmin, "the fault rules, their targets (queue names, endpoints) and counts, and the seed"},
		{"DELETE /_ferry/faults", accessAdmin, "removes every fault rule"},
		{"DELETE /_ferry/faults/*", accessAdmin, "removes one fault rule"},
		{"/moto-api/reset", accessAdmin, "the same for every account, at moto's path (changes state)"},
		{"POST /_localstack/state/reset", accessAdmin, "the same, at LocalStack's path (changes state)"},
		{"POST /_localstack/state/*/reset", accessAdmin, "one service's state, at LocalStack's path (changes state)"},
		{"GET /_ferry/clock", accessAdmin, "the time of this Ferry's clock, whether it is frozen, its offset from the wall clock"},
		{"POST /_ferry/clock/freeze", accessAdmin, "freezes the clock (changes state)"},
		{"POST /_ferry/clock/resume", accessAdmin, "lets the clock run on (changes state)"},
		{"POST /_ferry/clock/set", accessAdmin, "moves the clock forward to a time: every timed thing comes due on the way (changes state)"},
		{"/console/", accessConsole, "the console: its pages, and its API behind its own login (a key's account, or every account with the admin token or auth off): queues, messages, topics, alarms; acts on them (changes state)"},
		{"POST /_ferry/clock/advance", accessAdmin, "moves the clock forward by a duration: every timed thing comes due on the way (changes state)"},
	}
}

// classify finds pattern's endpoint.
func classify(pattern string) (endpoint, bool) {
	for _, e := range endpoints() {
		if ok, _ := path.Match(e.pattern, pattern); ok {
			return e, true
		}
	}
	return endpoint{}, false
}

// routes is where every path is registered: it puts each on the listener
// its class belongs to, behind the admin check when it is admin, and
// remembers it, for the test that walks them. The SNS certificate's paths
// are added once its key exists, while the server serves.
type routes struct {
	api   *http.ServeMux
	admin *http.ServeMux // nil: admin paths are served with the API
	// console serves the console alone (Config.ConsoleListen); nil: it is
	// served with the admin paths.
	console *http.ServeMux
	guard   *guard
	log     *slog.Logger

	mu         sync.Mutex
	registered []string
}

func (rt *routes) HandleFunc(pattern string, h func(http.ResponseWriter, *http.Request)) {
	rt.Handle(pattern, http.HandlerFunc(h))
}

func (rt *routes) Handle(pattern string, h http.Handler) {
	e, ok := classify(pattern)
	if !ok {
		rt.log.Error("endpoint not classified: served as admin", "pattern", pattern)
		e = endpoint{pattern: pattern, access: accessAdmin}
	}
	rt.mu.Lock()
	rt.registered = append(rt.registered, pattern)
	rt.mu.Unlock()
	if e.access == accessAdmin {
		h = rt.guard.adminOnly(h)
	}
	switch {
	case e.access == accessConsole && rt.console != nil:
		rt.console.Handle(pattern, h)
	case e.access == accessConsole && rt.admin != nil:
		rt.admin.Handle(pattern, h)
	case rt.admin == nil:
		rt.api.Handle(pattern, h)
	case e.access == accessAdmin:
		rt.admin.Handle(pattern, h)
	case e.access == accessPublic:
		// Probes and subscribers find these on either listener.
		rt.api.Handle(pattern, h)
		rt.admin.Handle(pattern, h)
	default:
		rt.api.Handle(pattern, h)
	}
}

// Registered lists the patterns registered so far.
func (rt *routes) Registered() []string {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return append([]string(nil), rt.registered...)
}

// guard holds what every request is checked against before it is routed.
type guard struct {
	hosts      hostSet
	adminToken string
	authOn     bool
	api        *protocol.Handler // shapes refusals as each protocol does
}

// errForbidden shapes the refusals of the Host and cross-site checks:
// AWS's code for a request it will not serve, which no SDK retries and
// every SDK shows with its message.
var errForbidden = &protocol.Error{Shape: "AccessDenied", Type: "com.amazon.coral.service#AccessDeniedException",
	Code: "AccessDenied", Status: http.StatusForbidden}

// check refuses, before routing, a request whose Host Ferry does not
// serve (a page on another site that reached Ferry by DNS rebinding) and
// a browser's request on behalf of a page of another site.
func (g *guard) check(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !g.hosts.allowsHost(r.Host) {
			g.api.Refuse(w, r, errForbidden.WithMessage(
				"Host %q is not a name this Ferry serves; add it with --allowed-hosts (FERRY_ALLOWED_HOSTS) to accept it.", r.Host))
			return
		}
		if g.hosts.crossSite(r) && !snsLink(r) && !consolePath(r) {
			g.api.Refuse(w, r, errForbidden.WithMessage(
				"Ferry does not serve requests a browser sends on behalf of another site; add the page's host with --allowed-hosts to accept them."))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// snsLink reports a GET of the links SNS hands out (SubscribeURL,
// UnsubscribeURL), which people open from a mail or a web page. Neither
// can be forged: the one carries its secret token, the other names a
// subscription by its ARN, and AWS serves both to anyone.
func snsLink(r *http.Request) bool {
	if r.Method != http.MethodGet || r.URL.Path != "/" {
		return false
	}
	switch r.URL.Query().Get("Action") {
	case "ConfirmSubscription", "Unsubscribe":
		return true
	}
	return false
}

// consolePath reports a request for the console, which checks that its
// requests come from its own pages itself (the Origin against the Host
// asked for): a console reached by an address, which crossSite does not
// count as Ferry's, still works.
func consolePath(r *http.Request) bool {
	return strings.HasPrefix(r.URL.Path, "/console/") || r.URL.Path == "/console"
}

// adminOnly lets a request reach an admin endpoint when no token is set
// and auth is off (a laptop, as before), or when it carries the token as
// "Authorization: Bearer <token>".
func (g *guard) adminOnly(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case g.adminToken == "" && !g.authOn:
			next.ServeHTTP(w, r)
		case g.adminToken == "":
			http.Error(w, "This endpoint is closed while requests are verified and no admin token is set (--admin-token, FERRY_ADMIN_TOKEN).", http.StatusForbidden)
		case !bearer(r, g.adminToken):
			w.Header().Set("WWW-Authenticate", `Bearer realm="ferry"`)
			http.Error(w, "This endpoint needs Ferry's admin token: Authorization: Bearer <token>.", http.StatusUnauthorized)
		default:
			next.ServeHTTP(w, r)
		}
	})
}

// bearer reports whether r carries token, compared in constant time.
func bearer(r *http.Request, token string) bool {
	scheme, got, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(strings.TrimSpace(got)), []byte(token)) == 1
}

// hostSet is the Host names Ferry accepts.
//
// A Host that is an address is always accepted: DNS rebinding needs a
// name whose answers the attacker controls, and a client reaching Ferry
// through a port mapping (a container's) sends an address Ferry cannot
// know. Names are accepted when configured; by default those that only
// ever resolve to this machine or are this machine's.
type hostSet struct {
	any      bool // "*": the check is off
	names    map[string]bool
	suffixes []string // ".localhost": any name ending so
}

// defaultHosts are names accepted without configuration: localhost and
// its subdomains (RFC 6761 keeps them on the loopback), the names
// LocalStack's clients use (localhost.localstack.cloud and its
// subdomains, such as sqs.us-east-1.localhost.localstack.cloud, resolve
// to 127.0.0.1 in public DNS), and Docker's name for the host, which only
// Docker's resolver answers.
var defaultHosts = []string{"localhost", "*.localhost", "localhost.localstack.cloud", "*.localhost.localstack.cloud", "host.docker.internal"}

// newHostSet accepts the defaults, the hosts of the addresses and URLs
// Ferry is configured with, this machine's name, and extra, where "*"
// turns the check off and "*.example.com" accepts the subdomains of
// example.com.
func newHostSet(extra []string, addrs ...string) (hostSet, error) {
	h := hostSet{names: map[string]bool{}}
	add := func(name string) {
		name = canonicalHost(name)
		switch {
		case name == "":
		case name == "*":
			h.any = true
		case strings.HasPrefix(name, "*."):
			h.suffixes = append(h.suffixes, name[1:])
		default:
			h.names[name] = true
		}
	}
	for _, n := range defaultHosts {
		add(n)
	}
	if name, err := os.Hostname(); err == nil {
		add(name)
		if short, _, ok := strings.Cut(name, "."); ok {
			add(short)
		}
	}
	for _, a := range addrs {
		if a == "" {
			continue
		}
		if u, err := url.Parse(a); err == nil && u.Scheme != "" && u.Host != "" {
			add(u.Hostname())
			continue
		}
		host, _, err := net.SplitHostPort(a)
		if err != nil {
			host = a
		}
		add(host)
	}
	for _, e := range extra {
		e = strings.TrimSpace(e)
		if strings.ContainsAny(e, "/ ") || strings.Contains(e[min(1, len(e)):], "*") ||
			(strings.HasPrefix(e, "*") && e != "*" && !strings.HasPrefix(e, "*.")) {
			return hostSet{}, fmt.Errorf("allowed host %q: want a host name, an address, *.domain or *", e)
		}
		add(e)
	}
	return h, nil
}

// canonicalHost is a host name without brackets, case or trailing dot.
func canonicalHost(h string) string {
	return strings.TrimSuffix(strings.ToLower(strings.Trim(h, "[]")), ".")
}

// hostOf is the name in a Host header, without its port.
func hostOf(hostport string) string {
	if host, _, err := net.SplitHostPort(hostport); err == nil {
		return canonicalHost(host)
	}
	return canonicalHost(hostport)
}

// named reports whether host is one of the names (or under one of the
// domains) the set holds.
func (h hostSet) named(host string) bool {
	if h.names[host] {
		return true
	}
	for _, s := range h.suffixes {
		if strings.HasSuffix(host, s) {
			return true
		}
	}
	return false
}

// allowsHost reports whether a request's Host header names this Ferry.
// A request without one (HTTP/1.0) is no browser's.
func (h hostSet) allowsHost(hostport string) bool {
	host := hostOf(hostport)
	if h.any || host == "" || h.named(host) {
		return true
	}
	_, err := netip.ParseAddr(host)
	return err == nil
}

// crossSite reports whether a browser sent r for a page of another site.
// Browsers name the page's origin (Origin) on every request but a GET
// navigation, which modern ones mark with Sec-Fetch-Site; the SDKs and the
// AWS CLI send neither. An origin is this Ferry's when its host is a name
// the set holds or a loopback address: a public address can serve anyone's
// page, so "*" and addresses do not count here.
func (h hostSet) crossSite(r *http.Request) bool {
	if origin := r.Header.Get("Origin"); origin != "" {
		u, err := url.Parse(origin)
		if err != nil || u.Host == "" { // "null": a sandboxed or file page
			return true
		}
		host := canonicalHost(u.Hostname())
		if a, err := netip.ParseAddr(host); err == nil && a.IsLoopback() {
			return false
		}
		return !h.named(host)
	}
	return r.Header.Get("Sec-Fetch-Site") == "cross-site"
}
