package sns

import (
	"context"
	"fmt"
)

// Notify publishes message to the topic topicARN on behalf of another
// service (CloudWatch alarm actions), exactly as a Publish of the same
// message and subject would: the same validation, fan-out and counters.
// An empty subject sends none. A refusal (no such topic, a FIFO topic,
// a subject SNS does not take) comes back as an error with SNS's code and
// message.
func (s *Service) Notify(ctx context.Context, topicARN, subject, message string) error {
	in := &publishInput{TopicArn: topicARN, Message: message}
	if subject != "" {
		in.Subject = &subject
	}
	if _, err := s.publish(ctx, in); err != nil {
		return fmt.Errorf("sns: notify %s: %w", topicARN, err)
	}
	return nil
}
