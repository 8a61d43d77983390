package sqs

import (
	"net/http"
	"strings"

	"github.com/ferrymq/ferry/internal/protocol"
)

// The SQS error catalogue. Modeled errors carry their Smithy shape (sent as
// com.amazonaws.sqs#Shape in JSON) and their legacy query code; the two
// unmodeled validation errors come from the protocol package. Messages are
// AWS's own wording where it has been observed.
var (
	errQueueDoesNotExist = &protocol.Error{Shape: "QueueDoesNotExist", Code: "AWS.SimpleQueueService.NonExistentQueue", Status: http.StatusBadRequest,
		Message:      "The specified queue does not exist.",
		QueryMessage: "The specified queue does not exist for this wsdl version."}
	errQueueNameExists = &protocol.Error{Shape: "QueueNameExists", Code: "QueueAlreadyExists", Status: http.StatusBadRequest}
	// errQueueDeletedRecently's wording is LocalStack's; AWS's is unrecorded.
	errQueueDeletedRecently = &protocol.Error{Shape: "QueueDeletedRecently", Code: "AWS.SimpleQueueService.QueueDeletedRecently", Status: http.StatusBadRequest,
		Message: "You must wait 60 seconds after deleting a queue before you can create another with the same name."}
	errInvalidAttributeName   = &protocol.Error{Shape: "InvalidAttributeName", Code: "InvalidAttributeName", Status: http.StatusBadRequest}
	errInvalidAttributeValue  = &protocol.Error{Shape: "InvalidAttributeValue", Code: "InvalidAttributeValue", Status: http.StatusBadRequest}
	errInvalidMessageContents = &protocol.Error{Shape: "InvalidMessageContents", Code: "InvalidMessageContents", Status: http.StatusBadRequest,
		Message: invalidCharactersMessage}
	errReceiptHandleIsInvalid   = &protocol.Error{Shape: "ReceiptHandleIsInvalid", Code: "ReceiptHandleIsInvalid", Status: http.StatusNotFound}
	errPurgeQueueInProgress     = &protocol.Error{Shape: "PurgeQueueInProgress", Code: "AWS.SimpleQueueService.PurgeQueueInProgress", Status: http.StatusForbidden}
	errEmptyBatchRequest        = &protocol.Error{Shape: "EmptyBatchRequest", Code: "AWS.SimpleQueueService.EmptyBatchRequest", Status: http.StatusBadRequest}
	errTooManyEntries           = &protocol.Error{Shape: "TooManyEntriesInBatchRequest", Code: "AWS.SimpleQueueService.TooManyEntriesInBatchRequest", Status: http.StatusBadRequest}
	errBatchEntryIdsNotDistinct = &protocol.Error{Shape: "BatchEntryIdsNotDistinct", Code: "AWS.SimpleQueueService.BatchEntryIdsNotDistinct", Status: http.StatusBadRequest}
	errInvalidBatchEntryID      = &protocol.Error{Shape: "InvalidBatchEntryId", Code: "AWS.SimpleQueueService.InvalidBatchEntryId", Status: http.StatusBadRequest,
		Message: "A batch entry id can only contain alphanumeric characters, hyphens and underscores. It can be at most 80 letters long."}
	// errQueueUnreachable is how SQS refuses another service's message for a
	// queue that does not exist, or not in this account and region.
	errQueueUnreachable    = errQueueDoesNotExist.WithMessage("The specified queue does not exist or you do not have access to it.")
	errBatchRequestTooLong = &protocol.Error{Shape: "BatchRequestTooLong", Code: "AWS.SimpleQueueService.BatchRequestTooLong", Status: http.StatusBadRequest}
	errOverLimit           = &protocol.Error{Shape: "OverLimit", Code: "OverLimit", Status: http.StatusForbidden}
	// errResourceNotFound answers move tasks whose queue or task is missing.
	errResourceNotFound = &protocol.Error{Shape: "ResourceNotFoundException", Code: "ResourceNotFoundException", Status: http.StatusNotFound}
	// Modeled but not raised: AWS answers these cases with other errors
	// today; they are listed so the catalogue is whole.
	errMessageNotInflight   = &protocol.Error{Shape: "MessageNotInflight", Code: "AWS.SimpleQueueService.MessageNotInflight", Status: http.StatusBadRequest}
	errInvalidIDFormat      = &protocol.Error{Shape: "InvalidIdFormat", Code: "InvalidIdFormat", Status: http.StatusBadRequest}
	errUnsupportedOperation = &protocol.Error{Shape: "UnsupportedOperation", Code: "AWS.SimpleQueueService.UnsupportedOperation", Status: http.StatusBadRequest}

	// Modeled on every action, raised by AWS alone (throttling, a wrong
	// endpoint, a key of KMS): Ferry answers them only when a fault rule
	// asks (internal/faults). Codes and statuses are the SQS model's
	// (aws-sdk-go-v2 service/sqs schemas: HTTPError, AWSQueryError).
	errRequestThrottled = &protocol.Error{Shape: "RequestThrottled", Code: "RequestThrottled", Status: http.StatusForbidden}
	errInvalidAddress   = &protocol.Error{Shape: "InvalidAddress", Code: "InvalidAddress", Status: http.StatusNotFound}
	errInvalidSecurity  = &protocol.Error{Shape: "InvalidSecurity", Code: "InvalidSecurity", Status: http.StatusForbidden}
	errKmsAccessDenied  = &protocol.Error{Shape: "KmsAccessDenied", Code: "KMS.AccessDeniedException", Status: http.StatusBadRequest}
	errKmsDisabled      = &protocol.Error{Shape: "KmsDisabled", Code: "KMS.DisabledException", Status: http.StatusBadRequest}
	errKmsInvalidKeyUse = &protocol.Error{Shape: "KmsInvalidKeyUsage", Code: "KMS.InvalidKeyUsageException", Status: http.StatusBadRequest}
	errKmsInvalidState  = &protocol.Error{Shape: "KmsInvalidState", Code: "KMS.InvalidStateException", Status: http.StatusBadRequest}
	errKmsNotFound      = &protocol.Error{Shape: "KmsNotFound", Code: "KMS.NotFoundException", Status: http.StatusBadRequest}
	errKmsOptInRequired = &protocol.Error{Shape: "KmsOptInRequired", Code: "KMS.OptInRequired", Status: http.StatusForbidden}
	errKmsThrottled     = &protocol.Error{Shape: "KmsThrottled", Code: "KMS.ThrottlingException", Status: http.StatusBadRequest}
	errInternalFailure  = protocol.AsError(nil)

	errInvalidParameterValue = protocol.ErrInvalidParameterValue
	errMissingParameter      = protocol.ErrMissingParameter
)

// catalogue is every error SQS answers, by which a fault rule names the
// one it injects.
var catalogue = []*protocol.Error{
	errQueueDoesNotExist, errQueueNameExists, errQueueDeletedRecently, errInvalidAttributeName, errInvalidAttributeValue,
	errInvalidMessageContents, errReceiptHandleIsInvalid, errPurgeQueueInProgress, errEmptyBatchRequest, errTooManyEntries,
	errBatchEntryIdsNotDistinct, errInvalidBatchEntryID, errBatchRequestTooLong, errOverLimit, errResourceNotFound,
	errMessageNotInflight, errInvalidIDFormat, errUnsupportedOperation, errRequestThrottled, errInvalidAddress,
	errInvalidSecurity, errKmsAccessDenied, errKmsDisabled, errKmsInvalidKeyUse, errKmsInvalidState, errKmsNotFound,
	errKmsOptInRequired, errKmsThrottled, errAccessDenied, errInvalidParameterValue, errMissingParameter,
	protocol.ErrServiceUnavailable, errInternalFailure,
}

// ErrorByCode finds the SQS error code names: its shape (RequestThrottled,
// QueueDoesNotExist), its query code (AWS.SimpleQueueService.NonExistentQueue)
// or, for the errors without a shape of SQS's own, the name in its JSON
// __type (AccessDeniedException).
func ErrorByCode(code string) (*protocol.Error, bool) {
	if code == "" {
		return nil, false
	}
	for _, e := range catalogue {
		_, typeName, _ := strings.Cut(e.Type, "#")
		if code == e.Shape || code == e.Code || code == typeName {
			return e, true
		}
	}
	return nil, false
}

const invalidCharactersMessage = "Invalid characters found. Valid unicode characters are #x9 | #xA | #xD | #x20 to #xD7FF | #xE000 to #xFFFD | #x10000 to #x10FFFF"

func missingParameter(name string) *protocol.Error {
	return errMissingParameter.WithMessage("The request must contain the parameter %s.", name)
}

func invalidParameter(format string, args ...any) *protocol.Error {
	return errInvalidParameterValue.WithMessage(format, args...)
}

// invalidValue is AWS's "Value {v} for parameter {p} is invalid. Reason: {r}".
func invalidValue(value any, param, reason string) *protocol.Error {
	return invalidParameter("Value %v for parameter %s is invalid. Reason: %s", value, param, reason)
}

func unknownAttribute(name string) *protocol.Error {
	return errInvalidAttributeName.WithMessage("Unknown Attribute %s.", name)
}

func invalidAttributeValue(name string) *protocol.Error {
	return errInvalidAttributeValue.WithMessage("Invalid value for the parameter %s.", name)
}

func receiptHandleInvalid(handle string) *protocol.Error {
	return errReceiptHandleIsInvalid.WithMessage("The input receipt handle %q is not a valid receipt handle.", handle)
}

// receiptHandleExpired answers a FIFO handle whose visibility ran out.
func receiptHandleExpired(handle string) *protocol.Error {
	return invalidValue(handle, "ReceiptHandle", "The receipt handle has expired.")
}

func notInflight(handle string) *protocol.Error {
	return invalidValue(handle, "ReceiptHandle", "Message does not exist or is not available for visibility timeout change.")
}

func visibilityLimit(timeout int) *protocol.Error {
	return invalidValue(timeout, "VisibilityTimeout", "Total VisibilityTimeout for the message is beyond the limit [43200 seconds]")
}

func purgeInProgress(queue string) *protocol.Error {
	return errPurgeQueueInProgress.WithMessage("Only one PurgeQueue operation on %s is allowed every 60 seconds.", queue)
}

func emptyBatch(entryName string) *protocol.Error {
	return errEmptyBatchRequest.WithMessage("There should be at least one %s in the request.", entryName)
}

func tooManyEntries(n int) *protocol.Error {
	return errTooManyEntries.WithMessage("Maximum number of entries per request are %d. You have sent %d.", maxBatchEntries, n)
}

func idsNotDistinct(id string) *protocol.Error {
	return errBatchEntryIdsNotDistinct.WithMessage("Id %s repeated.", id)
}

func batchTooLong(n int) *protocol.Error {
	return errBatchRequestTooLong.WithMessage("Batch requests cannot be longer than %d bytes. You have sent %d bytes.", maxBatchBytes, n)
}

func queueNameExists(attr string) *protocol.Error {
	return errQueueNameExists.WithMessage("A queue already exists with the same name and a different value for attribute %s", attr)
}
