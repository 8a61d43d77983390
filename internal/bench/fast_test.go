package bench

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestFastTemplates decodes each request the templates build with
// encoding/json: what is spliced in must come out as it went in, odd
// characters included.
func TestFastTemplates(t *testing.T) {
	q := newFastQueue(`http://127.0.0.1:4566/000000000000/q"odd\`)
	st := Stamp{Run: "r1", Seq: 42, Sent: time.Unix(0, 7)}
	plain := st.AppendBody(nil)
	for _, tc := range []struct {
		name string
		body []byte
	}{
		{"a stamp's body", plain},
		{"quotes, backslashes, control and non-ASCII", []byte("a\"b\\c\nd\te\x01f é ✓ <&>")},
		{"empty", []byte{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var send struct{ QueueUrl, MessageBody string }
			if err := json.Unmarshal(q.appendSend(nil, tc.body), &send); err != nil {
				t.Fatalf("SendMessage: %v", err)
			}
			if send.QueueUrl != q.url || send.MessageBody != string(tc.body) {
				t.Errorf("SendMessage carries %+v", send)
			}
			var batch struct {
				QueueUrl string
				Entries  []struct{ Id, MessageBody string }
			}
			if err := json.Unmarshal(q.appendSendBatch(nil, [][]byte{tc.body, plain}), &batch); err != nil {
				t.Fatalf("SendMessageBatch: %v", err)
			}
			if batch.QueueUrl != q.url || len(batch.Entries) != 2 || batch.Entries[0].Id != "0" || batch.Entries[1].Id != "1" ||
				batch.Entries[0].MessageBody != string(tc.body) || batch.Entries[1].MessageBody != string(plain) {
				t.Errorf("SendMessageBatch carries %+v", batch)
			}
		})
	}
	if string(q.appendSend(nil, plain)) != `{"QueueUrl":"http://127.0.0.1:4566/000000000000/q\"odd\\","MessageBody":"`+string(plain)+`"}` {
		t.Errorf("a plain body is not spliced in as it is: %s", q.appendSend(nil, plain))
	}

	var recv struct {
		QueueUrl            string
		MaxNumberOfMessages int
		WaitTimeSeconds     int
	}
	if err := json.Unmarshal(q.receive, &recv); err != nil || recv.QueueUrl != q.url || recv.MaxNumberOfMessages != 10 || recv.WaitTimeSeconds != fastWait {
		t.Errorf("ReceiveMessage %+v (%v)", recv, err)
	}

	// Receipt handles go back exactly as the answer wrote them, escapes
	// and all, so the broker reads the handle it gave.
	msgs, err := parseReceive([]byte(`{"Messages":[{"Body":"b","MD5OfBody":"m","ReceiptHandle":"h\u002f1\"x"},`+
		`{"Body":"c","MD5OfBody":"m","ReceiptHandle":"h2"}]}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	var del struct {
		QueueUrl string
		Entries  []struct{ Id, ReceiptHandle string }
	}
	if err := json.Unmarshal(q.appendDelete(nil, msgs), &del); err != nil {
		t.Fatalf("DeleteMessageBatch: %v", err)
	}
	if del.QueueUrl != q.url || len(del.Entries) != 2 || del.Entries[0] != (struct{ Id, ReceiptHandle string }{"0", `h/1"x`}) ||
		del.Entries[1].Id != "1" || del.Entries[1].ReceiptHandle != "h2" {
		t.Errorf("DeleteMessageBatch carries %+v", del)
	}
}

func TestParseReceive(t *testing.T) {
	type msg struct{ body, md5, receipt string }
	for _, tc := range []struct {
		name string
		in   string
		want []msg
		err  bool
	}{
		{"empty answer", `{}`, nil, false},
		{"two messages, other members skipped", ` { "Messages" : [ {"MessageId":"1","ReceiptHandle":"r1","MD5OfBody":"m1","Body":"b1",` +
			`"Attributes":{"SentTimestamp":"1","X":[1,2.5e3,true,null,{"y":-0}]}}, {"Body":"b2","MD5OfBody":"m2","ReceiptHandle":"r2"} ] } `,
			[]msg{{"b1", "m1", "r1"}, {"b2", "m2", "r2"}}, false},
		{"escaped body decoded, receipt kept raw", `{"Messages":[{"Body":"a\"b\u00e9\n","MD5OfBody":"m","ReceiptHandle":"r\/1"}]}`,
			[]msg{{"a\"bé\n", "m", `r\/1`}}, false},
		{"Messages given twice: the last counts", `{"Messages":[{"Body":"x","MD5OfBody":"m","ReceiptHandle":"r"}],"Messages":[]}`, nil, false},
		{"a message without a receipt handle", `{"Messages":[{"Body":"b","MD5OfBody":"m"}]}`, nil, true},
		{"a message without MD5OfBody", `{"Messages":[{"Body":"b","ReceiptHandle":"r"}]}`, nil, true},
		{"Body not a string", `{"Messages":[{"Body":1,"MD5OfBody":"m","ReceiptHandle":"r"}]}`, nil, true},
		{"truncated", `{"Messages":[{"Body":"b","MD5OfBody":"m","Rec`, nil, true},
		{"trailing bytes", `{}x`, nil, true},
		{"bad escape", `{"Messages":[{"Body":"\x","MD5OfBody":"m","ReceiptHandle":"r"}]}`, nil, true},
		{"raw control character", "{\"Messages\":[{\"Body\":\"a\nb\",\"MD5OfBody\":\"m\",\"ReceiptHandle\":\"r\"}]}", nil, true},
		{"bad number in a skipped member", `{"X":01,"Messages":[]}`, nil, true},
		{"too deep", `{"X":` + strings.Repeat("[", 100) + strings.Repeat("]", 100) + `}`, nil, true},
		{"not an object", `[]`, nil, true},
		{"empty", ``, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseReceive([]byte(tc.in), nil)
			if (err != nil) != tc.err {
				t.Fatalf("error %v, want error %v", err, tc.err)
			}
			if err != nil {
				return
			}
			var have []msg
			for _, m := range got {
				have = append(have, msg{string(m.body), string(m.md5), string(m.receipt)})
			}
			if fmt.Sprint(have) != fmt.Sprint(tc.want) {
				t.Errorf("got %q, want %q", have, tc.want)
			}
		})
	}
}

func TestParseSendAndError(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want string
		err  bool
	}{
		{`{"MD5OfMessageBody":"abc","MessageId":"1"}`, "abc", false},
		{`{"MessageId":"1","MD5OfMessageBody":"abc","SequenceNumber":"2"}`, "abc", false},
		{`{"MessageId":"1"}`, "", true},
		{`{"MD5OfMessageBody":null}`, "", true},
	} {
		got, err := parseSend([]byte(tc.in))
		if (err != nil) != tc.err || string(got) != tc.want {
			t.Errorf("%s: got %q, %v", tc.in, got, err)
		}
	}

	for _, tc := range []struct {
		status int
		in     string
		want   string
	}{
		{400, `{"__type":"com.amazonaws.sqs#QueueDoesNotExist","message":"The specified queue does not exist."}`,
			"HTTP 400: QueueDoesNotExist: The specified queue does not exist."},
		{400, `{"__type":"InvalidParameterValue","Message":"bad"}`, "HTTP 400: InvalidParameterValue: bad"},
		{502, `<html>bad gateway</html>`, "HTTP 502: unreadable error answer: <html>bad gateway</html>"},
	} {
		err := parseError(tc.status, []byte(tc.in))
		var api *apiError
		if !errors.As(err, &api) || err.Error() != tc.want {
			t.Errorf("%d %s: %v, want %s", tc.status, tc.in, err, tc.want)
		}
	}
}

// TestSendEntries: a SendMessageBatch answer is booked entry by entry, and
// an entry whose MD5 is not that of what was sent under its Id is not
// acknowledged but counted, as a failed entry or one left out is.
func TestSendEntries(t *testing.T) {
	bodies := [][]byte{[]byte("zero"), []byte("one"), []byte("two")}
	sums := make([][32]byte, len(bodies))
	for i, b := range bodies {
		sums[i] = md5Hex(b)
	}
	ok := func(id string, sum [32]byte) string {
		return fmt.Sprintf(`{"Id":%q,"MessageId":"m","MD5OfMessageBody":%q}`, id, sum[:])
	}
	for _, tc := range []struct {
		name   string
		answer string
		acked  []bool
		bad    int
		first  string
	}{
		{"all taken", `{"Successful":[` + ok("2", sums[2]) + `,` + ok("0", sums[0]) + `,` + ok("1", sums[1]) + `],"Failed":[]}`,
			[]bool{true, true, true}, 0, ""},
		{"a wrong MD5", `{"Successful":[` + ok("0", sums[0]) + `,` + ok("1", sums[2]) + `,` + ok("2", sums[2]) + `],"Failed":[]}`,
			[]bool{true, false, true}, 1, "SendMessageBatch entry: MD5OfMessageBody"},
		{"a failed entry", `{"Successful":[` + ok("0", sums[0]) + `,` + ok("2", sums[2]) + `],` +
			`"Failed":[{"Id":"1","SenderFault":false,"Code":"InternalError","Message":"oops"}]}`,
			[]bool{true, false, true}, 1, "SendMessageBatch entry: InternalError: oops"},
		{"an entry left out", `{"Successful":[` + ok("0", sums[0]) + `,` + ok("1", sums[1]) + `],"Failed":[]}`,
			[]bool{true, true, false}, 1, "entry 2 missing"},
		{"an entry answered twice", `{"Successful":[` + ok("0", sums[0]) + `,` + ok("1", sums[1]) + `,` + ok("1", sums[1]) + `,` +
			ok("2", sums[2]) + `],"Failed":[]}`, []bool{true, true, true}, 1, `unknown or repeated entry "1"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			entries, err := parseBatch([]byte(tc.answer), nil)
			if err != nil {
				t.Fatal(err)
			}
			l := NewLedger(1)
			stamps := make([]Stamp, len(bodies))
			for i := range stamps {
				stamps[i] = Stamp{Seq: l.Next()}
			}
			good, failed := sendEntries(entries, sums)
			bad, first := batchAnswer("SendMessageBatch", l, stamps, good, failed)
			if bad != tc.bad || (first == nil) != (tc.first == "") || (first != nil && !strings.Contains(first.Error(), tc.first)) {
				t.Errorf("%d bad, first %v; want %d, %q", bad, first, tc.bad, tc.first)
			}
			for i, want := range tc.acked {
				if got := l.acked[i]; got != want {
					t.Errorf("entry %d acked %v, want %v", i, got, want)
				}
			}
		})
	}
}

func TestDeleteProblems(t *testing.T) {
	for _, tc := range []struct {
		answer string
		n      int
		want   []string
	}{
		{`{"Successful":[{"Id":"1"},{"Id":"0"}],"Failed":[]}`, 2, nil},
		{`{"Successful":[{"Id":"0"}],"Failed":[{"Id":"1","SenderFault":true,"Code":"ReceiptHandleIsInvalid","Message":"no"}]}`, 2,
			[]string{"DeleteMessageBatch entry: ReceiptHandleIsInvalid: no"}},
		{`{"Successful":[{"Id":"0"},{"Id":"0"}],"Failed":[]}`, 2,
			[]string{`answer for unknown or repeated entry "0"`, "entry 1 missing"}},
		{`{"Successful":[{"Id":"0"},{"Id":"7"}],"Failed":[]}`, 1, []string{`unknown or repeated entry "7"`}},
	} {
		entries, err := parseBatch([]byte(tc.answer), nil)
		if err != nil {
			t.Fatal(err)
		}
		errs := deleteProblems(entries, tc.n)
		if len(errs) != len(tc.want) {
			t.Errorf("%s: %v, want %q", tc.answer, errs, tc.want)
			continue
		}
		for i, err := range errs {
			if !strings.Contains(err.Error(), tc.want[i]) {
				t.Errorf("%s: %v, want %q", tc.answer, err, tc.want[i])
			}
		}
	}
}

// TestFastArrive: every received copy is checked against its MD5OfBody
// and booked in the ledger; a wrong MD5, a second copy and a message
// never received each make the scenario FAIL.
func TestFastArrive(t *testing.T) {
	received := func(st Stamp, md5 string) fastMsg {
		body := st.AppendBody(nil)
		if md5 == "" {
			sum := md5Hex(body)
			md5 = string(sum[:])
		}
		return fastMsg{body: body, md5: []byte(md5), receipt: []byte("r")}
	}
	for _, tc := range []struct {
		name     string
		arrivals func(st []Stamp) []fastMsg
		status   string
		check    func(r Result) bool
	}{
		{"each once", func(st []Stamp) []fastMsg { return []fastMsg{received(st[1], ""), received(st[0], "")} },
			StatusOK, func(r Result) bool { return r.Verified == 2 }},
		{"a wrong MD5", func(st []Stamp) []fastMsg {
			return []fastMsg{received(st[0], ""), received(st[1], "00000000000000000000000000000000")}
		}, StatusFail, func(r Result) bool { return r.Errors == 1 && strings.Contains(r.Note, "MD5OfBody") }},
		{"a duplicate", func(st []Stamp) []fastMsg {
			return []fastMsg{received(st[0], ""), received(st[1], ""), received(st[0], "")}
		}, StatusFail, func(r Result) bool { return r.Duplicated == 1 }},
		{"a stranger", func(st []Stamp) []fastMsg {
			return []fastMsg{received(st[0], ""), received(st[1], ""), received(Stamp{Run: "other", Seq: 1}, "")}
		}, StatusFail, func(r Result) bool { return r.Errors == 1 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := &env{run: "r1", res: Result{Name: "x"}}
			l := NewLedger(1)
			stamps := e.stamps(l, 2)
			for _, st := range stamps {
				l.Ack(st.Seq)
			}
			e.fastArrive(l, tc.arrivals(stamps))
			e.settle(t.Context(), l)
			r := e.settleStatus(nil)
			if r.Status != tc.status || !tc.check(r) {
				t.Errorf("got %s", r.Line())
			}
		})
	}

	// A message acknowledged but never received is missing in the ledger,
	// which settle counts as lost (TestFastClientCountsWrongAnswers runs
	// that against a broker that loses one).
	e := &env{run: "r1"}
	l := NewLedger(1)
	stamps := e.stamps(l, 2)
	l.Ack(stamps[0].Seq)
	l.Ack(stamps[1].Seq)
	e.fastArrive(l, []fastMsg{received(stamps[0], "")})
	if tl := l.Tally(); tl.Missing != 1 {
		t.Errorf("tally %+v, want one missing", tl)
	}
}
