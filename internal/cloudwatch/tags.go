package cloudwatch

import (
	"context"
	"slices"
	"strings"
)

// alarmByARN finds the alarm an ARN of this account and region names: as
// a change starts from it (Service.current) if change, else as a read
// finds it (Service.find). The caller holds mu.
func (s *Service) alarmByARN(ctx context.Context, arn string, change bool) (*alarm, error) {
	name, ok := strings.CutPrefix(arn, s.alarmARN(""))
	if !ok || name == "" {
		if strings.HasPrefix(arn, "arn:") {
			return nil, errTagResourceNotFound.WithMessage("%s not found", arn)
		}
		return nil, invalidValue("Invalid ARN: %s", arn)
	}
	lookup := s.find
	if change {
		lookup = s.current
	}
	a, err := lookup(ctx, name)
	if err != nil {
		return nil, s.internal(ctx, "read alarm", err)
	}
	if a == nil {
		return nil, errTagResourceNotFound.WithMessage("%s not found", arn)
	}
	return a, nil
}

func checkARN(arn string) error {
	var v violations
	v.required(arn != "", "resourceARN")
	v.length(nonEmpty(arn), "resourceARN", 1, 1024)
	return v.err()
}

func (s *Service) listTagsForResource(ctx context.Context, in *ResourceARNInput) (*ListTagsForResourceOutput, error) {
	if err := checkARN(in.ResourceARN); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	a, err := s.alarmByARN(ctx, in.ResourceARN, false)
	if err != nil {
		return nil, err
	}
	return &ListTagsForResourceOutput{Tags: slices.Clone(nonNil(a.Tags))}, nil
}

func (s *Service) tagResource(ctx context.Context, in *TagResourceInput) (*EmptyOutput, error) {
	var v violations
	v.required(in.ResourceARN != "", "resourceARN")
	v.length(nonEmpty(in.ResourceARN), "resourceARN", 1, 1024)
	v.required(in.Tags != nil, "tags")
	checkTags(&v, in.Tags)
	if err := v.err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	a, err := s.alarmByARN(ctx, in.ResourceARN, true)
	if err != nil {
		return nil, err
	}
	c := *a
	c.Tags = slices.Clone(a.Tags)
	for _, t := range in.Tags {
		i := slices.IndexFunc(c.Tags, func(x Tag) bool { return x.Key == t.Key })
		if i >= 0 {
			c.Tags[i].Value = t.Value
		} else {
			c.Tags = append(c.Tags, t)
		}
	}
	if len(c.Tags) > maxTags {
		return nil, invalidValue("The number of tags of %s would exceed the limit of %d.", in.ResourceARN, maxTags)
	}
	if err := s.save(ctx, &c); err != nil {
		return nil, s.internal(ctx, "tag alarm", err)
	}
	s.alarms[c.Name] = &c
	return &EmptyOutput{}, nil
}

func (s *Service) untagResource(ctx context.Context, in *UntagResourceInput) (*EmptyOutput, error) {
	var v violations
	v.required(in.ResourceARN != "", "resourceARN")
	v.length(nonEmpty(in.ResourceARN), "resourceARN", 1, 1024)
	v.required(in.TagKeys != nil, "tagKeys")
	if err := v.err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	a, err := s.alarmByARN(ctx, in.ResourceARN, true)
	if err != nil {
		return nil, err
	}
	c := *a
	c.Tags = slices.DeleteFunc(slices.Clone(a.Tags), func(t Tag) bool { return slices.Contains(in.TagKeys, t.Key) })
	if err := s.save(ctx, &c); err != nil {
		return nil, s.internal(ctx, "untag alarm", err)
	}
	s.alarms[c.Name] = &c
	return &EmptyOutput{}, nil
}
