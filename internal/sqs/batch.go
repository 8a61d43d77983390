package sqs

import (
	"context"
	"time"

	"github.com/ferrymq/ferry/internal/engine"
	"github.com/ferrymq/ferry/internal/protocol"
)

const (
	maxBatchEntries = 10
	maxBatchIDLen   = 80
	// maxBatchBytes bounds the sum of a SendMessageBatch's message sizes.
	maxBatchBytes = 1 << 20
)

// checkBatch applies the rules every batch action shares, failing the
// whole request: 1..10 entries, each id [A-Za-z0-9_-]{1,80} and distinct.
func checkBatch[E any](entryName string, entries []E, id func(*E) string) *protocol.Error {
	switch n := len(entries); {
	case n == 0:
		return emptyBatch(entryName)
	case n > maxBatchEntries:
		return tooManyEntries(n)
	}
	seen := make(map[string]struct{}, len(entries))
	for i := range entries {
		id := id(&entries[i])
		if !validIdent(id, maxBatchIDLen) {
			return errInvalidBatchEntryID
		}
		if _, dup := seen[id]; dup {
			return idsNotDistinct(id)
		}
		seen[id] = struct{}{}
	}
	return nil
}

// failure is a Failed entry for err, which is the sender's fault.
func failure(id string, err *protocol.Error) BatchResultErrorEntry {
	return BatchResultErrorEntry{Id: id, SenderFault: !err.Receiver, Code: err.Code, Message: err.Message}
}

func (s *service) sendMessageBatch(ctx context.Context, in *SendMessageBatchInput) (*SendMessageBatchOutput, error) {
	q, err := s.viewQueue(ctx, in.QueueUrl, "SendMessageBatch")
	if err != nil {
		return nil, err
	}
	if perr := checkBatch("SendMessageBatchRequestEntry", in.Entries,
		func(e *SendMessageBatchRequestEntry) string { return e.Id }); perr != nil {
		return nil, perr
	}
	total := 0
	for i := range in.Entries {
		total += messageSize(in.Entries[i].MessageBody, in.Entries[i].MessageAttributes)
	}
	if total > maxBatchBytes {
		return nil, batchTooLong(total)
	}
	rules := rulesOf(q)
	if rules.fifo {
		if perr := checkFifoBatch(in.Entries, rules.contentDedup); perr != nil {
			return nil, perr
		}
	}
	out := &SendMessageBatchOutput{
		Successful: make([]SendMessageBatchResultEntry, 0, len(in.Entries)),
		Failed:     make([]BatchResultErrorEntry, 0),
	}
	sender := s.senderID(ctx)
	msgs := make([]engine.NewMessage, 0, len(in.Entries))
	ids := make([]string, 0, len(in.Entries))
	for i := range in.Entries {
		e := &in.Entries[i]
		if e.MessageBody == "" {
			// AWS reports an empty body in a batch entry with its own code.
			out.Failed = append(out.Failed, BatchResultErrorEntry{Id: e.Id, SenderFault: true, Code: "EmptyValue",
				Message: "The request must contain the parameter MessageBody."})
			continue
		}
		msg, perr := buildMessage(messageRequest{
			body: e.MessageBody, delay: e.DelaySeconds, attrs: e.MessageAttributes,
			sysAttrs: e.MessageSystemAttributes, dedupID: e.MessageDeduplicationId, groupID: e.MessageGroupId,
		}, rules, sender, true)
		if perr != nil {
			out.Failed = append(out.Failed, failure(e.Id, perr))
			continue
		}
		msgs = append(msgs, msg)
		ids = append(ids, e.Id)
	}
	if len(msgs) == 0 {
		return out, nil
	}
	res, err := s.send(ctx, q.Account, q.Name, msgs)
	if err != nil {
		return nil, s.engineError(err, "send batch to "+q.Name)
	}
	for i, r := range res {
		out.Successful = append(out.Successful, SendMessageBatchResultEntry{
			Id:                           ids[i],
			MessageId:                    r.MessageID,
			MD5OfMessageBody:             msgs[i].MD5OfBody,
			MD5OfMessageAttributes:       msgs[i].MD5OfAttrs,
			MD5OfMessageSystemAttributes: msgs[i].MD5OfSysAttrs,
			SequenceNumber:               r.SequenceNumber,
		})
	}
	return out, nil
}

// checkFifoBatch refuses a whole FIFO batch, as AWS does, when an entry
// lacks a group id or a deduplication id the queue cannot derive; both
// were observed as InvalidParameterValue (not MissingParameter) for the
// request. Other FIFO rules fail only their entry.
func checkFifoBatch(entries []SendMessageBatchRequestEntry, contentDedup bool) *protocol.Error {
	for i := range entries {
		e := &entries[i]
		if e.MessageGroupId == nil {
			return invalidParameter("The request must contain the parameter MessageGroupId.")
		}
		if e.MessageDeduplicationId == nil && !contentDedup {
			return invalidParameter(needDedupMessage)
		}
	}
	return nil
}

func (s *service) deleteMessageBatch(ctx context.Context, in *DeleteMessageBatchInput) (*DeleteMessageBatchOutput, error) {
	ref, err := s.target(ctx, in.QueueUrl, "DeleteMessageBatch")
	if err != nil {
		return nil, err
	}
	if perr := checkBatch("DeleteMessageBatchRequestEntry", in.Entries,
		func(e *DeleteMessageBatchRequestEntry) string { return e.Id }); perr != nil {
		return nil, perr
	}
	failed := make([]*protocol.Error, len(in.Entries))
	handles := make([]string, 0, len(in.Entries))
	sent := make([]int, 0, len(in.Entries)) // entry index of each handle
	for i, e := range in.Entries {
		if e.ReceiptHandle == "" {
			failed[i] = missingParameter("ReceiptHandle")
			continue
		}
		handles = append(handles, e.ReceiptHandle)
		sent = append(sent, i)
	}
	if len(handles) > 0 {
		errs, err := s.backend.Delete(ctx, ref.owner, ref.name, handles)
		if err != nil {
			return nil, s.engineError(err, "delete batch from "+ref.name)
		}
		deleted := 0
		for j, i := range sent {
			failed[i] = deleteError(handles[j], errs, j)
			if failed[i] == nil {
				deleted++
			}
		}
		s.recordDeleted(ref.owner, ref.name, deleted)
	}
	ok, bad := batchResults(in.Entries, failed, func(e *DeleteMessageBatchRequestEntry) string { return e.Id })
	return &DeleteMessageBatchOutput{Successful: ok, Failed: bad}, nil
}

func (s *service) changeMessageVisibilityBatch(ctx context.Context, in *ChangeMessageVisibilityBatchInput) (*ChangeMessageVisibilityBatchOutput, error) {
	ref, err := s.target(ctx, in.QueueUrl, "ChangeMessageVisibilityBatch")
	if err != nil {
		return nil, err
	}
	if perr := checkBatch("ChangeMessageVisibilityBatchRequestEntry", in.Entries,
		func(e *ChangeMessageVisibilityBatchRequestEntry) string { return e.Id }); perr != nil {
		return nil, perr
	}
	failed := make([]*protocol.Error, len(in.Entries))
	var changes []engine.VisibilityChange
	var sent []int // entry index of each change
	for i := range in.Entries {
		e := &in.Entries[i]
		switch {
		case e.ReceiptHandle == "":
			failed[i] = missingParameter("ReceiptHandle")
		case e.VisibilityTimeout == nil:
			failed[i] = missingParameter("VisibilityTimeout")
		default:
			failed[i] = checkVisibility(*e.VisibilityTimeout)
		}
		if failed[i] != nil {
			continue
		}
		changes = append(changes, engine.VisibilityChange{
			ReceiptHandle: e.ReceiptHandle, Timeout: time.Duration(*e.VisibilityTimeout) * time.Second})
		sent = append(sent, i)
	}
	if len(changes) > 0 {
		errs, err := s.backend.ChangeVisibility(ctx, ref.owner, ref.name, changes)
		if err != nil {
			return nil, s.engineError(err, "change visibility batch in "+ref.name)
		}
		for j, i := range sent {
			if j < len(errs) && errs[j] != nil {
				e := &in.Entries[i]
				failed[i] = visibilityError(errs[j], e.ReceiptHandle, *e.VisibilityTimeout)
			}
		}
	}
	ok, bad := batchResults(in.Entries, failed, func(e *ChangeMessageVisibilityBatchRequestEntry) string { return e.Id })
	return &ChangeMessageVisibilityBatchOutput{Successful: ok, Failed: bad}, nil
}

// batchResults sorts entries into successes and failures, in request order;
// both lists are non-nil, as AWS always sends both.
func batchResults[E any](entries []E, failed []*protocol.Error, id func(*E) string) (ok []BatchResultEntry, bad []BatchResultErrorEntry) {
	ok, bad = make([]BatchResultEntry, 0, len(entries)), make([]BatchResultErrorEntry, 0)
	for i := range entries {
		if failed[i] != nil {
			bad = append(bad, failure(id(&entries[i]), failed[i]))
		} else {
			ok = append(ok, BatchResultEntry{Id: id(&entries[i])})
		}
	}
	return ok, bad
}
