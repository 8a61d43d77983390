package sns

import (
	"context"
	"fmt"

	"github.com/ferrymq/ferry/internal/protocol"
)

// Notify publishes message to the topic topicARN on behalf of another
// service (CloudWatch alarm actions), exactly as a Publish of the same
// message and subject would: the same validation, fan-out and counters.
// It publishes in the topic's account: the calling service names only
// topics of its resource's account (CloudWatch checks an alarm's actions
// when the alarm is put). An empty subject sends none. A refusal (no such
// topic, a FIFO topic, a subject SNS does not take) comes back as an
// error with SNS's code and message.
func (s *Service) Notify(ctx context.Context, topicARN, subject, message string) error {
	in := &publishInput{TopicArn: topicARN, Message: message}
	if subject != "" {
		in.Subject = &subject
	}
	ctx = protocol.WithInfo(ctx, &protocol.RequestInfo{Account: arnAccount(topicARN)})
	if _, err := s.publish(ctx, in); err != nil {
		return fmt.Errorf("sns: notify %s: %w", topicARN, err)
	}
	return nil
}
