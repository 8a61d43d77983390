package delivery

import (
	"time"

	"github.com/google/uuid"
)

// Topic attributes that deliveries read.
const (
	AttrDeliveryPolicy   = "DeliveryPolicy"
	AttrSignatureVersion = "SignatureVersion"
	AttrDisplayName      = "DisplayName"
)

// Topic is what deliveries need of a topic. SNS makes one with NewTopic
// whenever the topic changes; deliveries only read it.
type Topic struct {
	ARN, Name string
	FIFO      bool
	attrs     map[string]string
	policy    *topicPolicy // the parsed DeliveryPolicy; nil when unset
	// feedback holds the delivery status settings per FeedbackProtocols;
	// nil when the topic logs no delivery status.
	feedback *[len(FeedbackProtocols)]feedbackConf
}

// NewTopic reads a topic's delivery settings from its attributes, which
// the Topic keeps and nobody may change: its DeliveryPolicy, signature
// version, display name and delivery status attributes. A DeliveryPolicy
// that does not parse is returned as an error; the Topic is made without
// it.
func NewTopic(arn, name string, fifo bool, attrs map[string]string) (*Topic, error) {
	t := &Topic{ARN: arn, Name: name, FIFO: fifo, attrs: attrs, feedback: parseFeedback(attrs)}
	if raw := attrs[AttrDeliveryPolicy]; raw != "" {
		p, perr := parseTopicPolicy(raw)
		if perr != nil {
			return t, perr
		}
		t.policy = p
	}
	return t, nil
}

// SignatureVersion is the version its envelopes are signed with.
func (t *Topic) SignatureVersion() string {
	if v := t.attrs[AttrSignatureVersion]; v != "" {
		return v
	}
	return SignatureVersion1
}

// envelopes makes a service's signed envelopes: its signing key, and the
// base URL the envelopes' links point to.
type envelopes struct {
	keys *keyring
	base string
}

// signer returns the signing key and SigningCertURL, where subscribers
// fetch its certificate.
func (e *envelopes) signer() (*Signer, string, error) {
	k, err := e.keys.get()
	if err != nil {
		return nil, "", err
	}
	return k, e.base + "/" + k.CertFileName(), nil
}

// subscribeURL and unsubscribeURL carry ARNs unescaped, as AWS writes
// them: their characters are all legal in a query.
func (e *envelopes) subscribeURL(topicARN, token string) string {
	return e.base + "/?Action=ConfirmSubscription&TopicArn=" + topicARN + "&Token=" + token
}

func (e *envelopes) unsubscribeURL(subARN string) string {
	return e.base + "/?Action=Unsubscribe&SubscriptionArn=" + subARN
}

// Notification is m's envelope, carrying text, for the subscription subARN.
func (d *Service) Notification(t *Topic, m *Message, text, subARN string) (*Notification, error) {
	n := &Notification{
		MessageID:         m.ID,
		SequenceNumber:    m.Sequence,
		TopicARN:          t.ARN,
		Subject:           m.Subject,
		Message:           text,
		Timestamp:         m.Timestamp,
		SignatureVersion:  t.SignatureVersion(),
		UnsubscribeURL:    d.env.unsubscribeURL(subARN),
		MessageAttributes: m.Delivered(),
	}
	if t.FIFO {
		return n, nil
	}
	signer, certURL, err := d.env.signer()
	if err != nil {
		return nil, err
	}
	n.SigningCertURL = certURL
	// The signature covers no per-subscription field: sign each text once.
	m.sigMu.Lock()
	defer m.sigMu.Unlock()
	key := n.SignatureVersion + "\x00" + text
	if sig, ok := m.sigs[key]; ok {
		n.Signature = sig
		return n, nil
	}
	if err := n.Sign(signer); err != nil {
		return nil, err
	}
	if m.sigs == nil {
		m.sigs = map[string]string{}
	}
	m.sigs[key] = n.Signature
	return n, nil
}

// SubscriptionConfirmation is a new signed SubscriptionConfirmation
// carrying token, for a subscriber SNS writes to directly rather than
// through a delivery queue (an SQS queue of another account).
func (d *Service) SubscriptionConfirmation(t *Topic, token string) (*Confirmation, error) {
	return d.confirmation(t, TypeSubscriptionConfirmation, uuid.NewString(), token, "", d.now())
}

// confirmation is the signed confirmation of type typ for a subscription
// of t, with its token and id.
func (d *Service) confirmation(t *Topic, typ, id, token, subARN string, at time.Time) (*Confirmation, error) {
	signer, certURL, err := d.env.signer()
	if err != nil {
		return nil, err
	}
	c := &Confirmation{
		Type:             typ,
		MessageID:        id,
		Token:            token,
		TopicARN:         t.ARN,
		SubscriptionARN:  subARN,
		SubscribeURL:     d.env.subscribeURL(t.ARN, token),
		Timestamp:        at,
		SignatureVersion: t.SignatureVersion(),
		SigningCertURL:   certURL,
	}
	if err := c.Sign(signer); err != nil {
		return nil, err
	}
	return c, nil
}
