package protocol

import (
	"bytes"
	"fmt"
	"mime"
	"net/http"
	"reflect"
	"strings"
)

// Smithy RPC v2 CBOR (smithy.protocols#rpcv2Cbor): POST
// /service/{ServiceName}/operation/{OperationName} with the header
// smithy-protocol: rpc-v2-cbor and a CBOR map of the input members; the
// answer carries the same header and a CBOR map of the output members, or
// of __type and message with the error's HTTP status.

const (
	cborContentType  = "application/cbor"
	smithyProtocol   = "Smithy-Protocol"
	rpcv2CBOR        = "rpc-v2-cbor"
	rpcv2ServiceSeg  = "service"
	rpcv2OperatorSeg = "operation"
)

// Errors only the RPC v2 wire raises, with the codes Smithy's servers use.
var (
	// ErrRPCv2UnknownOperation answers a path that names no known service
	// or operation: a 404, as Smithy routers answer it.
	ErrRPCv2UnknownOperation = &Error{Shape: "UnknownOperationException", Type: "com.amazon.coral.service#UnknownOperationException",
		Code: "UnknownOperationException", Status: http.StatusNotFound}
	ErrUnsupportedMediaType = &Error{Shape: "UnsupportedMediaTypeException", Type: "com.amazon.coral.service#UnsupportedMediaTypeException",
		Code: "UnsupportedMediaTypeException", Status: http.StatusUnsupportedMediaType,
		Message: "The request body must be sent with Content-Type: application/cbor."}
	ErrNotAcceptable = &Error{Shape: "NotAcceptableException", Type: "com.amazon.coral.service#NotAcceptableException",
		Code: "NotAcceptableException", Status: http.StatusNotAcceptable,
		Message: "The response can only be application/cbor."}
)

// rpcv2Route reports whether r speaks RPC v2 CBOR, with the service and
// operation its path names (empty when the path does not parse). The
// smithy-protocol header decides; without it, a CBOR body posted to a
// /service/{S}/operation/{O} path does too. The path may carry a prefix
// (an endpoint with a path), so the names are its last four segments.
func rpcv2Route(r *http.Request) (service, op string, ok bool) {
	service, op, pathOK := rpcv2Path(r.URL.Path)
	if strings.EqualFold(strings.TrimSpace(r.Header.Get(smithyProtocol)), rpcv2CBOR) {
		return service, op, true
	}
	if pathOK && r.Header.Get("X-Amz-Target") == "" && isCBORContentType(r.Header.Get("Content-Type")) {
		return service, op, true
	}
	return "", "", false
}

func rpcv2Path(p string) (service, op string, ok bool) {
	p = strings.TrimSuffix(p, "/")
	rest, op, _ := cutLast(p, "/")
	rest, seg, _ := cutLast(rest, "/")
	if seg != rpcv2OperatorSeg {
		return "", "", false
	}
	rest, service, _ = cutLast(rest, "/")
	_, seg, _ = cutLast(rest, "/")
	if seg != rpcv2ServiceSeg || service == "" || op == "" {
		return "", "", false
	}
	return service, op, true
}

func isCBORContentType(ct string) bool {
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && mt == cborContentType
}

// acceptsCBOR reports whether an Accept header allows a CBOR answer.
func acceptsCBOR(accept string) bool {
	if strings.TrimSpace(accept) == "" {
		return true
	}
	for part := range strings.SplitSeq(accept, ",") {
		mt, _, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil {
			continue
		}
		if mt == cborContentType || mt == "application/*" || mt == "*/*" {
			return true
		}
	}
	return false
}

func (h *Handler) serveRPCv2(r *http.Request, c *call, service, op string, body []byte) {
	a, ok := h.lookupAction(c, func(s *Service) string { return s.RPCv2ServiceName }, service, op)
	if err := h.identify(r, c, ok && a.Unsigned); err != nil {
		h.fail(c, err)
		return
	}
	if !ok {
		h.fail(c, ErrRPCv2UnknownOperation)
		return
	}
	if len(body) > 0 && !isCBORContentType(r.Header.Get("Content-Type")) {
		h.fail(c, ErrUnsupportedMediaType)
		return
	}
	if !acceptsCBOR(r.Header.Get("Accept")) {
		h.fail(c, ErrNotAcceptable)
		return
	}
	inPlan, err := h.plans.plan(a.InputType)
	if err != nil {
		h.fail(c, err)
		return
	}
	in := reflect.New(a.InputType)
	if err := decodeCBOR(inPlan, body, in.Elem()); err != nil {
		h.fail(c, err)
		return
	}
	out, err := a.Handle(c, in.Interface())
	if err != nil {
		h.fail(c, err)
		return
	}
	outType, ov, err := outputValue(a, out)
	if err != nil {
		h.fail(c, err)
		return
	}
	outPlan, err := h.plans.plan(outType)
	if err != nil {
		h.fail(c, err)
		return
	}
	encodeCBOR(c.body, outPlan, ov)
	c.status, c.contentType = http.StatusOK, cborContentType
}

// outputValue is an action's output as a struct value, invalid when the
// action returned a nil pointer, with its type.
func outputValue(a Action, out any) (reflect.Type, reflect.Value, error) {
	if out == nil {
		return a.OutputType, reflect.Value{}, nil
	}
	ov := reflect.ValueOf(out)
	if ov.Kind() != reflect.Pointer || ov.Type().Elem().Kind() != reflect.Struct {
		return nil, reflect.Value{}, fmt.Errorf("action %s returned %T, not a pointer to a struct", a.Name, out)
	}
	return ov.Type().Elem(), ov.Elem(), nil
}

// encodeCBORError writes an RPC v2 error body: the error's shape id as
// __type (Smithy's clients look the shape up by it) and its message.
func encodeCBORError(b *bytes.Buffer, svc *Service, e *Error) {
	ns := ""
	if svc != nil {
		ns = svc.ShapeNamespace
	}
	enc := cborEncoder{b: b.AvailableBuffer()}
	n := uint64(1)
	if e.Message != "" {
		n = 2
	}
	enc.head(cborMap, n)
	enc.text("__type")
	enc.text(e.jsonType(ns))
	if e.Message != "" {
		enc.text("message")
		enc.text(e.Message)
	}
	b.Write(enc.b)
}
