package protocol

import (
	"errors"
	"fmt"
	"net/http"
)

// Error is an AWS error as both wires render it.
type Error struct {
	// Shape is the modeled error shape ("QueueDoesNotExist"); JSON sends it
	// as __type, prefixed by the service's namespace unless Type is set.
	Shape string
	// Type, when set, is the full JSON __type (for unmodeled errors such as
	// "com.amazon.coral.service#InvalidParameterValueException").
	Type string
	// Code is the query / legacy code ("AWS.SimpleQueueService.NonExistentQueue"),
	// sent in x-amzn-query-error and in the XML <Code>.
	Code    string
	Status  int
	Message string
	// Receiver marks a server fault; most errors are the sender's.
	Receiver bool
	// QueryMessage, when set, replaces Message in query responses (SQS words
	// a few messages differently per protocol).
	QueryMessage string
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

// Fault is "Sender" or "Receiver".
func (e *Error) Fault() string {
	if e.Receiver {
		return "Receiver"
	}
	return "Sender"
}

// WithMessage returns a copy of e with a formatted message.
func (e *Error) WithMessage(format string, args ...any) *Error {
	c := *e
	c.Message = fmt.Sprintf(format, args...)
	c.QueryMessage = ""
	return &c
}

// AsError finds the *Error in err's chain, or wraps an unexpected error as
// an internal failure (the cause is for the log, never the client).
func AsError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return &Error{Shape: "InternalFailure", Type: "com.amazon.coral.service#InternalFailure", Code: "InternalFailure",
		Status: http.StatusInternalServerError, Message: "We encountered an internal error. Please try again.", Receiver: true}
}

// Errors the protocol layer itself raises, before any action runs.
var (
	ErrInvalidAction = &Error{Shape: "InvalidAction", Type: "com.amazon.coral.service#InvalidActionException", Code: "InvalidAction", Status: http.StatusBadRequest,
		Message: "The action or operation requested is invalid. Verify that the action is typed correctly."}
	ErrMissingAction = &Error{Shape: "MissingAction", Type: "com.amazon.coral.service#MissingAction", Code: "MissingAction", Status: http.StatusBadRequest,
		Message: "The request must contain the parameter Action."}
	ErrSerialization = &Error{Shape: "SerializationException", Type: "com.amazon.coral.service#SerializationException", Code: "SerializationException", Status: http.StatusBadRequest,
		Message: "Start of structure or map found where not expected."}
	ErrMalformedQueryString = &Error{Shape: "MalformedQueryString", Type: "com.amazon.coral.service#MalformedQueryString", Code: "MalformedQueryString", Status: http.StatusBadRequest,
		Message: "The query string is malformed."}
	ErrInvalidParameterValue = &Error{Shape: "InvalidParameterValue", Type: "com.amazon.coral.service#InvalidParameterValueException", Code: "InvalidParameterValue", Status: http.StatusBadRequest}
	ErrMissingParameter      = &Error{Shape: "MissingParameter", Type: "com.amazon.coral.service#MissingRequiredParameterException", Code: "MissingParameter", Status: http.StatusBadRequest}
	// ErrUnknownOperation answers a JSON request whose X-Amz-Target names no
	// known operation; AWS sends it as a 400 without a message.
	ErrUnknownOperation = &Error{Shape: "UnknownOperationException", Type: "com.amazon.coral.service#UnknownOperationException", Code: "UnknownOperationException", Status: http.StatusBadRequest}
	ErrRequestTooLarge  = &Error{Shape: "RequestEntityTooLarge", Type: "com.amazon.coral.service#RequestEntityTooLargeException", Code: "RequestEntityTooLarge", Status: http.StatusRequestEntityTooLarge,
		Message: "The request body is larger than this endpoint accepts."}
	// ErrRequestTimeout answers a request whose body did not arrive within
	// the server's read timeout. SQS models no such error; this is S3's
	// (400 RequestTimeout), a code every AWS SDK retries.
	ErrRequestTimeout = &Error{Shape: "RequestTimeout", Type: "com.amazon.coral.service#RequestTimeoutException", Code: "RequestTimeout", Status: http.StatusBadRequest,
		Message: "Your socket connection to the server was not read from or written to within the timeout period."}
	// ErrServiceUnavailable is AWS's answer for a temporary failure on the
	// server's side (HTTP 503, retried by every SDK with backoff): Ferry
	// gives it to a connection over its cap and to writes while its store
	// refuses them because the disk is full.
	ErrServiceUnavailable = &Error{Shape: "ServiceUnavailable", Type: "com.amazon.coral.service#ServiceUnavailableException", Code: "ServiceUnavailable", Status: http.StatusServiceUnavailable,
		Receiver: true, Message: "The request has failed due to a temporary failure of the server."}
	ErrMethodNotAllowed = &Error{Shape: "MethodNotAllowed", Type: "com.amazon.coral.service#MethodNotAllowedException", Code: "MethodNotAllowed", Status: http.StatusMethodNotAllowed,
		Message: "The requested method is not allowed; use POST (or GET for the query protocol)."}
)

// queryCode is the code the query wire and x-amzn-query-error carry.
func (e *Error) queryCode() string {
	if e.Code != "" {
		return e.Code
	}
	return e.Shape
}

// jsonType is the JSON __type: Type, else the shape in the service's
// namespace.
func (e *Error) jsonType(namespace string) string {
	switch {
	case e.Type != "":
		return e.Type
	case e.Shape == "":
		return e.Code
	case namespace != "":
		return namespace + "#" + e.Shape
	}
	return e.Shape
}

// status is the HTTP status, defaulting by fault when unset.
func (e *Error) status() int {
	switch {
	case e.Status != 0:
		return e.Status
	case e.Receiver:
		return http.StatusInternalServerError
	}
	return http.StatusBadRequest
}
