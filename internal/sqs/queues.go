package sqs

import (
	"context"
	"encoding/base64"
	"errors"

	"github.com/ferrymq/ferry/internal/engine"
	"github.com/ferrymq/ferry/internal/protocol"
)

const maxListQueues = 1000

func (s *service) createQueue(ctx context.Context, in *CreateQueueInput) (*CreateQueueOutput, error) {
	name := in.QueueName
	if name == "" {
		return nil, missingParameter("QueueName")
	}
	// FifoQueue=true (any case) makes a FIFO queue; "false" is left for
	// applyAttributes, which refuses it as a standard queue's unknown
	// attribute, as AWS does.
	fifo := false
	if v, ok := in.Attributes[attrFifoQueue]; ok {
		b, valid := parseBool(v)
		if !valid {
			return nil, invalidAttributeValue(attrFifoQueue)
		}
		fifo = b
	}
	defaults := defaultAttributes()
	switch {
	case fifo && !validFifoQueueName(name):
		return nil, invalidParameter("The name of a FIFO queue can only include alphanumeric characters, hyphens, or underscores, must end with .fifo suffix and be 1 to 80 in length")
	case fifo:
		defaults = fifoDefaultAttributes()
	case !validQueueName(name):
		// A .fifo name without FifoQueue=true lands here too.
		return nil, invalidParameter("Can only include alphanumeric characters, hyphens, or underscores. 1 to 80 in length")
	}
	attrs, perr := applyAttributes(defaults, in.Attributes)
	if perr != nil {
		return nil, perr
	}
	if perr := checkTags(in.Tags); perr != nil {
		return nil, perr
	}
	if len(in.Tags) > maxTags {
		return nil, tooManyTags(name)
	}
	ref := s.own(ctx, name)
	if err := s.checkRedriveTarget(ctx, ref, isFifo(attrs), in.Attributes); err != nil {
		return nil, err
	}
	now := s.clock.Now()
	q := engine.Queue{
		Account:    ref.owner,
		Name:       name,
		ARN:        ref.arn(),
		Attributes: attrs,
		Tags:       in.Tags,
		Settings:   settingsOf(attrs, s.region),
		Created:    now,
		Modified:   now,
	}
	existing, created, err := s.backend.CreateQueue(ctx, q)
	if err != nil {
		return nil, s.engineError(err, "create queue "+name)
	}
	// Creating an existing queue succeeds only with the same attributes,
	// omitted ones counting at their defaults; tags are not compared.
	if !created {
		if diff := firstDifference(attrs, existing.Attributes); diff != "" {
			return nil, queueNameExists(diff)
		}
	} else {
		s.log.DebugContext(ctx, "queue created", "queue", name)
	}
	return &CreateQueueOutput{QueueUrl: s.queueURL(ctx, ref)}, nil
}

func (s *service) getQueueURL(ctx context.Context, in *GetQueueUrlInput) (*GetQueueUrlOutput, error) {
	if in.QueueName == "" {
		return nil, missingParameter("QueueName")
	}
	owner := s.accountOf(ctx)
	if in.QueueOwnerAWSAccountId != "" {
		owner = in.QueueOwnerAWSAccountId
	}
	if !validAnyQueueName(in.QueueName) || owner != s.accountOf(ctx) && !validAccount(owner) {
		return nil, errQueueDoesNotExist
	}
	ref := s.ref(owner, s.regionOf(ctx), in.QueueName)
	q, err := s.backend.ViewQueue(ctx, ref.owner, ref.name)
	if err != nil {
		return nil, s.loadError(ctx, ref, "GetQueueUrl", err)
	}
	if s.mustAuthorize(ctx, ref) {
		if err := s.authorize(ctx, ref, &q, "GetQueueUrl"); err != nil {
			return nil, err
		}
	}
	return &GetQueueUrlOutput{QueueUrl: s.queueURL(ctx, ref)}, nil
}

// ListQueues pages with an opaque token holding the last name returned.
func (s *service) listQueues(ctx context.Context, in *ListQueuesInput) (*ListQueuesOutput, error) {
	pg, perr := newPaging(in.MaxResults, in.NextToken)
	if perr != nil {
		return nil, perr
	}
	own := s.own(ctx, "")
	queues, err := s.backend.ListQueues(ctx, own.owner, in.QueueNamePrefix)
	if err != nil {
		return nil, s.engineError(err, "list queues")
	}
	names := make([]string, len(queues))
	for i, q := range queues {
		names[i] = q.Name
	}
	names, next := pg.page(names)
	out := &ListQueuesOutput{NextToken: next}
	for _, n := range names {
		own.name = n
		out.QueueUrls = append(out.QueueUrls, s.queueURL(ctx, own))
	}
	return out, nil
}

// paging is ListQueues' and ListDeadLetterSourceQueues' MaxResults and
// NextToken: the token holds the last name returned.
type paging struct {
	limit int
	paged bool // MaxResults was given
	after string
}

func newPaging(maxResults *int, nextToken string) (paging, *protocol.Error) {
	pg := paging{limit: maxListQueues}
	if maxResults != nil {
		if *maxResults < 1 || *maxResults > maxListQueues {
			return pg, invalidValue(*maxResults, "MaxResults", "MaxResults must be an integer between 1 and 1000.")
		}
		pg.limit, pg.paged = *maxResults, true
	}
	if nextToken != "" {
		b, err := base64.RawURLEncoding.DecodeString(nextToken)
		if err != nil || len(b) == 0 {
			return pg, invalidParameter("Invalid NextToken value.")
		}
		pg.after = string(b)
	}
	return pg, nil
}

// page cuts sorted names to the page after the token and returns the next
// token, empty when nothing remains.
func (pg paging) page(names []string) ([]string, string) {
	start := 0
	if pg.after != "" {
		for start < len(names) && names[start] <= pg.after {
			start++
		}
	}
	names = names[start:]
	if len(names) <= pg.limit {
		return names, ""
	}
	names = names[:pg.limit]
	// Without MaxResults AWS lists up to 1000 and never pages.
	if !pg.paged {
		return names, ""
	}
	return names, base64.RawURLEncoding.EncodeToString([]byte(names[pg.limit-1]))
}

func (s *service) deleteQueue(ctx context.Context, in *QueueInput) (*EmptyOutput, error) {
	ref, err := s.target(ctx, in.QueueUrl, "DeleteQueue")
	if err != nil {
		return nil, err
	}
	if err := s.backend.DeleteQueue(ctx, ref.owner, ref.name); err != nil {
		return nil, s.engineError(err, "delete queue "+ref.name)
	}
	s.log.DebugContext(ctx, "queue deleted", "queue", ref.name)
	return &EmptyOutput{}, nil
}

func (s *service) getQueueAttributes(ctx context.Context, in *GetQueueAttributesInput) (*GetQueueAttributesOutput, error) {
	q, err := s.getQueue(ctx, in.QueueUrl, "GetQueueAttributes")
	if err != nil {
		return nil, err
	}
	want, perr := selectAttributes(in.AttributeNames)
	if perr != nil {
		return nil, perr
	}
	if len(want) == 0 {
		return &GetQueueAttributesOutput{}, nil
	}
	var stats engine.Stats
	if needsStats(want) {
		if stats, err = s.backend.Stats(ctx, q.Account, q.Name); err != nil {
			return nil, s.engineError(err, "stats of "+q.Name)
		}
	}
	return &GetQueueAttributesOutput{Attributes: queueAttributes(q, s.refOf(&q).arn(), stats, want)}, nil
}

func (s *service) setQueueAttributes(ctx context.Context, in *SetQueueAttributesInput) (*EmptyOutput, error) {
	if in.Attributes == nil {
		return nil, missingParameter("Attributes")
	}
	if _, ok := in.Attributes[attrRedrivePolicy]; ok {
		// The target is checked outside the queue's update, which must not
		// wait on another queue; the source's type never changes.
		q, err := s.getQueue(ctx, in.QueueUrl, "SetQueueAttributes")
		if err != nil {
			return nil, err
		}
		if _, perr := applyAttributes(q.Attributes, in.Attributes); perr != nil {
			return nil, perr
		}
		if err := s.checkRedriveTarget(ctx, s.refOf(&q), isFifo(q.Attributes), in.Attributes); err != nil {
			return nil, err
		}
	}
	now := s.clock.Now()
	err := s.updateQueue(ctx, in.QueueUrl, "SetQueueAttributes", func(q *engine.Queue) *protocol.Error {
		attrs, perr := applyAttributes(q.Attributes, in.Attributes)
		if perr != nil {
			return perr
		}
		q.Attributes = attrs
		q.Settings = settingsOf(attrs, s.region)
		q.Modified = now
		if q.ARN == "" {
			q.ARN = s.refOf(q).arn()
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &EmptyOutput{}, nil
}

func (s *service) purgeQueue(ctx context.Context, in *QueueInput) (*EmptyOutput, error) {
	ref, err := s.target(ctx, in.QueueUrl, "PurgeQueue")
	if err != nil {
		return nil, err
	}
	if err := s.backend.Purge(ctx, ref.owner, ref.name); err != nil {
		if errors.Is(err, engine.ErrPurgeInProgress) {
			return nil, purgeInProgress(ref.name)
		}
		return nil, s.engineError(err, "purge "+ref.name)
	}
	s.log.DebugContext(ctx, "queue purged", "queue", ref.name)
	return &EmptyOutput{}, nil
}

// updateQueue applies fn to the queue QueueUrl names, under the engine's
// lock, once action is authorized on it; fn's *protocol.Error comes back
// as is.
func (s *service) updateQueue(ctx context.Context, queueURL, action string, fn func(*engine.Queue) *protocol.Error) error {
	ref, err := s.target(ctx, queueURL, action)
	if err != nil {
		return err
	}
	name := ref.name
	err = s.backend.UpdateQueue(ctx, ref.owner, name, func(q *engine.Queue) error {
		if perr := fn(q); perr != nil {
			return perr
		}
		return nil
	})
	if err != nil {
		return s.engineError(err, "update "+name)
	}
	return nil
}
