package engine

import (
	"fmt"
	"reflect"
	"testing"
)

func TestRecordNews(t *testing.T) {
	tests := []struct {
		name string
		add  []RecordRef
		want RecordBatch
	}{
		{"nothing", nil, RecordBatch{}},
		{"records in kind order, then key order, each once",
			[]RecordRef{{"sub", "b"}, {"topic", "z"}, {"sub", "a"}, {"sub", "b"}},
			RecordBatch{Keys: []RecordRef{{"topic", "z"}, {"sub", "a"}, {"sub", "b"}}}},
		{"a whole kind takes in its records",
			[]RecordRef{{"sub", "a"}, {"sub", ""}, {"topic", "t"}},
			RecordBatch{Kinds: []string{"sub"}, Keys: []RecordRef{{"topic", "t"}}}},
		{"everything", []RecordRef{{"topic", "t"}, {"", ""}}, RecordBatch{Kinds: []string{"topic", "sub"}}},
		{"other kinds are not the service's", []RecordRef{{"alarm", "a"}, {"alarm", ""}}, RecordBatch{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := NewRecordNews("topic", "sub")
			for _, r := range tt.add {
				n.Add(r.Kind, r.Key)
			}
			if got := n.Take(); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Take = %+v, want %+v", got, tt.want)
			}
			if got := n.Take(); !got.Empty() {
				t.Errorf("a second Take = %+v, want nothing", got)
			}
		})
	}
}

func TestRecordNewsWakesAndPutsBack(t *testing.T) {
	n := NewRecordNews("topic")
	select {
	case <-n.Wake():
		t.Fatal("woken with no news")
	default:
	}
	n.Add("topic", "a")
	n.Add("topic", "b")
	select {
	case <-n.Wake():
	default:
		t.Fatal("not woken by news")
	}
	b := n.Take()
	n.PutBack(b)
	if got := n.Take(); !reflect.DeepEqual(got, b) {
		t.Errorf("after PutBack Take = %+v, want %+v", got, b)
	}
}

func TestRecordNewsBounded(t *testing.T) {
	n := NewRecordNews("topic")
	for i := range MaxNewsKeys + 1 {
		n.Add("topic", fmt.Sprint(i))
	}
	if got := n.Take(); !reflect.DeepEqual(got.Kinds, []string{"topic"}) || len(got.Keys) != 0 {
		t.Errorf("past the bound Take = %d kinds %v, %d keys; want the kind whole", len(got.Kinds), got.Kinds, len(got.Keys))
	}
}
