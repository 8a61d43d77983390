package sqs

import (
	"github.com/ferrymq/ferry/internal/protocol"
)

// Everything Ferry's SQS does not do yet answers here, with AWS's
// UnsupportedOperation error rather than a silent success. Each feature
// that lands deletes its lines from this file.

func unsupported(what string) *protocol.Error {
	return errUnsupportedOperation.WithMessage("%s is not supported yet.", what)
}

var (
	errFifoUnsupported = unsupported("FIFO queues")
)
