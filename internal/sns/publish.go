package sns

import (
	"context"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/ferrymq/ferry/internal/engine"
	"github.com/ferrymq/ferry/internal/protocol"
)

func newID() string { return uuid.NewString() }

func (s *Service) publish(ctx context.Context, in *publishInput) (*publishOutput, error) {
	r := publishRequest{message: in.Message, subject: in.Subject, structure: in.MessageStructure,
		attrs: in.MessageAttributes, dedupID: in.MessageDeduplicationId, groupID: in.MessageGroupId}
	if in.PhoneNumber == "" && in.TopicArn == "" && strings.Contains(in.TargetArn, ":endpoint/") {
		return s.publishEndpoint(ctx, in.TargetArn, r)
	}
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
		if err := s.publishSMS(ctx, in.PhoneNumber, m); err != nil {
			return nil, err
		}
		return &publishOutput{MessageId: m.ID}, nil
	case in.TopicArn == "" && in.TargetArn == "":
		return nil, invalidParameter("TopicArn or TargetArn Reason: no value for required parameter")
	}
	arn, param := in.TopicArn, "TopicArn"
	if arn == "" {
		arn, param = in.TargetArn, "TargetArn"
	}
	t, err := s.lookupTopic(ctx, arn, param, "Publish")
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
	tk, err := s.sequence(ctx, t, []*message{m})
	if err != nil {
		return nil, s.internal(ctx, "publish", err)
	}
	if tk[0].Duplicate {
		return &publishOutput{MessageId: tk[0].ID, SequenceNumber: tk[0].Number}, nil
	}
	m.Sequence = tk[0].Number
	if err := s.fanout(ctx, t, []*message{m}); err != nil {
		s.release(ctx, t, []*message{m})
		return nil, s.internal(ctx, "publish", err)
	}
	s.countPublished(t, m)
	return &publishOutput{MessageId: m.ID, SequenceNumber: m.Sequence}, nil
}

// A FIFO topic's sequence numbers and deduplication window are the
// store's (engine.Sequencer), so that publishes through every node that
// shares it number and deduplicate as through one. A node still publishes
// to one topic one call at a time (topicState.fifoMu), so that what it
// delivers keeps the order of its numbers; publishes through two nodes
// at once are numbered in the order the store took them.

// dedupKeyOf is a FIFO message's deduplication key in its topic's scope:
// in the MessageGroup scope the group, a space (which neither id may
// hold) and the id.
func dedupKeyOf(t *topic, m *message) string {
	if t.dedupPerGroup() {
		return m.groupID + " " + m.dedupID
	}
	return m.dedupID
}

// sequence claims the messages' deduplication keys, which are distinct,
// and takes their numbers. The caller holds the topic's fifoMu.
func (s *Service) sequence(ctx context.Context, t *topic, msgs []*message) ([]engine.SequenceTicket, error) {
	claims := make([]engine.SequenceClaim, len(msgs))
	for i, m := range msgs {
		claims[i] = engine.SequenceClaim{Key: dedupKeyOf(t, m), ID: m.ID}
	}
	return s.sequences.Sequence(ctx, t.ARN, s.clock.Now(), claims)
}

// release gives back the keys of messages whose fan-out failed, so that
// the client's retry is published rather than taken for a duplicate of
// what was never delivered. A release that fails leaves the keys until
// their window ends, and is logged.
func (s *Service) release(ctx context.Context, t *topic, msgs []*message) {
	claims := make([]engine.SequenceClaim, len(msgs))
	for i, m := range msgs {
		claims[i] = engine.SequenceClaim{Key: dedupKeyOf(t, m), ID: m.ID}
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
	defer cancel()
	if err := s.sequences.ReleaseSequence(ctx, t.ARN, claims); err != nil {
		s.log.WarnContext(ctx, "sns: give back the deduplication keys of a failed publish", "topic", t.ARN, "err", err)
	}
}

// releaseTimeout bounds release, which runs when the caller may be gone.
const releaseTimeout = 10 * time.Second

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
	t, err := s.lookupTopic(ctx, in.TopicArn, "TopicArn", "Publish")
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
	// The first entry of each key claims it.
	var (
		claimed []*message
		at      []int                    // the entry of each claimed message
		first   = make([]int, len(msgs)) // the entry that claimed each entry's key
		byKey   = map[string]int{}
	)
	for i, m := range msgs {
		key := dedupKeyOf(t, m)
		if j, dup := byKey[key]; dup {
			first[i] = j
			continue
		}
		byKey[key], first[i] = i, i
		claimed = append(claimed, m)
		at = append(at, i)
	}
	tickets, err := s.sequence(ctx, t, claimed)
	if err != nil {
		return s.batchFailed(ctx, entries, err)
	}
	results := make([]publishBatchResult, len(msgs))
	var fresh []*message
	for j, tk := range tickets {
		i, m := at[j], claimed[j]
		if !tk.Duplicate {
			m.Sequence = tk.Number
			fresh = append(fresh, m)
		}
		results[i] = publishBatchResult{MessageId: tk.ID, SequenceNumber: tk.Number}
	}
	for i := range msgs {
		results[i] = publishBatchResult{Id: entries[i].Id, MessageId: results[first[i]].MessageId, SequenceNumber: results[first[i]].SequenceNumber}
	}
	if len(fresh) > 0 {
		if err := s.fanout(ctx, t, fresh); err != nil {
			s.release(ctx, t, fresh)
			return s.batchFailed(ctx, entries, err)
		}
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
