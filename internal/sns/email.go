package sns

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"mime"
	"net"
	"net/smtp"
	"net/textproto"
	"slices"
	"strings"
	"time"

	"github.com/ferrymq/ferry/internal/engine"
)

// smtpTimeout bounds one SMTP conversation.
const smtpTimeout = 30 * time.Second

// attrList is a message attribute map as a list sorted by name.
func attrList(attrs map[string]MessageAttribute) []engine.MessageAttribute {
	if len(attrs) == 0 {
		return nil
	}
	out := make([]engine.MessageAttribute, 0, len(attrs))
	for _, name := range slices.Sorted(maps.Keys(attrs)) {
		a := attrs[name]
		out = append(out, engine.MessageAttribute{Name: name, DataType: a.DataType, StringValue: a.StringValue, BinaryValue: a.BinaryValue})
	}
	return out
}

// email is one message to send.
type email struct {
	fromName, subject, body string
}

// emailFor composes what an email subscription receives for a job.
func (s *Service) emailFor(t *topic, sub *subscription, j *job) (email, error) {
	e := email{fromName: t.Attrs[attrDisplayName]}
	if e.fromName == "" {
		e.fromName = "AWS Notifications"
	}
	if j.Type == TypeSubscriptionConfirmation {
		e.subject = "AWS Notification - Subscription Confirmation"
		if sub.Protocol == protoEmailJSON {
			c, err := s.confirmation(t, j)
			if err != nil {
				return e, err
			}
			b, err := c.JSON()
			e.body = string(b)
			return e, err
		}
		e.body = "You have chosen to subscribe to the topic: \n" + t.ARN +
			"\n\nTo confirm this subscription, click or visit the link below (If this was in error no action is necessary): \n" +
			s.subscribeURL(t.ARN, j.Token) + "\n"
		return e, nil
	}
	e.subject = j.Subject
	if e.subject == "" {
		e.subject = defaultEmailTitle
	}
	if sub.Protocol == protoEmailJSON {
		n, err := s.notification(t, jobMessage(j), j.Message, sub.ARN)
		if err != nil {
			return e, err
		}
		b, err := n.JSON()
		e.body = string(b)
		return e, err
	}
	e.body = j.Message + "\n\n--\nIf you wish to stop receiving notifications from this topic, please click or visit the link below to unsubscribe:\n" +
		s.unsubscribeURL(sub.ARN) + "\n"
	return e, nil
}

func (s *Service) attemptEmail(ctx context.Context, t *topic, sub *subscription, j *job) outcome {
	e, err := s.emailFor(t, sub, j)
	if err != nil {
		s.log.Error("sns: compose email", "err", err)
		return permanent
	}
	if s.smtpAddr == "" {
		s.deliveries.add(Delivery{Protocol: sub.Protocol, Endpoint: sub.Endpoint, SubscriptionArn: sub.ARN, TopicArn: t.ARN,
			Type: j.Type, MessageId: j.MessageID, Subject: e.subject, Message: j.Message, Body: e.body, Timestamp: FormatTimestamp(s.timeNow())})
		return delivered
	}
	err = s.sendMail(ctx, sub.Endpoint, e)
	if err == nil {
		return delivered
	}
	s.log.Debug("sns: email delivery failed", "to", sub.Endpoint, "err", err)
	var perr *textproto.Error
	if errors.As(err, &perr) && perr.Code >= 500 {
		return permanent // the server refused this address or message
	}
	return retryable
}

// headerValue keeps a header value on one line.
func headerValue(s string) string {
	return strings.NewReplacer("\r", " ", "\n", " ").Replace(s)
}

// sendMail sends one plain-text UTF-8 email through the SMTP server.
func (s *Service) sendMail(ctx context.Context, to string, e email) error {
	d := net.Dialer{Timeout: smtpTimeout}
	conn, err := d.DialContext(ctx, "tcp", s.smtpAddr)
	if err != nil {
		return fmt.Errorf("smtp dial: %w", err)
	}
	_ = conn.SetDeadline(time.Now().Add(smtpTimeout))
	host, _, _ := net.SplitHostPort(s.smtpAddr)
	c, err := smtp.NewClient(conn, host)
	if err != nil {
		conn.Close()
		return fmt.Errorf("smtp hello: %w", err)
	}
	defer c.Close()
	if err := c.Mail(s.smtpFrom); err != nil {
		return err
	}
	if err := c.Rcpt(to); err != nil {
		return err
	}
	w, err := c.Data()
	if err != nil {
		return err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "From: %s <%s>\r\n", mime.QEncoding.Encode("UTF-8", headerValue(e.fromName)), s.smtpFrom)
	fmt.Fprintf(&b, "To: %s\r\n", headerValue(to))
	fmt.Fprintf(&b, "Subject: %s\r\n", mime.QEncoding.Encode("UTF-8", headerValue(e.subject)))
	fmt.Fprintf(&b, "Date: %s\r\n", s.timeNow().Format(time.RFC1123Z))
	b.WriteString("MIME-Version: 1.0\r\nContent-Type: text/plain; charset=UTF-8\r\nContent-Transfer-Encoding: 8bit\r\n\r\n")
	b.WriteString(strings.ReplaceAll(strings.ReplaceAll(e.body, "\r\n", "\n"), "\n", "\r\n"))
	if _, err := w.Write([]byte(b.String())); err != nil {
		return err
	}
	if err := w.Close(); err != nil {
		return err
	}
	return c.Quit()
}
