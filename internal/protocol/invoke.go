package protocol

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
)

// Invoke runs one action in-process, as a JSON request signed for account
// in region would run it: in (any value encoding/json can write, with the
// action's JSON member names) is decoded along the action's input, the
// action runs with the same validation as on the wire, and its output is
// written as JSON and read into out (nil: ignored). service is the
// action's SigV4 signing name ("sqs", "sns", "monitoring"). An error the
// action answers is its *Error; an unexpected one is wrapped.
//
// Ferry's own features that act on topology (the start-up file) call the
// services this way rather than around them, so that what they create is
// checked exactly as an SDK's request would be.
func (h *Handler) Invoke(ctx context.Context, info RequestInfo, service, action string, in, out any) error {
	var svc *Service
	for _, s := range h.Services {
		if s.SigningName == service {
			svc = s
			break
		}
	}
	if svc == nil {
		return fmt.Errorf("invoke %s %s: no such service", service, action)
	}
	a, ok := svc.Actions[action]
	if !ok {
		return fmt.Errorf("invoke %s %s: no such action", service, action)
	}
	body, err := json.Marshal(in)
	if err != nil {
		return fmt.Errorf("invoke %s: encode input: %w", action, err)
	}
	input := a.NewInput()
	if err := h.decodeJSONInput(a.InputType, body, input); err != nil {
		return err
	}
	var id [requestIDLen]byte
	info.RequestID = h.ids.format(&id)
	info.Protocol = "json"
	output, err := a.Handle(WithInfo(ctx, &info), input)
	if err != nil {
		return err
	}
	if out == nil {
		return nil
	}
	var b bytes.Buffer
	if err := h.encodeJSONOutput(&b, a, output); err != nil {
		return fmt.Errorf("invoke %s: encode output: %w", action, err)
	}
	if err := json.Unmarshal(b.Bytes(), out); err != nil {
		return fmt.Errorf("invoke %s: decode output: %w", action, err)
	}
	return nil
}
