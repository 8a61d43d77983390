package sns

import (
	"context"
	"fmt"
	"strings"

	"github.com/google/uuid"

	"github.com/ferrymq/ferry/internal/engine"
	"github.com/ferrymq/ferry/internal/protocol"
)

func newID() string { return uuid.NewString() }

func (s *Service) publish(ctx context.Context, in *publishInput) (*publishOutput, error) {
	r := publishRequest{message: in.Message, subject: in.Subject, structure: in.MessageStructure,
		attrs: in.MessageAttributes, dedupID: in.MessageDeduplicationId, groupID: in.MessageGroupId}
	m, err := s.buildMessage(r)
	if err != nil {
		return nil, err
	}
	m.ID, m.Timestamp = newID(), s.clock.Now().UTC()
	switch {
	case in.PhoneNumber != "":
		if in.TopicArn != "" || in.TargetArn != "" {
			return nil, invalidParameter("PhoneNumber Reason: Only one of TopicArn, TargetArn or PhoneNumber may be given")
		}
		if !e164.MatchString(in.PhoneNumber) {
			return nil, invalidParameter("PhoneNumber Reason: %s is not valid to publish to", in.PhoneNumber)
		}
		if err := s.publishSMS(in.PhoneNumber, m); err != nil {
			return nil, err
		}
		return &publishOutput{MessageId: m.ID}, nil
	case in.TopicArn == "" && in.TargetArn == "":
		return nil, invalidParameter("TopicArn or TargetArn Reason: no value for required parameter")
	}
	arn, param := in.TopicArn, "TopicArn"
	if arn == "" {
		arn, param = in.TargetArn, "TargetArn"
		if strings.Contains(arn, ":endpoint/") {
			if err := s.publishToEndpoint(arn, m); err != nil {
				return nil, err
			}
			return &publishOutput{MessageId: m.ID}, nil
		}
	}
	t, err := s.lookupTopic(ctx, arn, param)
	if err != nil {
		return nil, err
	}
	if err := applyTopic(m, t, r); err != nil {
		return nil, err
	}
	if !t.FIFO {
		if err := s.fanout(ctx, t, []*message{m}); err != nil {
			return nil, s.internal(ctx, "publish", err)
		}
		s.countPublished(t, m)
		return &publishOutput{MessageId: m.ID}, nil
	}
	st := t.state
	st.fifoMu.Lock()
	defer st.fifoMu.Unlock()
	if e, dup := s.lookupDedup(t, m); dup {
		return &publishOutput{MessageId: e.messageID, SequenceNumber: e.sequence}, nil
	}
	m.Sequence = s.nextSequence(st)
	if err := s.fanout(ctx, t, []*message{m}); err != nil {
		return nil, s.internal(ctx, "publish", err)
	}
	s.rememberDedup(t, m)
	s.countPublished(t, m)
	return &publishOutput{MessageId: m.ID, SequenceNumber: m.Sequence}, nil
}

// dedupKeyOf is a FIFO message's deduplication key in its topic's scope.
func dedupKeyOf(t *topic, m *message) string {
	if t.dedupPerGroup() {
		return m.groupID + "\x00" + m.dedupID
	}
	return m.dedupID
}

// lookupDedup finds a message with the same deduplication key published
// within the window. The caller holds the topic's fifoMu.
func (s *Service) lookupDedup(t *topic, m *message) (dedupEntry, bool) {
	st := t.state
	now := s.clock.Now()
	n := 0
	for n < len(st.dedupQ) && !now.Before(st.dedupQ[n].expires) {
		if e, ok := st.dedup[st.dedupQ[n].key]; ok && !now.Before(e.expires) {
			delete(st.dedup, st.dedupQ[n].key)
		}
		n++
	}
	st.dedupQ = st.dedupQ[n:]
	e, ok := st.dedup[dedupKeyOf(t, m)]
	return e, ok
}

// rememberDedup starts m's deduplication window. The caller holds fifoMu.
func (s *Service) rememberDedup(t *topic, m *message) {
	key := dedupKeyOf(t, m)
	exp := s.clock.Now().Add(dedupWindow)
	t.state.dedup[key] = dedupEntry{messageID: m.ID, sequence: m.Sequence, expires: exp}
	t.state.dedupQ = append(t.state.dedupQ, dedupKey{key: key, expires: exp})
}

// nextSequence returns a FIFO sequence number: a decimal number that grows
// with every message of the topic (micro-second stamp, then a counter).
// The caller holds fifoMu.
func (s *Service) nextSequence(st *topicState) string {
	now := s.clock.Now().UnixMicro()
	if now > st.seqMicro {
		st.seqMicro, st.seqN = now, 0
	} else {
		st.seqN++
		if st.seqN > 999_999 {
			st.seqMicro, st.seqN = st.seqMicro+1, 0
		}
	}
	return fmt.Sprintf("%d%06d", st.seqMicro, st.seqN)
}

// checkBatchID: 1–80 characters of [A-Za-z0-9_-].
func checkBatchID(id string) error {
	if len(id) > maxBatchEntryID {
		return errInvalidBatchEntryID.WithMessage("The Id of a batch entry in the batch request is too long: %s", id)
	}
	if id == "" {
		return errInvalidBatchEntryID.WithMessage("The Id of a batch entry in the batch request contains an impermissible character: %s", id)
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return errInvalidBatchEntryID.WithMessage("The Id of a batch entry in the batch request contains an impermissible character: %s", id)
		}
	}
	return nil
}

func (s *Service) publishBatch(ctx context.Context, in *publishBatchInput) (*publishBatchOutput, error) {
	entries := in.PublishBatchRequestEntries
	switch {
	case len(entries) == 0:
		return nil, errEmptyBatch
	case len(entries) > maxBatchEntries:
		return nil, errTooManyEntries
	}
	t, err := s.lookupTopic(ctx, in.TopicArn, "TopicArn")
	if err != nil {
		return nil, err
	}
	seen := make(map[string]bool, len(entries))
	for _, e := range entries {
		if seen[e.Id] {
			return nil, errBatchIdsNotDistinct
		}
		seen[e.Id] = true
	}
	for _, e := range entries {
		if err := checkBatchID(e.Id); err != nil {
			return nil, err
		}
	}
	msgs := make([]*message, len(entries))
	total := 0
	now := s.clock.Now().UTC()
	for i, e := range entries {
		r := publishRequest{message: e.Message, subject: e.Subject, structure: e.MessageStructure, attrs: e.MessageAttributes,
			dedupID: e.MessageDeduplicationId, groupID: e.MessageGroupId, batchPos: i + 1}
		m, err := s.buildMessage(r)
		if err != nil {
			return nil, err
		}
		if err := applyTopic(m, t, r); err != nil {
			return nil, err
		}
		m.ID, m.Timestamp = newID(), now
		total += m.size
		msgs[i] = m
	}
	if total > maxMessageBytes {
		return nil, errBatchTooLong
	}
	out := &publishBatchOutput{Successful: []publishBatchResult{}, Failed: []batchError{}}
	if !t.FIFO {
		if err := s.fanout(ctx, t, msgs); err != nil {
			return s.batchFailed(ctx, entries, err)
		}
		s.countPublished(t, msgs...)
		for i, m := range msgs {
			out.Successful = append(out.Successful, publishBatchResult{Id: entries[i].Id, MessageId: m.ID})
		}
		return out, nil
	}
	st := t.state
	st.fifoMu.Lock()
	defer st.fifoMu.Unlock()
	// Entries keep their order; a duplicate (of an earlier message or an
	// earlier entry) answers with the original's id and is not delivered.
	results := make([]publishBatchResult, len(msgs))
	var fresh []*message
	inBatch := map[string]*message{}
	for i, m := range msgs {
		key := dedupKeyOf(t, m)
		if e, dup := s.lookupDedup(t, m); dup {
			results[i] = publishBatchResult{Id: entries[i].Id, MessageId: e.messageID, SequenceNumber: e.sequence}
			continue
		}
		if orig, dup := inBatch[key]; dup {
			results[i] = publishBatchResult{Id: entries[i].Id, MessageId: orig.ID, SequenceNumber: orig.Sequence}
			continue
		}
		m.Sequence = s.nextSequence(st)
		inBatch[key] = m
		fresh = append(fresh, m)
		results[i] = publishBatchResult{Id: entries[i].Id, MessageId: m.ID, SequenceNumber: m.Sequence}
	}
	if len(fresh) > 0 {
		if err := s.fanout(ctx, t, fresh); err != nil {
			return s.batchFailed(ctx, entries, err)
		}
	}
	for _, m := range fresh {
		s.rememberDedup(t, m)
	}
	s.countPublished(t, fresh...)
	out.Successful = results
	return out, nil
}

// batchFailed answers a batch whose fan-out failed on the server's side:
// every entry failed, and the client may send them again. A store that
// cannot write for a while fails the whole call with a 503, which SDKs
// retry, as Publish does, and is not logged per call.
func (s *Service) batchFailed(ctx context.Context, entries []publishBatchEntry, err error) (*publishBatchOutput, error) {
	if engine.Temporary(err) {
		return nil, protocol.ErrServiceUnavailable
	}
	s.log.ErrorContext(ctx, "sns: publish batch", "err", err)
	out := &publishBatchOutput{Successful: []publishBatchResult{}, Failed: make([]batchError, len(entries))}
	for i, e := range entries {
		out.Failed[i] = batchError{Id: e.Id, Code: errInternal.Code, Message: errInternal.Message, SenderFault: false}
	}
	return out, nil
}
