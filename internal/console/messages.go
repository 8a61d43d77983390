package console

import (
	"context"
	"encoding/base64"
	"errors"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/ferrymq/ferry/internal/engine"
)

// summaryBody is how many characters of a body a page of messages shows.
const summaryBody = 512

// Limits of a page of messages.
const (
	defaultMessageLimit = 50
	maxRefs             = 1000 // refs one call names
)

// attributeView is a message attribute as the console shows it.
type attributeView struct {
	DataType    string  `json:"dataType"`
	StringValue *string `json:"stringValue,omitempty"`
	BinaryValue *string `json:"binaryValue,omitempty"` // base64
}

// messageSummary is a message as a page of messages shows it.
type messageSummary struct {
	Ref                 string                   `json:"ref"`
	MessageID           string                   `json:"messageId"`
	Body                string                   `json:"body"`
	BodySize            int                      `json:"bodySize"`
	Truncated           bool                     `json:"truncated"`
	State               string                   `json:"state"`
	VisibleAt           *string                  `json:"visibleAt"`
	ReceiveCount        int                      `json:"receiveCount"`
	SentAt              string                   `json:"sentAt"`
	FirstReceiveAt      *string                  `json:"firstReceiveAt"`
	DeadLetterSourceARN *string                  `json:"deadLetterSourceArn"`
	GroupID             *string                  `json:"groupId"`
	SequenceNumber      *string                  `json:"sequenceNumber"`
	Attributes          map[string]attributeView `json:"attributes"`
}

// messageDetail is a message with all the console knows of it.
type messageDetail struct {
	messageSummary
	MD5OfBody              string            `json:"md5OfBody"`
	MD5OfMessageAttributes string            `json:"md5OfMessageAttributes"`
	DeduplicationID        string            `json:"deduplicationId"`
	SenderID               string            `json:"senderId"`
	TraceHeader            string            `json:"traceHeader"`
	SystemAttributes       map[string]string `json:"systemAttributes"`
	History                any               `json:"history"`
}

func summarizeMessage(m *engine.PeekedMessage, whole bool) messageSummary {
	s := messageSummary{Ref: m.Ref, MessageID: m.MessageID, Body: m.Body, BodySize: len(m.Body), State: string(m.State),
		VisibleAt: optTime(m.VisibleAt), ReceiveCount: m.ReceiveCount, SentAt: timeString(m.SentAt),
		FirstReceiveAt: optTime(m.FirstReceiveAt), DeadLetterSourceARN: optString(m.DeadLetterSourceARN),
		GroupID: optString(m.MessageGroupID), SequenceNumber: optString(m.SequenceNumber),
		Attributes: make(map[string]attributeView, len(m.Attributes))}
	if !whole && utf8.RuneCountInString(m.Body) > summaryBody {
		n, i := 0, 0
		for i = range m.Body {
			if n == summaryBody {
				break
			}
			n++
		}
		s.Body, s.Truncated = m.Body[:i], true
	}
	for _, a := range m.Attributes {
		v := attributeView{DataType: a.DataType}
		if strings.HasPrefix(a.DataType, "Binary") {
			b := base64.StdEncoding.EncodeToString(a.BinaryValue)
			v.BinaryValue = &b
		} else {
			sv := a.StringValue
			v.StringValue = &sv
		}
		s.Attributes[a.Name] = v
	}
	return s
}

type messagePage struct {
	Messages []messageSummary `json:"messages"`
	Next     string           `json:"next"`
	Scanned  int              `json:"scanned"`
}

// messages answers a page of a queue's messages, peeked: nothing changes.
func (c *Console) messages(w http.ResponseWriter, r *http.Request, a *access) {
	q := r.URL.Query()
	limit, err := parseLimit(q.Get("limit"), q.Has("limit"), defaultMessageLimit, engine.PeekMaxLimit)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	req := engine.PeekRequest{Limit: limit, Filter: engine.PeekFilter{BodyContains: q.Get("body"),
		AttributeName: q.Get("attribute"), AttributeValue: q.Get("value"), MessageID: q.Get("id")}}
	if after := q.Get("after"); after != "" {
		var ok bool
		if req.After, ok = c.openCursor(after); !ok {
			c.fail(w, r, badRequest("after %q is not a cursor this console handed out", after))
			return
		}
	}
	switch st := engine.MessageState(q.Get("state")); st {
	case "", engine.StateVisible, engine.StateInFlight, engine.StateDelayed:
		req.Filter.State = st
	default:
		c.fail(w, r, badRequest("state %q: want visible, inflight or delayed", st))
		return
	}
	if req.Filter.AttributeValue != "" && req.Filter.AttributeName == "" {
		c.fail(w, r, badRequest("value needs attribute: the name of the attribute whose value to match"))
		return
	}
	p := c.b.Peeker()
	name := r.PathValue("name")
	page, err := p.Peek(r.Context(), a.account, name, req)
	if err != nil {
		c.fail(w, r, queueErr(err, name, a.account))
		return
	}
	out := messagePage{Messages: make([]messageSummary, len(page.Messages)), Next: c.signCursor(page.Next), Scanned: page.Scanned}
	for i := range page.Messages {
		out.Messages[i] = summarizeMessage(&page.Messages[i], false)
	}
	writeJSON(w, http.StatusOK, out)
}

// queueErr is a missing queue as the console's 404; other errors as
// they are.
func queueErr(err error, name, account string) error {
	if errors.Is(err, engine.ErrQueueNotFound) {
		return notFound("queue %q does not exist in account %s", name, account)
	}
	return err
}

// peekOne is the message ref names in account's queue; 404 when gone.
func (c *Console) peekOne(ctx context.Context, account, name, ref string) (*engine.PeekedMessage, error) {
	ms, err := c.b.Peeker().PeekRefs(ctx, account, name, []string{ref})
	if err != nil {
		return nil, queueErr(err, name, account)
	}
	if len(ms) == 0 {
		return nil, notFound("the message is no longer in queue %q", name)
	}
	return &ms[0], nil
}

func (c *Console) message(w http.ResponseWriter, r *http.Request, a *access) {
	m, err := c.peekOne(r.Context(), a.account, r.PathValue("name"), r.PathValue("ref"))
	if err != nil {
		c.fail(w, r, err)
		return
	}
	out := messageDetail{messageSummary: summarizeMessage(m, true), MD5OfBody: m.MD5OfBody,
		MD5OfMessageAttributes: m.MD5OfAttrs, DeduplicationID: m.DeduplicationID, SenderID: m.SenderID,
		TraceHeader: m.TraceHeader, SystemAttributes: c.b.SystemAttributes(&m.Message)}
	if m.History != nil {
		out.History = c.b.History(*m.History)
	}
	writeJSON(w, http.StatusOK, out)
}

// checkRefs refuses an empty or oversized list of refs.
func checkRefs(refs []string) error {
	if len(refs) == 0 {
		return badRequest("refs: name at least one message")
	}
	if len(refs) > maxRefs {
		return badRequest("refs: at most %d at a time", maxRefs)
	}
	return nil
}

func (c *Console) deleteMessages(w http.ResponseWriter, r *http.Request, a *access) {
	var in struct {
		Refs []string `json:"refs"`
	}
	if err := decode(w, r, &in); err != nil {
		c.fail(w, r, err)
		return
	}
	if err := checkRefs(in.Refs); err != nil {
		c.fail(w, r, err)
		return
	}
	name := r.PathValue("name")
	n, err := c.b.DeleteRefs(r.Context(), a.account, name, in.Refs)
	if err != nil {
		c.fail(w, r, queueErr(err, name, a.account))
		return
	}
	writeJSON(w, http.StatusOK, map[string]int{"deleted": n})
}
