package sqs

import (
	"testing"

	"github.com/ferrymq/ferry/internal/digest"
	"github.com/ferrymq/ferry/internal/engine"
)

func str(name, dataType, value string) engine.MessageAttribute {
	return engine.MessageAttribute{Name: name, DataType: dataType, StringValue: value}
}

// The system attribute digest is the attribute digest of the one-entry map
// {AWSTraceHeader: String}.
func TestMD5OfSystemAttributes(t *testing.T) {
	t.Parallel()
	trace := "Root=1-5759e988-bd862e3fe1be46a994272793;Sampled=1"
	got := digest.MD5OfAttributes(traceHeaderAttrs(trace))
	want := digest.MD5OfAttributes([]engine.MessageAttribute{str("AWSTraceHeader", "String", trace)})
	if got != want || got == "" {
		t.Errorf("trace digest = %q, want %q", got, want)
	}
	if digest.MD5OfAttributes(traceHeaderAttrs("")) != "" {
		t.Error("no trace header must give no digest")
	}
}

func TestBuildAttributesSortsByName(t *testing.T) {
	t.Parallel()
	attrs, _, err := buildAttributes(map[string]MessageAttributeValue{
		"attr2": {DataType: "Number", StringValue: "109.12"},
		"attr1": {DataType: "Number", StringValue: "99.12"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := digest.MD5OfAttributes(attrs), "9b720b3af309c1c4b0d395c53b08c502"; got != want {
		t.Errorf("digest = %q, want %q", got, want)
	}
}
