package sqs

import (
	"context"

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

// unsupportedAttribute refuses the queue attributes of features not built:
// dead-letter queues (RedrivePolicy, RedriveAllowPolicy). An empty value,
// which removes the policy, is accepted: no queue can have one yet.
func unsupportedAttribute(name, value string) *protocol.Error {
	switch name {
	case attrRedrivePolicy, attrRedriveAllowPolicy:
		if value != "" {
			return unsupported("The " + name + " attribute (dead-letter queues)")
		}
	}
	return nil
}

// Dead-letter queue listing and message move tasks, registered with their
// real input and output types.

func (s *service) listDeadLetterSourceQueues(context.Context, *ListDeadLetterSourceQueuesInput) (*ListDeadLetterSourceQueuesOutput, error) {
	return nil, unsupported("ListDeadLetterSourceQueues")
}

func (s *service) startMessageMoveTask(context.Context, *StartMessageMoveTaskInput) (*StartMessageMoveTaskOutput, error) {
	return nil, unsupported("StartMessageMoveTask")
}

func (s *service) listMessageMoveTasks(context.Context, *ListMessageMoveTasksInput) (*ListMessageMoveTasksOutput, error) {
	return nil, unsupported("ListMessageMoveTasks")
}

func (s *service) cancelMessageMoveTask(context.Context, *CancelMessageMoveTaskInput) (*CancelMessageMoveTaskOutput, error) {
	return nil, unsupported("CancelMessageMoveTask")
}
