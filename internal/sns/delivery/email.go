package delivery

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
	"github.com/ferrymq/ferry/internal/sns/filterpolicy"
)

// smtpTimeout bounds one SMTP conversation.
const smtpTimeout = 30 * time.Second

// AttrList is a message attribute map as a list sorted by name (nil when
// empty), as SQS takes attributes.
func AttrList(attrs map[string]filterpolicy.Attribute) []engine.MessageAttribute {
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

// defaultEmailTitle is the subject of a notification published without
// one.
const defaultEmailTitle = "AWS Notification Message"

// mailer sends email through an SMTP server; without addr, emails are
// only recorded.
type mailer struct {
	addr, from string
}

// email is one message to send.
type email struct {
	fromName, subject, body string
}

// emailFor composes what an email subscription receives for a job.
func (d *Service) emailFor(t *Topic, sub *Subscription, j *job) (email, error) {
	e := email{fromName: t.attrs[AttrDisplayName]}
	if e.fromName == "" {
		e.fromName = "AWS Notifications"
	}
	if j.Type == TypeSubscriptionConfirmation {
		e.subject = "AWS Notification - Subscription Confirmation"
		if sub.Protocol == ProtoEmailJSON {
			c, err := d.subscriptionConfirmation(t, j)
			if err != nil {
				return e, err
			}
			b, err := c.JSON()
			e.body = string(b)
			return e, err
		}
		e.body = "You have chosen to subscribe to the topic: \n" + t.ARN +
			"\n\nTo confirm this subscription, click or visit the link below (If this was in error no action is necessary): \n" +
			d.env.subscribeURL(t.ARN, j.Token) + "\n"
		return e, nil
	}
	e.subject = j.Subject
	if e.subject == "" {
		e.subject = defaultEmailTitle
	}
	if sub.Protocol == ProtoEmailJSON {
		n, err := d.Notification(t, j.message(), j.Message, sub.ARN)
		if err != nil {
			return e, err
		}
		b, err := n.JSON()
		e.body = string(b)
		return e, err
	}
	e.body = j.Message + "\n\n--\nIf you wish to stop receiving notifications from this topic, please click or visit the link below to unsubscribe:\n" +
		d.env.unsubscribeURL(sub.ARN) + "\n"
	return e, nil
}

func (d *Service) attemptEmail(ctx context.Context, t *Topic, sub *Subscription, j *job) outcome {
	e, err := d.emailFor(t, sub, j)
	if err != nil {
		d.log.Error("sns: compose email", "err", err)
		return permanent
	}
	if d.mail.addr == "" {
		d.records.add(Record{Protocol: sub.Protocol, Endpoint: sub.Endpoint, SubscriptionArn: sub.ARN, TopicArn: t.ARN,
			Type: j.Type, MessageId: j.MessageID, Subject: e.subject, Message: j.Message, Body: e.body, Timestamp: FormatTimestamp(d.now())})
		return delivered
	}
	err = d.sendMail(ctx, sub.Endpoint, e)
	if err == nil {
		return delivered
	}
	d.log.Debug("sns: email delivery failed", "to", sub.Endpoint, "err", err)
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
func (d *Service) sendMail(ctx context.Context, to string, e email) error {
	dialer := net.Dialer{Timeout: smtpTimeout}
	conn, err := dialer.DialContext(ctx, "tcp", d.mail.addr)
	if err != nil {
		return fmt.Errorf("smtp dial: %w", err)
	}
	_ = conn.SetDeadline(time.Now().Add(smtpTimeout)) // an I/O timeout: the wall clock
	host, _, _ := net.SplitHostPort(d.mail.addr)
	c, err := smtp.NewClient(conn, host)
	if err != nil {
		conn.Close()
		return fmt.Errorf("smtp hello: %w", err)
	}
	defer c.Close()
	if err := c.Mail(d.mail.from); err != nil {
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
	fmt.Fprintf(&b, "From: %s <%s>\r\n", mime.QEncoding.Encode("UTF-8", headerValue(e.fromName)), d.mail.from)
	fmt.Fprintf(&b, "To: %s\r\n", headerValue(to))
	fmt.Fprintf(&b, "Subject: %s\r\n", mime.QEncoding.Encode("UTF-8", headerValue(e.subject)))
	fmt.Fprintf(&b, "Date: %s\r\n", d.now().Format(time.RFC1123Z))
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
