package cloudwatch

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/ferrymq/ferry/internal/protocol"
)

// The CloudWatch error catalogue: Shape is the model's error shape, Code
// the query code (the model's awsQueryError code) CloudWatch sends in
// <Code>.
var (
	errResourceNotFound = &protocol.Error{Shape: "ResourceNotFound", Code: "ResourceNotFound", Status: http.StatusNotFound}
	// errTagResourceNotFound is the tagging actions' not-found shape.
	errTagResourceNotFound = &protocol.Error{Shape: "ResourceNotFoundException", Code: "ResourceNotFoundException", Status: http.StatusNotFound}
	errInvalidNextToken    = &protocol.Error{Shape: "InvalidNextToken", Code: "InvalidNextToken", Status: http.StatusBadRequest,
		Message: "The service returned an invalid or expired NextToken."}
	errInvalidParameterValue       = &protocol.Error{Shape: "InvalidParameterValueException", Code: "InvalidParameterValue", Status: http.StatusBadRequest}
	errInvalidParameterCombination = &protocol.Error{Shape: "InvalidParameterCombinationException", Code: "InvalidParameterCombination", Status: http.StatusBadRequest}
	errMissingParameter            = &protocol.Error{Shape: "MissingRequiredParameterException", Code: "MissingParameter", Status: http.StatusBadRequest}
	errLimitExceeded               = &protocol.Error{Shape: "LimitExceededFault", Code: "LimitExceeded", Status: http.StatusBadRequest}
	errInvalidFormat               = &protocol.Error{Shape: "InvalidFormatFault", Code: "InvalidFormat", Status: http.StatusBadRequest}
	// errValidation is the framework's constraint error (not in the model).
	errValidation = &protocol.Error{Shape: "ValidationError", Code: "ValidationError", Status: http.StatusBadRequest}
	errInternal   = &protocol.Error{Shape: "InternalServiceFault", Code: "InternalServiceError", Status: http.StatusInternalServerError,
		Receiver: true, Message: "Internal service error."}
)

func invalidValue(format string, args ...any) error {
	return errInvalidParameterValue.WithMessage(format, args...)
}

func invalidCombination(format string, args ...any) error {
	return errInvalidParameterCombination.WithMessage(format, args...)
}

func validation(format string, args ...any) error {
	return errValidation.WithMessage(format, args...)
}

// violations collects constraint failures and words them as AWS's request
// validation does: "2 validation errors detected: Value 'x' at 'field'
// failed to satisfy constraint: ...; Value ...". Fields are named in
// lowerCamelCase, list members as 'alarmActions.1.member'.
type violations []string

// add records that value (nil for an absent member) at field broke the
// constraint.
func (v *violations) add(value *string, field, constraint string) {
	shown := "null"
	if value != nil {
		shown = "'" + *value + "'"
	}
	*v = append(*v, fmt.Sprintf("Value %s at '%s' failed to satisfy constraint: %s", shown, field, constraint))
}

func (v *violations) required(present bool, field string) {
	if !present {
		v.add(nil, field, "Member must not be null")
	}
}

// length checks a string's length in characters against [lo, hi].
func (v *violations) length(s *string, field string, lo, hi int) {
	if s == nil {
		return
	}
	n := len([]rune(*s))
	switch {
	case n < lo:
		v.add(s, field, fmt.Sprintf("Member must have length greater than or equal to %d", lo))
	case n > hi:
		v.add(s, field, fmt.Sprintf("Member must have length less than or equal to %d", hi))
	}
}

func (v *violations) min(n *int32, field string, lo int32) {
	if n != nil && *n < lo {
		s := fmt.Sprint(*n)
		v.add(&s, field, fmt.Sprintf("Member must have value greater than or equal to %d", lo))
	}
}

func (v *violations) max(n *int32, field string, hi int32) {
	if n != nil && *n > hi {
		s := fmt.Sprint(*n)
		v.add(&s, field, fmt.Sprintf("Member must have value less than or equal to %d", hi))
	}
}

func (v *violations) enum(s string, field string, values []string) {
	if s == "" {
		return
	}
	for _, x := range values {
		if s == x {
			return
		}
	}
	v.add(&s, field, "Member must satisfy enum value set: ["+strings.Join(values, ", ")+"]")
}

// listMax checks a list's length; shown is the list as AWS prints it.
func (v *violations) listMax(n int, shown, field string, hi int) {
	if n > hi {
		v.add(&shown, field, fmt.Sprintf("Member must have length less than or equal to %d", hi))
	}
}

func (v violations) err() error {
	switch len(v) {
	case 0:
		return nil
	case 1:
		return validation("1 validation error detected: %s", v[0])
	}
	return validation("%d validation errors detected: %s", len(v), strings.Join(v, "; "))
}

func ptr[T any](v T) *T { return &v }
