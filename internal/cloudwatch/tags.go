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
	name, ok := strings.CutPrefix(arn, s.alarmARN(s.ownerOf(ctx), ""))
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
	a, err := lookup(ctx, s.alarmKey(s.ownerOf(ctx), name))
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
	err := s.changeTags(ctx, in.ResourceARN, "tag alarm", func(c *alarm) error {
		for _, t := range in.Tags {
			i := slices.IndexFunc(c.Tags, func(x Tag) bool { return x.Key == t.Key })
			if i >= 0 {
				c.Tags[i].Value = t.Value
			} else {
				c.Tags = append(c.Tags, t)
			}
		}
		if len(c.Tags) > maxTags {
			return invalidValue("The number of tags of %s would exceed the limit of %d.", in.ResourceARN, maxTags)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
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
	err := s.changeTags(ctx, in.ResourceARN, "untag alarm", func(c *alarm) error {
		c.Tags = slices.DeleteFunc(c.Tags, func(t Tag) bool { return slices.Contains(in.TagKeys, t.Key) })
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &EmptyOutput{}, nil
}

// changeTags applies fn to a copy of the tags of the alarm arn names, as
// stored, and saves the copy, again on the stored alarm when another node
// changed it first.
func (s *Service) changeTags(ctx context.Context, arn, op string, fn func(c *alarm) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return retryRaces(func() error {
		a, err := s.alarmByARN(ctx, arn, true)
		if err != nil {
			return err
		}
		c := *a
		c.Tags = slices.Clone(a.Tags)
		if err := fn(&c); err != nil {
			return err
		}
		if err := s.save(ctx, &c); err != nil {
			if err == errLostRace {
				return err
			}
			return s.internal(ctx, op, err)
		}
		s.alarms[s.key(&c)] = &c
		return nil
	})
}
