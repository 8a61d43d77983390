package delivery

import (
	"encoding/json"
	"slices"
)

// Forget drops the recorded deliveries and the kept status log lines of
// the topics topic picks (all of them when topic is nil): a reset of the
// broker's state. Lines already written to the status log's file stay.
func (d *Service) Forget(topic func(topicARN string) bool) {
	if topic == nil {
		d.records.clear()
		d.status.clear()
		return
	}
	d.records.retain(func(r *Record) bool { return !topic(r.TopicArn) })
	d.status.retain(func(line json.RawMessage) bool {
		var st struct {
			Notification struct {
				TopicARN string `json:"topicArn"`
			} `json:"notification"`
		}
		return json.Unmarshal(line, &st) != nil || !topic(st.Notification.TopicARN)
	})
}

// retain keeps the deliveries keep accepts, in their order.
func (l *recordLog) retain(keep func(*Record) bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var kept []Record
	for i := range l.n {
		if d := &l.ring[(l.head+i)%len(l.ring)]; keep(d) {
			kept = append(kept, *d)
		}
	}
	clear(l.ring)
	l.head, l.n, l.bytes = 0, len(kept), 0
	for i := range kept {
		l.ring[i] = kept[i]
		l.bytes += recordSize(&kept[i])
	}
}

// retain keeps the lines keep accepts, in their order.
func (l *statusLog) retain(keep func(json.RawMessage) bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var kept []json.RawMessage
	if l.full {
		kept = slices.DeleteFunc(slices.Clone(l.ring[l.next:]), func(line json.RawMessage) bool { return !keep(line) })
	}
	for _, line := range l.ring[:l.next] {
		if keep(line) {
			kept = append(kept, line)
		}
	}
	clear(l.ring)
	n := copy(l.ring, kept)
	l.next, l.full = n%len(l.ring), n == len(l.ring)
}
