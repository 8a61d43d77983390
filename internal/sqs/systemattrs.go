package sqs

import (
	"strings"

	"github.com/ferrymq/ferry/internal/engine"
)

// The digests themselves (MD5OfMessageBody, MD5OfMessageAttributes) are
// computed by package digest, shared with SNS deliveries.

// traceHeaderAttrs is the system attribute map AWSTraceHeader forms.
func traceHeaderAttrs(trace string) []engine.MessageAttribute {
	if trace == "" {
		return nil
	}
	return []engine.MessageAttribute{{Name: sysAttrTraceHeader, DataType: "String", StringValue: trace}}
}

// baseType is a data type without its custom suffix ("Number" of "Number.float").
func baseType(dataType string) string {
	base, _, _ := strings.Cut(dataType, ".")
	return base
}
