package protocol

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"reflect"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/ferrymq/ferry/internal/sigv4"
)

// DefaultMaxBodyBytes bounds a request body when Handler.MaxBodyBytes is 0.
// The largest legal SQS request (a 1 MiB batch, escaped or form-encoded)
// stays well under it.
const DefaultMaxBodyBytes = 8 << 20

// Handler serves every Service on any path: Smithy RPC v2 CBOR when the
// request says so (see rpcv2Route), AWS JSON 1.0 when X-Amz-Target names a
// service's JSON prefix, the query protocol (form or URL parameters, XML
// answers) otherwise. Use it by pointer; it must not be copied after first
// use.
type Handler struct {
	Services []*Service
	Logger   *slog.Logger
	// MaxBodyBytes bounds request bodies; 0 means DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// Observe, when set, is called once per request once it is answered:
	// the service's SigningName and the action's name ("" when not found),
	// the HTTP status and the time taken.
	Observe func(service, action string, status int, took time.Duration)
	// Auth decides each request's identity and account.
	Auth Auth

	plans  planCache
	jplans jsonPlans
	ids    requestIDs
	bufs   sync.Pool
}

// Check builds the codec of every action's input and output, so that a
// tag mistake shows at start-up rather than as a 500 on first use.
func (h *Handler) Check() error {
	var errs []error
	for _, s := range h.Services {
		for name, a := range s.Actions {
			if a.Name != name {
				errs = append(errs, fmt.Errorf("protocol: action registered as %q is named %q", name, a.Name))
			}
			for _, t := range []reflect.Type{a.InputType, a.OutputType} {
				if err := h.checkType(t); err != nil {
					errs = append(errs, fmt.Errorf("protocol: action %s: %w", name, err))
				}
			}
		}
	}
	return errors.Join(errs...)
}

func (h *Handler) checkType(t reflect.Type) error {
	if t == nil || t.Kind() != reflect.Struct {
		return fmt.Errorf("type %v is not a struct", t)
	}
	// The plans are built now rather than on the first request.
	c, err := h.plans.plan(t)
	if err != nil {
		return err
	}
	if smithyJSON(c) == nil {
		h.jplans.plan(t)
	}
	return nil
}

// call is one request on its way through the handler. It is also the
// context the action runs in (the request's, carrying info), so that a
// request costs one allocation for all three.
type call struct {
	context.Context
	info   RequestInfo
	svc    *Service // the service answering, once known
	action string   // the action's name, once known
	json   bool
	cbor   bool   // RPC v2 CBOR
	scope  string // the SigV4 credential scope's service name
	raw    []byte // the body as sent, which a signature covers

	status      int
	contentType string
	queryError  string // x-amzn-query-error, JSON errors only
	body        *bytes.Buffer

	// id backs info.RequestID, clen the Content-Length, and hdr the
	// response's header values, which net/http copies when the header is
	// written.
	id   [requestIDLen]byte
	clen [20]byte
	hdr  [4]string
}

// contentLength formats the body's length into c.clen: strconv.Itoa would
// allocate for any length over 99.
func (c *call) contentLength() string {
	b := strconv.AppendInt(c.clen[:0], int64(c.body.Len()), 10)
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// Value answers info for infoKey, as WithInfo would, and defers the rest
// to the request's context.
func (c *call) Value(key any) any {
	if _, ok := key.(infoKey); ok {
		return &c.info
	}
	return c.Context.Value(key)
}

// header sets key, which must be canonical, to v without allocating a
// slice or canonicalising: the value's backing array is c.hdr[i].
func (c *call) header(h http.Header, i int, key, v string) {
	c.hdr[i] = v
	h[key] = c.hdr[i : i+1 : i+1]
}

// ServeHTTP answers one request in the protocol it came in. The response is
// built whole before anything is written, so a failure at any point still
// yields a well-formed AWS error.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.answer(w, r, nil)
}

// Refuse answers r with e, in the protocol r speaks, without reading its
// body or running an action.
func (h *Handler) Refuse(w http.ResponseWriter, r *http.Request, e *Error) {
	h.answer(w, r, e)
}

// answer serves r, or refuses it with refusal when that is set.
func (h *Handler) answer(w http.ResponseWriter, r *http.Request, refusal *Error) {
	var began time.Time
	if h.Observe != nil {
		began = time.Now()
	}
	c := &call{Context: r.Context(), info: RequestInfo{Host: r.Host, Path: r.URL.Path, TLS: r.TLS != nil, SourceIP: remoteIP(r.RemoteAddr),
		UserAgent: r.UserAgent()}, body: h.buffer()}
	c.info.RequestID = h.ids.format(&c.id)
	defer h.release(c.body)
	if refusal != nil {
		h.detect(r, c)
		h.fail(c, refusal)
	} else {
		h.serve(r, c)
	}
	if c.status == 0 {
		h.fail(c, errors.New("no response was produced"))
	}

	// Keys are written canonical, as Header.Set would make them, which
	// spares the canonicalisation on every response.
	hdr := w.Header()
	c.header(hdr, 0, "X-Amzn-Requestid", c.info.RequestID)
	c.header(hdr, 1, "Content-Type", c.contentType)
	c.header(hdr, 2, "Content-Length", c.contentLength())
	if c.queryError != "" {
		c.header(hdr, 3, "X-Amzn-Query-Error", c.queryError)
	}
	if c.cbor {
		hdr.Set(smithyProtocol, rpcv2CBOR)
	}
	if c.status == http.StatusMethodNotAllowed {
		hdr["Allow"] = []string{"GET, POST"}
	}
	w.WriteHeader(c.status)
	if r.Method != http.MethodHead {
		_, _ = w.Write(c.body.Bytes())
	}
	if h.Observe != nil {
		svc := ""
		if c.svc != nil {
			svc = c.svc.SigningName
		}
		h.Observe(svc, c.action, c.status, time.Since(began))
	}
}

// serve fills c's response. A panic below it becomes a 500 for this request
// only (http.ErrAbortHandler, which asks to abort, is passed on).
func (h *Handler) serve(r *http.Request, c *call) {
	defer func() {
		if p := recover(); p != nil {
			if p == http.ErrAbortHandler {
				panic(p)
			}
			h.fail(c, fmt.Errorf("panic: %v\n%s", p, debug.Stack()))
		}
	}()

	rpcService, rpcOp, target := h.detect(r, c)
	if r.Method != http.MethodPost && (r.Method != http.MethodGet || c.json || c.cbor) {
		h.fail(c, ErrMethodNotAllowed)
		return
	}
	in := h.buffer()
	defer h.release(in)
	raw, err := h.readBody(r, in)
	if err != nil {
		h.fail(c, err)
		return
	}
	// The signature covers the body as sent, compressed or not.
	c.raw = raw
	body, err := h.decodeContentEncoding(r, raw, h.maxBody())
	if err != nil {
		h.fail(c, err)
		return
	}
	switch {
	case c.cbor:
		h.serveRPCv2(r, c, rpcService, rpcOp, body)
	case c.json:
		h.serveJSON(r, c, target, body)
	default:
		h.serveQuery(r, c, body)
	}
}

// detect finds the protocol and credentials of r for c, and returns the
// RPC v2 route and the JSON target, which name the action.
func (h *Handler) detect(r *http.Request, c *call) (rpcService, rpcOp, target string) {
	rpcService, rpcOp, rpc := rpcv2Route(r)
	target = r.Header.Get("X-Amz-Target")
	c.cbor = rpc
	c.json = !rpc && (target != "" || hasPrefixFold(r.Header.Get("Content-Type"), "application/x-amz-json"))
	switch {
	case c.cbor:
		c.info.Protocol = "rpcv2-cbor"
	case c.json:
		c.info.Protocol = "json"
	default:
		c.info.Protocol = "query"
	}
	if scope, ok := sigv4.HeaderScope(r.Header.Get("Authorization")); ok {
		c.info.AccessKey, c.info.Region, c.scope = scope.AccessKey, scope.Region, scope.Service
	}
	return rpcService, rpcOp, target
}

// bodyChunk is the most readBody reserves for a body before its bytes
// arrive: a client that announces a large Content-Length and then sends
// slowly holds no more memory than it has sent (and this).
const bodyChunk = 16 << 10

// readBody reads the body, as sent (its Content-Encoding still applied),
// into buf's storage, refusing more than the limit. The storage grows as bytes arrive, at most doubling, and never
// beyond the announced length + 1 (the room to see the end) or the limit +
// 1. The decoders copy what they keep, so buf can go back to the pool.
func (h *Handler) readBody(r *http.Request, buf *bytes.Buffer) ([]byte, error) {
	limit := h.maxBody()
	if r.ContentLength > limit {
		return nil, ErrRequestTooLarge
	}
	if r.Body == nil || r.Body == http.NoBody {
		return nil, nil
	}
	bound := limit + 1 // chunked, or no length given: one byte over shows it
	if r.ContentLength > 0 {
		bound = r.ContentLength + 1
	}
	body, err := readUpTo(buf.AvailableBuffer(), r.Body, int(bound))
	if cap(body) > buf.Cap() {
		*buf = *bytes.NewBuffer(body) // the grown storage goes to the pool
	}
	if err != nil {
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return nil, ErrRequestTimeout
		}
		return nil, ErrSerialization.WithMessage("The request body could not be read.")
	}
	if int64(len(body)) > limit {
		return nil, ErrRequestTooLarge
	}
	return body, nil
}

// maxBody is the most bytes a request body may have.
func (h *Handler) maxBody() int64 {
	if h.MaxBodyBytes > 0 {
		return h.MaxBodyBytes
	}
	return DefaultMaxBodyBytes
}

// readUpTo appends r's bytes to b until r ends or b holds bound bytes,
// growing b as they arrive. bytes.Buffer.ReadFrom would do, but for its
// growth, which overshoots bound by up to twice.
func readUpTo(b []byte, r io.Reader, bound int) ([]byte, error) {
	for len(b) < bound {
		if len(b) == cap(b) {
			grown := make([]byte, len(b), min(max(2*cap(b), bodyChunk), bound))
			copy(grown, b)
			b = grown
		}
		n, err := r.Read(b[len(b):min(cap(b), bound)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
	}
	return b, nil
}

// lookupAction finds the service whose id (the JSON target prefix or the
// RPC v2 service name, as id reads it) is service, and its action op. It
// sets c.svc when the service is known, so that errors take its shape,
// and c.action when the action is.
func (h *Handler) lookupAction(c *call, id func(*Service) string, service, op string) (Action, bool) {
	for _, s := range h.Services {
		if sid := id(s); sid != "" && sid == service {
			c.svc = s
			a, ok := s.Actions[op]
			if ok {
				c.action = a.Name
			}
			return a, ok
		}
	}
	return Action{}, false
}

func (h *Handler) serveJSON(r *http.Request, c *call, target string, body []byte) {
	prefix, name, _ := cutLast(target, ".")
	a, ok := h.lookupAction(c, func(s *Service) string { return s.JSONTargetPrefix }, prefix, name)
	if err := h.identify(r, c, ok && a.Unsigned); err != nil {
		h.fail(c, err)
		return
	}
	if !ok {
		h.fail(c, ErrUnknownOperation)
		return
	}
	in := a.NewInput()
	if err := h.decodeJSONInput(a.InputType, body, in); err != nil {
		if ls := (*loneSurrogateError)(nil); errors.As(err, &ls) && c.svc.InvalidCharacters != nil {
			err = c.svc.InvalidCharacters
		}
		h.fail(c, err)
		return
	}
	out, err := a.Handle(c, in)
	if err != nil {
		h.fail(c, err)
		return
	}
	if err := h.encodeJSONOutput(c.body, a, out); err != nil {
		c.body.Reset()
		h.fail(c, fmt.Errorf("encode %s output: %w", c.action, err))
		return
	}
	c.status, c.contentType = http.StatusOK, jsonContentType
}

func (h *Handler) serveQuery(r *http.Request, c *call, body []byte) {
	vals, err := queryParams(r.URL.RawQuery, body)
	if err != nil {
		c.svc = h.defaultQueryService()
		h.fail(c, err)
		return
	}
	if c.info.AccessKey == "" {
		if scope, ok := sigv4.ParseScope(vals.Get("X-Amz-Credential")); ok {
			c.info.AccessKey, c.info.Region, c.scope = scope.AccessKey, scope.Region, scope.Service
		} else {
			c.info.AccessKey = vals.Get("AWSAccessKeyId")
		}
	}
	name := vals.Get("Action")
	var a Action
	var found bool
	c.svc, a, found = h.queryService(name, vals.Get("Version"), c.scope)
	if err := h.identify(r, c, found && a.Unsigned); err != nil {
		h.fail(c, err)
		return
	}
	switch {
	case name == "":
		h.fail(c, ErrMissingAction)
		return
	case !found:
		h.fail(c, ErrInvalidAction.WithMessage("The action %s is not valid for this web service.", name))
		return
	}
	c.action = a.Name
	inPlan, err := h.plans.plan(a.InputType)
	if err != nil {
		h.fail(c, err)
		return
	}
	in := reflect.New(a.InputType)
	if err := decodeQuery(inPlan, vals, in.Elem()); err != nil {
		h.fail(c, err)
		return
	}
	out, err := a.Handle(c, in.Interface())
	if err != nil {
		h.fail(c, err)
		return
	}
	ov := reflect.ValueOf(out)
	outType := a.OutputType
	if out != nil {
		if ov.Kind() != reflect.Pointer || ov.Type().Elem().Kind() != reflect.Struct {
			h.fail(c, fmt.Errorf("action %s returned %T, not a pointer to a struct", c.action, out))
			return
		}
		outType = ov.Type().Elem()
		ov = ov.Elem() // invalid when the pointer is nil
	}
	outPlan, err := h.plans.plan(outType)
	if err != nil {
		h.fail(c, err)
		return
	}
	encodeXMLResponse(c.body, c.svc, c.action, outPlan, ov, c.info.RequestID)
	c.status, c.contentType = http.StatusOK, "text/xml"
}

// queryParams merges the URL query and a form body. The body's value comes
// first, so it wins where both name a parameter.
func queryParams(rawQuery string, body []byte) (url.Values, error) {
	vals, err := url.ParseQuery(string(body))
	if err != nil {
		return nil, ErrMalformedQueryString.WithMessage("The request body is not a valid form: %v.", err)
	}
	if rawQuery != "" {
		q, err := url.ParseQuery(rawQuery)
		if err != nil {
			return nil, ErrMalformedQueryString.WithMessage("The query string is not valid: %v.", err)
		}
		for k, vs := range q {
			vals[k] = append(vals[k], vs...)
		}
	}
	return vals, nil
}

// queryService picks the service for a query request: the one whose
// Version matches and has the action, else the one whose SigV4 service
// name matches the credential scope, else the first with the action. When
// none has it, the returned service (for the error's namespace) is the one
// the Version names, or the default.
func (h *Handler) queryService(action, version, scope string) (*Service, Action, bool) {
	var byVersion *Service
	for _, s := range h.Services {
		if version != "" && s.Version == version {
			if a, ok := s.Actions[action]; ok {
				return s, a, true
			}
			byVersion = s
		}
	}
	if byVersion != nil {
		return byVersion, Action{}, false
	}
	if scope != "" {
		for _, s := range h.Services {
			if s.SigningName == scope {
				if a, ok := s.Actions[action]; ok {
					return s, a, true
				}
			}
		}
	}
	for _, s := range h.Services {
		if a, ok := s.Actions[action]; ok {
			return s, a, true
		}
	}
	return h.defaultQueryService(), Action{}, false
}

// defaultQueryService answers query errors raised before a service is
// known: the first service that speaks the query protocol.
func (h *Handler) defaultQueryService() *Service {
	for _, s := range h.Services {
		if s.Version != "" {
			return s
		}
	}
	if len(h.Services) > 0 {
		return h.Services[0]
	}
	return nil
}

// fail renders err in the request's protocol. An error that is not an
// *Error is an internal failure: logged with its cause, which the client
// never sees.
func (h *Handler) fail(c *call, err error) {
	var e *Error
	if !errors.As(err, &e) {
		h.logger().ErrorContext(c, "request failed", "request_id", c.info.RequestID,
			"protocol", c.info.Protocol, "action", c.action, "err", err)
		e = AsError(err)
	}
	c.body.Reset()
	c.status = e.status()
	if c.cbor {
		c.contentType = cborContentType
		if code := e.queryCode(); code != "" {
			c.queryError = code + ";" + e.Fault()
		}
		encodeCBORError(c.body, c.svc, e)
		return
	}
	if c.json {
		c.contentType = jsonContentType
		if code := e.queryCode(); code != "" {
			c.queryError = code + ";" + e.Fault()
		}
		encodeJSONError(c.body, c.svc, e)
		return
	}
	if c.svc == nil {
		c.svc = h.defaultQueryService()
	}
	c.contentType = "text/xml"
	encodeXMLError(c.body, c.svc, e, c.info.RequestID)
}

func (h *Handler) logger() *slog.Logger {
	if h.Logger != nil {
		return h.Logger
	}
	return slog.New(slog.DiscardHandler)
}

// maxPooledBuffer keeps an occasional huge request or response from pinning
// memory: a larger buffer is left to the collector.
const maxPooledBuffer = 1 << 20

func (h *Handler) buffer() *bytes.Buffer {
	if b, ok := h.bufs.Get().(*bytes.Buffer); ok {
		b.Reset()
		return b
	}
	return new(bytes.Buffer)
}

func (h *Handler) release(b *bytes.Buffer) {
	if b.Cap() <= maxPooledBuffer {
		h.bufs.Put(b)
	}
}

// hasPrefixFold is strings.HasPrefix ignoring case, without the copy
// strings.ToLower makes of a string with capitals.
func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}

// cutLast splits s around the last sep.
func cutLast(s, sep string) (before, after string, found bool) {
	if i := strings.LastIndex(s, sep); i >= 0 {
		return s[:i], s[i+len(sep):], true
	}
	return "", s, false
}
