package sqs

import (
	"context"
	"maps"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/ferrymq/ferry/internal/engine"
	"github.com/ferrymq/ferry/internal/protocol"
)

const (
	maxTagKeyLen   = 128
	maxTagValueLen = 256
	maxTags        = 50
)

// checkTags validates each tag; keys are checked in sorted order for a
// deterministic answer. The count is checked on the merged set.
func checkTags(tags map[string]string) *protocol.Error {
	for _, k := range slices.Sorted(maps.Keys(tags)) {
		v := tags[k]
		if n := utf8.RuneCountInString(k); n < 1 || n > maxTagKeyLen {
			return invalidParameter("Tag keys must be between 1 and 128 characters in length.")
		}
		if utf8.RuneCountInString(v) > maxTagValueLen {
			return invalidParameter("Tag values must be between 0 and 256 characters in length.")
		}
		if strings.HasPrefix(strings.ToLower(k), "aws:") {
			return invalidParameter("Tag keys must not begin with the reserved prefix 'aws:'.")
		}
		if !validTagText(k) || !validTagText(v) {
			return invalidParameter("Tag keys and values may only contain letters, digits, white space and _ . : / = + - @ characters.")
		}
	}
	return nil
}

// validTagText reports whether s uses only the characters AWS allows in
// tags: letters, digits, white space and _ . : / = + - @.
func validTagText(s string) bool {
	for _, r := range s {
		if unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsSpace(r) || strings.ContainsRune("_.:/=+-@", r) {
			continue
		}
		return false
	}
	return true
}

func tooManyTags(queue string) *protocol.Error {
	return invalidParameter("Too many tags added for queue %s.", queue)
}

func (s *service) tagQueue(ctx context.Context, in *TagQueueInput) (*EmptyOutput, error) {
	if len(in.Tags) == 0 {
		return nil, missingParameter("Tags")
	}
	if perr := checkTags(in.Tags); perr != nil {
		return nil, perr
	}
	err := s.updateQueue(ctx, in.QueueUrl, "TagQueue", func(q *engine.Queue) *protocol.Error {
		merged := maps.Clone(q.Tags)
		if merged == nil {
			merged = make(map[string]string, len(in.Tags))
		}
		maps.Copy(merged, in.Tags)
		if len(merged) > maxTags {
			return tooManyTags(q.Name)
		}
		q.Tags = merged
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &EmptyOutput{}, nil
}

func (s *service) untagQueue(ctx context.Context, in *UntagQueueInput) (*EmptyOutput, error) {
	if len(in.TagKeys) == 0 {
		return nil, invalidParameter("Tag keys must be between 1 and 128 characters in length.")
	}
	err := s.updateQueue(ctx, in.QueueUrl, "UntagQueue", func(q *engine.Queue) *protocol.Error {
		if len(q.Tags) == 0 {
			return nil
		}
		kept := maps.Clone(q.Tags)
		for _, k := range in.TagKeys {
			delete(kept, k)
		}
		q.Tags = kept
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &EmptyOutput{}, nil
}

func (s *service) listQueueTags(ctx context.Context, in *QueueInput) (*ListQueueTagsOutput, error) {
	q, err := s.getQueue(ctx, in.QueueUrl, "ListQueueTags")
	if err != nil {
		return nil, err
	}
	if len(q.Tags) == 0 {
		return &ListQueueTagsOutput{}, nil
	}
	return &ListQueueTagsOutput{Tags: maps.Clone(q.Tags)}, nil
}
