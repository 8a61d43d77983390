// Package protocol holds Ferry's wire formats: AWS JSON 1.0, the AWS query
// protocol (form in, XML out), Smithy RPC v2 CBOR, their error envelopes
// and request ids. It knows nothing of queues: an Action describes an
// operation by its Go input and output types, whose struct tags name each
// member on every wire, and one handler serves all three protocols.
//
// Struct tags:
//
//	json:"Name,omitempty"   the member's JSON and CBOR name (encoding/json rules)
//	query:"Name"            the member's query / XML name
//	query:"Name,flat"       list or map flattened (SQS): Name.N[.key|.value]
//	query:"Name,wrapped"    list as Name.member.N, map as Name.entry.N (SNS)
//	query:"Name,flat,key=Key,value=Value"
//	                        a map's entry member names (default Name/Value)
//
// Member types: string, bool, int8 to int64, float32 and float64 (Smithy's
// double), time.Time (timestamp), []byte (blob), structs, pointers to any of
// these (optional members: nil is absent), lists of them and maps with
// string keys. Timestamps travel as epoch seconds on JSON and CBOR (tag 1)
// and as ISO 8601 on the query wire; doubles as numbers, with NaN and
// ±Infinity as AWS JSON's strings, and as Java writes them in XML (1.0,
// 1.0E-5). A type with a timestamp or double anywhere is read and written
// along its plan on the JSON wire rather than by encoding/json.
package protocol

import (
	"context"
	"reflect"
)

// Action is one operation of a service.
type Action struct {
	Name string
	// InputType and OutputType are the struct types (not pointers).
	InputType  reflect.Type
	OutputType reflect.Type
	// Handle takes a pointer to an InputType value and returns a pointer to
	// an OutputType value, or an error (an *Error to choose the AWS error).
	Handle func(ctx context.Context, in any) (any, error)
	// Unsigned lets a request without any signature run the action when
	// signatures are verified, as AWS serves SNS's SubscribeURL and
	// UnsubscribeURL links. A signature it does carry is still checked.
	Unsigned bool
}

// Define describes an action from a typed handler.
func Define[I, O any](name string, h func(context.Context, *I) (*O, error)) Action {
	return Action{
		Name:       name,
		InputType:  reflect.TypeFor[I](),
		OutputType: reflect.TypeFor[O](),
		Handle: func(ctx context.Context, in any) (any, error) {
			out, err := h(ctx, in.(*I))
			if err != nil {
				return nil, err
			}
			return out, nil
		},
	}
}

// NewInput returns a pointer to a zero input value.
func (a Action) NewInput() any { return reflect.New(a.InputType).Interface() }

// Service is a set of actions with what each wire needs to know of it.
type Service struct {
	// JSONTargetPrefix is the X-Amz-Target prefix ("AmazonSQS"); empty for
	// a query-only service.
	JSONTargetPrefix string
	// RPCv2ServiceName is the service's name in Smithy RPC v2 CBOR paths
	// (/service/{name}/operation/{action}); empty for a service that does
	// not speak it.
	RPCv2ServiceName string
	// ShapeNamespace prefixes JSON and CBOR error __type values
	// ("com.amazonaws.sqs").
	ShapeNamespace string
	// Version is the query protocol API version ("2012-11-05").
	Version string
	// XMLNamespace is the query responses' xmlns.
	XMLNamespace string
	// EmptyResult: query responses of actions without output members still
	// carry an empty <ActionResult/> (SNS), rather than none (SQS).
	EmptyResult bool
	// OmitErrorDetail leaves the empty <Detail/> out of query error
	// responses (SNS); SQS sends it.
	OmitErrorDetail bool
	// SigningName is the SigV4 service name ("sqs", "sns"). It picks the
	// service for a query request without Version whose action two
	// services share (AddPermission).
	SigningName string
	// InvalidCharacters answers a JSON request that escapes a lone
	// surrogate (see checkJSONText); nil leaves it a SerializationException.
	InvalidCharacters *Error
	Actions           map[string]Action
}
