package sns

import (
	"context"
	"errors"
	"net/http"

	"github.com/ferrymq/ferry/internal/engine"
	"github.com/ferrymq/ferry/internal/protocol"
)

// The SNS error catalogue. Shape is the model's exception name, Code the
// query code SNS sends in <Code>; SDKs map the code to their typed errors.
var (
	errAuthorization       = &protocol.Error{Shape: "AuthorizationErrorException", Code: "AuthorizationError", Status: http.StatusForbidden}
	errBatchIdsNotDistinct = &protocol.Error{Shape: "BatchEntryIdsNotDistinctException", Code: "BatchEntryIdsNotDistinct", Status: http.StatusBadRequest,
		Message: "Two or more batch entries in the request have the same Id."}
	errBatchTooLong = &protocol.Error{Shape: "BatchRequestTooLongException", Code: "BatchRequestTooLong", Status: http.StatusBadRequest,
		Message: "The length of all the messages put together is more than the limit."}
	// The wording of EmptyBatchRequest is not recorded from AWS.
	errEmptyBatch = &protocol.Error{Shape: "EmptyBatchRequestException", Code: "EmptyBatchRequest", Status: http.StatusBadRequest,
		Message: "The batch request doesn't contain any entries."}
	errEndpointDisabled = &protocol.Error{Shape: "EndpointDisabledException", Code: "EndpointDisabled", Status: http.StatusBadRequest,
		Message: "Endpoint is disabled"}
	errInternal = &protocol.Error{Shape: "InternalErrorException", Code: "InternalError", Status: http.StatusInternalServerError, Receiver: true,
		Message: "Internal Error"}
	errInvalidBatchEntryID = &protocol.Error{Shape: "InvalidBatchEntryIdException", Code: "InvalidBatchEntryId", Status: http.StatusBadRequest}
	errInvalidParameter    = &protocol.Error{Shape: "InvalidParameterException", Code: "InvalidParameter", Status: http.StatusBadRequest}
	errParameterValue      = &protocol.Error{Shape: "InvalidParameterValueException", Code: "ParameterValueInvalid", Status: http.StatusBadRequest}
	errNotFound            = &protocol.Error{Shape: "NotFoundException", Code: "NotFound", Status: http.StatusNotFound}
	errResourceNotFound    = &protocol.Error{Shape: "ResourceNotFoundException", Code: "ResourceNotFound", Status: http.StatusNotFound,
		Message: "Resource does not exist"}
	errTagLimit = &protocol.Error{Shape: "TagLimitExceededException", Code: "TagLimitExceeded", Status: http.StatusBadRequest,
		Message: "Could not complete request: tag quota of per resource exceeded"}
	errTooManyEntries = &protocol.Error{Shape: "TooManyEntriesInBatchRequestException", Code: "TooManyEntriesInBatchRequest", Status: http.StatusBadRequest,
		Message: "The batch request contains more entries than permissible."}
	errTopicLimit = &protocol.Error{Shape: "TopicLimitExceededException", Code: "TopicLimitExceeded", Status: http.StatusForbidden,
		Message: "Topic limit exceeded"}
	// The wording of FilterPolicyLimitExceeded is not recorded from AWS.
	errFilterPolicyLimit = &protocol.Error{Shape: "FilterPolicyLimitExceededException", Code: "FilterPolicyLimitExceeded", Status: http.StatusForbidden,
		Message: "Filter policy limit exceeded: a topic can have at most 200 subscriptions with a filter policy"}
	// errValidation is the framework's validation error (unmodeled).
	errValidation = &protocol.Error{Shape: "ValidationError", Code: "ValidationError", Status: http.StatusBadRequest}
	errOptedOut   = &protocol.Error{Shape: "OptedOutException", Code: "OptedOut", Status: http.StatusBadRequest,
		Message: "Phone number is opted out"}
	errVerification = &protocol.Error{Shape: "VerificationException", Code: "VerificationException", Status: http.StatusBadRequest}

	// errDeliveryDenied is SQS's refusal of SNS's copy for a queue whose
	// policy does not let the topic in (mayDeliver), as the delivery
	// status log shows it: AWS's SQS answers AccessDenied.
	errDeliveryDenied = &protocol.Error{Shape: "AccessDenied", Code: "AccessDenied", Status: http.StatusForbidden,
		Message: "Access to the resource is denied."}

	errTopicNotFound        = errNotFound.WithMessage("Topic does not exist")
	errSubscriptionNotFound = errNotFound.WithMessage("Subscription does not exist")
)

// invalidParameter is SNS's usual answer: InvalidParameter with a message
// that starts "Invalid parameter: ".
func invalidParameter(format string, args ...any) *protocol.Error {
	return errInvalidParameter.WithMessage("Invalid parameter: "+format, args...)
}

// parameterValue is ParameterValueInvalid, which message attribute errors use.
func parameterValue(format string, args ...any) *protocol.Error {
	return errParameterValue.WithMessage(format, args...)
}

// notNull is the framework's answer to a missing required member.
func notNull(path string) *protocol.Error {
	return errValidation.WithMessage("1 validation error detected: Value null at '%s' failed to satisfy constraint: Member must not be null", path)
}

// attrError words an attribute's problem the way each action does: Create
// and Subscribe say "Invalid parameter: Attributes Reason: ...", the Set
// actions "Invalid parameter: ...".
func attrError(inCreate bool, reason string) *protocol.Error {
	if inCreate {
		return invalidParameter("Attributes Reason: %s", reason)
	}
	return invalidParameter("%s", reason)
}

// internal logs an unexpected failure and answers SNS's InternalError; the
// cause is for the log, never the client.
func (s *Service) internal(ctx context.Context, op string, err error) error {
	// A full disk or an unreachable database is a known, temporary
	// condition, logged by the store once: answer it as SQS does, without
	// a line per request.
	if engine.Temporary(err) || errors.Is(err, protocol.ErrServiceUnavailable) {
		return protocol.ErrServiceUnavailable
	}
	s.log.ErrorContext(ctx, "sns: "+op, "err", err)
	return errInternal
}
