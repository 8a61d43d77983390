package sqs

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"

	"github.com/ferrymq/ferry/internal/arn"
	"github.com/ferrymq/ferry/internal/engine"
)

// Dead-letter source listing and message move tasks.

const (
	maxMovePerSecond   = 500
	maxListMoveTasks   = 10
	arnFormatMessage   = "You must use this format to specify the %s: arn:<partition>:<service>:<region>:<account-id>:<resource-id>"
	resourceNotFound   = "The resource that you specified for the %s parameter doesn't exist."
	taskDoesNotExist   = "Task does not exist."
	taskActiveMessage  = "There is already a task running. Only one active task is allowed for a source queue arn at a given time."
	notDeadLetterQueue = "Source queue must be configured as a Dead Letter Queue."
	// AWS's wording for the next three is unrecorded; these are other
	// emulators' (the rate's matches the style of AWS's TaskHandle message).
	sameQueueMessage = "Source queue arn and destination queue arn cannot be the same."
	sameTypeMessage  = "The source queue and destination queue must be of the same queue type."
	rateMessage      = "Value for parameter MaxNumberOfMessagesPerSecond is invalid. Reason: You must enter a number that's between 1 and 500."
)

func (s *service) listDeadLetterSourceQueues(ctx context.Context, in *ListDeadLetterSourceQueuesInput) (*ListDeadLetterSourceQueuesOutput, error) {
	dlq, err := s.getQueue(ctx, in.QueueUrl, "ListDeadLetterSourceQueues")
	if err != nil {
		return nil, err
	}
	pg, perr := newPaging(in.MaxResults, in.NextToken)
	if perr != nil {
		return nil, perr
	}
	ref := s.refOf(&dlq)
	sources, err := s.deadLetterSources(ctx, ref)
	if err != nil {
		return nil, err
	}
	names, next := pg.page(sources)
	out := &ListDeadLetterSourceQueuesOutput{QueueUrls: make([]string, 0, len(names)), NextToken: next}
	for _, n := range names {
		src := ref
		src.name = n
		out.QueueUrls = append(out.QueueUrls, s.queueURL(ctx, src))
	}
	return out, nil
}

// deadLetterSources names, sorted, the queues whose RedrivePolicy
// targets dlq (a dead-letter queue and its sources are of one account
// and region).
func (s *service) deadLetterSources(ctx context.Context, dlq queueRef) ([]string, error) {
	queues, err := s.backend.ListQueues(ctx, dlq.owner, "")
	if err != nil {
		return nil, s.engineError(err, "list queues")
	}
	target := dlq.arn()
	var names []string
	for _, q := range queues {
		if redriveTargetARN(q.Attributes) == target {
			names = append(names, q.Name)
		}
	}
	return names, nil
}

// moveTaskQueue resolves a move task's SourceArn or DestinationArn (param)
// to a queue of this service and authorizes action on it; one of another
// region or service does not exist here, and one of another account is
// refused, as move tasks cannot be shared.
func (s *service) moveTaskQueue(ctx context.Context, value, param, action string) (engine.Queue, error) {
	a, ok := arn.Parse(value)
	if !ok {
		return engine.Queue{}, invalidParameter(arnFormatMessage, param)
	}
	notFound := errResourceNotFound.WithMessage(resourceNotFound, param)
	caller := s.accountOf(ctx)
	if a.Service != "sqs" || a.Region != s.regionOf(ctx) || a.Partition != arnPartition || !validAnyQueueName(a.Resource) {
		return engine.Queue{}, notFound
	}
	ref := s.ref(a.Account, a.Region, a.Resource)
	if ref.account != caller {
		return engine.Queue{}, s.accessDenied(caller, ref, policyAction(action), false)
	}
	q, err := s.backend.GetQueue(ctx, ref.owner, ref.name)
	if errors.Is(err, engine.ErrQueueNotFound) {
		return engine.Queue{}, notFound
	}
	if err != nil {
		return engine.Queue{}, s.engineError(err, "get queue "+ref.name)
	}
	if s.mustAuthorize(ctx, ref) {
		if err := s.authorize(ctx, ref, &q, action); err != nil {
			return engine.Queue{}, err
		}
	}
	return q, nil
}

func (s *service) startMessageMoveTask(ctx context.Context, in *StartMessageMoveTaskInput) (*StartMessageMoveTaskOutput, error) {
	if in.SourceArn == "" {
		return nil, missingParameter("SourceArn")
	}
	src, err := s.moveTaskQueue(ctx, in.SourceArn, "SourceArn", "StartMessageMoveTask")
	if err != nil {
		return nil, err
	}
	sources, err := s.deadLetterSources(ctx, s.refOf(&src))
	if err != nil {
		return nil, err
	}
	if len(sources) == 0 {
		return nil, invalidParameter(notDeadLetterQueue)
	}
	task := engine.MoveTask{SourceAccount: src.Account, SourceName: src.Name, SourceARN: s.refOf(&src).arn(), Refs: moveRefs(ctx)}
	if in.DestinationArn != "" {
		if _, ok := arn.Parse(in.DestinationArn); !ok {
			return nil, invalidParameter(arnFormatMessage, "DestinationArn")
		}
		if in.DestinationArn == in.SourceArn {
			return nil, invalidParameter(sameQueueMessage)
		}
		dst, err := s.moveTaskQueue(ctx, in.DestinationArn, "DestinationArn", "StartMessageMoveTask")
		if err != nil {
			return nil, err
		}
		if dst.Name == src.Name {
			return nil, invalidParameter(sameQueueMessage)
		}
		if isFifo(dst.Attributes) != isFifo(src.Attributes) {
			return nil, invalidParameter(sameTypeMessage)
		}
		task.DestinationARN = s.refOf(&dst).arn()
	}
	if r := in.MaxNumberOfMessagesPerSecond; r != nil {
		if *r < 1 || *r > maxMovePerSecond {
			return nil, invalidParameter(rateMessage)
		}
		task.MaxPerSecond = *r
	}
	started, err := s.backend.StartMoveTask(ctx, task)
	switch {
	case errors.Is(err, engine.ErrMoveTaskActive):
		return nil, invalidParameter(taskActiveMessage)
	case errors.Is(err, engine.ErrMoveTaskLimit):
		return nil, errOverLimit.WithMessage("An account can have at most %d active message move tasks.", engine.MaxActiveMoveTasks)
	case errors.Is(err, engine.ErrQueueNotFound):
		return nil, errResourceNotFound.WithMessage(resourceNotFound, "SourceArn")
	case err != nil:
		return nil, s.engineError(err, "start move task on "+src.Name)
	}
	s.log.DebugContext(ctx, "move task started", "queue", src.Name, "task", started.ID)
	return &StartMessageMoveTaskOutput{TaskHandle: encodeTaskHandle(started.ID, task.SourceARN)}, nil
}

func (s *service) listMessageMoveTasks(ctx context.Context, in *ListMessageMoveTasksInput) (*ListMessageMoveTasksOutput, error) {
	if in.SourceArn == "" {
		return nil, missingParameter("SourceArn")
	}
	if _, ok := arn.Parse(in.SourceArn); !ok {
		return nil, invalidParameter(arnFormatMessage, "SourceArn")
	}
	limit := 1
	if n := in.MaxResults; n != nil {
		if *n < 1 || *n > maxListMoveTasks {
			return nil, invalidValue(*n, "MaxResults", "Must be between 1 and 10.")
		}
		limit = *n
	}
	src, err := s.moveTaskQueue(ctx, in.SourceArn, "SourceArn", "ListMessageMoveTasks")
	if err != nil {
		return nil, err
	}
	tasks, err := s.backend.ListMoveTasks(ctx, src.Account, src.Name)
	if errors.Is(err, engine.ErrQueueNotFound) {
		return nil, errResourceNotFound.WithMessage(resourceNotFound, "SourceArn")
	}
	if err != nil {
		return nil, s.engineError(err, "list move tasks of "+src.Name)
	}
	if len(tasks) > limit {
		tasks = tasks[:limit]
	}
	out := &ListMessageMoveTasksOutput{}
	for _, t := range tasks {
		out.Results = append(out.Results, moveTaskEntry(t))
	}
	return out, nil
}

// moveTaskEntry renders a task as ListMessageMoveTasks shows it: the handle
// only while it runs, the destination and rate only when given, the failure
// reason only when it failed.
func moveTaskEntry(t engine.MoveTask) ListMessageMoveTasksResultEntry {
	toMove := t.ToMove
	e := ListMessageMoveTasksResultEntry{
		Status:                            string(t.Status),
		SourceArn:                         t.SourceARN,
		DestinationArn:                    t.DestinationARN,
		ApproximateNumberOfMessagesMoved:  t.Moved,
		ApproximateNumberOfMessagesToMove: &toMove,
		StartedTimestamp:                  t.Started.UnixMilli(),
	}
	if t.Status == engine.MoveTaskRunning {
		e.TaskHandle = encodeTaskHandle(t.ID, t.SourceARN)
	}
	if t.MaxPerSecond > 0 {
		rate := t.MaxPerSecond
		e.MaxNumberOfMessagesPerSecond = &rate
	}
	if t.Status == engine.MoveTaskFailed {
		e.FailureReason = failureReason(t.FailureReason)
	}
	return e
}

// failureReason words a move task's failure as SQS does. AWS reports
// NonExistentQueue when a source or destination queue is missing; no
// wording is known for the other two, so theirs follow its pattern.
func failureReason(f engine.MoveTaskFailure) string {
	switch f {
	case engine.MoveTaskFailureNonExistentQueue:
		return "AWS.SimpleQueueService.NonExistentQueue"
	case engine.MoveTaskFailureTimedOut:
		return "AWS.SimpleQueueService.MoveTaskTimedOut"
	default:
		return "AWS.SimpleQueueService.InternalError"
	}
}

func (s *service) cancelMessageMoveTask(ctx context.Context, in *CancelMessageMoveTaskInput) (*CancelMessageMoveTaskOutput, error) {
	if in.TaskHandle == "" {
		return nil, missingParameter("TaskHandle")
	}
	id, sourceARN, ok := decodeTaskHandle(in.TaskHandle)
	if !ok {
		return nil, invalidParameter("Value for parameter TaskHandle is invalid.")
	}
	src, err := s.moveTaskQueue(ctx, sourceARN, "SourceArn", "CancelMessageMoveTask")
	if err != nil {
		return nil, err
	}
	t, err := s.backend.CancelMoveTask(ctx, src.Account, src.Name, id)
	switch {
	// AWS's answer for a task that is no longer running is unrecorded; it
	// gets the unknown task's.
	case errors.Is(err, engine.ErrMoveTaskNotFound), errors.Is(err, engine.ErrMoveTaskNotRunning):
		return nil, errResourceNotFound.WithMessage(taskDoesNotExist)
	case errors.Is(err, engine.ErrQueueNotFound):
		return nil, errResourceNotFound.WithMessage(resourceNotFound, "SourceArn")
	case err != nil:
		return nil, s.engineError(err, "cancel move task on "+src.Name)
	}
	s.log.DebugContext(ctx, "move task cancelled", "queue", src.Name, "task", id)
	return &CancelMessageMoveTaskOutput{ApproximateNumberOfMessagesMoved: t.Moved}, nil
}

// taskHandle is what a TaskHandle carries, base64 encoded: enough to find
// the task from its source queue.
type taskHandle struct {
	TaskID    string `json:"taskId"`
	SourceArn string `json:"sourceArn"`
}

func encodeTaskHandle(id, sourceARN string) string {
	return base64.StdEncoding.EncodeToString([]byte(marshalCompact(taskHandle{id, sourceARN})))
}

func decodeTaskHandle(h string) (id, sourceARN string, ok bool) {
	b, err := base64.StdEncoding.DecodeString(h)
	if err != nil {
		return "", "", false
	}
	var th taskHandle
	if json.Unmarshal(b, &th) != nil || th.TaskID == "" {
		return "", "", false
	}
	if _, ok := arn.Parse(th.SourceArn); !ok {
		return "", "", false
	}
	return th.TaskID, th.SourceArn, true
}
