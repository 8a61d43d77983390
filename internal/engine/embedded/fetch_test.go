package embedded

import (
	"crypto/rand"
	"reflect"
	"testing"

	"github.com/google/uuid"

	"github.com/ferrymq/ferry/internal/engine"
)

func TestMessageIDs(t *testing.T) {
	for _, n := range []int{1, 2, 10} {
		rnd := make([]byte, 16*n)
		if _, err := rand.Read(rnd); err != nil {
			t.Fatal(err)
		}
		ids := messageIDs(rnd)
		for i := range n {
			want := uuid.UUID(rnd[16*i : 16*i+16])
			want[6] = want[6]&0x0f | 0x40
			want[8] = want[8]&0x3f | 0x80
			got := messageID(ids, i)
			if got != want.String() {
				t.Errorf("n=%d id %d = %q, want %q", n, i, got, want)
			}
			if u, err := uuid.Parse(got); err != nil || u.Version() != 4 || u.Variant() != uuid.RFC4122 {
				t.Errorf("id %q: %v, version %d, variant %v", got, err, u.Version(), u.Variant())
			}
		}
	}
}

// A receive decodes its messages out of shared allocations; each message
// must still own its data.
func TestReceiveMessagesIndependent(t *testing.T) {
	e := openTest(t, Options{InMemory: true})
	mustCreate(t, e, engine.Queue{Name: "q", Settings: settings()})
	var sent []engine.NewMessage
	for i, body := range []string{"a", "bb", "ccc"} {
		m := engine.NewMessage{Body: body}
		for j := range i + 1 {
			m.Attributes = append(m.Attributes, engine.MessageAttribute{Name: "n" + string(rune('0'+j)), DataType: "String", StringValue: body})
		}
		sent = append(sent, m)
	}
	sent = append(sent, engine.NewMessage{Body: "no attributes"})
	mustSend(t, e, "q", sent...)
	got := mustReceive(t, e, "q", engine.ReceiveRequest{Max: 10})
	if len(got) != len(sent) {
		t.Fatalf("received %d of %d", len(got), len(sent))
	}
	handles := map[string]bool{}
	for i, m := range got {
		if m.Body != sent[i].Body || !reflect.DeepEqual(m.Attributes, sent[i].Attributes) {
			t.Errorf("message %d = %q %v, want %q %v", i, m.Body, m.Attributes, sent[i].Body, sent[i].Attributes)
		}
		if _, ok := e.signer.parse(m.ReceiptHandle); !ok || handles[m.ReceiptHandle] {
			t.Errorf("message %d: bad or repeated handle %q", i, m.ReceiptHandle)
		}
		handles[m.ReceiptHandle] = true
	}
	// Growing one message's attributes leaves the next one's alone.
	got[1].Attributes = append(got[1].Attributes, engine.MessageAttribute{Name: "x"})
	if !reflect.DeepEqual(got[2].Attributes, sent[2].Attributes) {
		t.Errorf("message 2 attributes changed to %v", got[2].Attributes)
	}
}
