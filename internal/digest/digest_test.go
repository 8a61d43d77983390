package digest

import (
	"testing"

	"github.com/ferrymq/ferry/internal/engine"
)

func str(name, dataType, value string) engine.MessageAttribute {
	return engine.MessageAttribute{Name: name, DataType: dataType, StringValue: value}
}

// The expected digests are the ones AWS and the SDKs compute.
func TestMD5OfAttributes(t *testing.T) {
	tests := []struct {
		name  string
		attrs []engine.MessageAttribute
		want  string
	}{
		{"none", nil, ""},
		{"Foo String Bar", []engine.MessageAttribute{str("Foo", "String", "Bar")}, "ae7155c6026991b6d54b11589678bf9c"},
		{"two numbers", []engine.MessageAttribute{str("attr1", "Number", "99.12"), str("attr2", "Number", "109.12")}, "9b720b3af309c1c4b0d395c53b08c502"},
		{"custom Number.float", []engine.MessageAttribute{str("customNumberTypeAttrib", "Number.float", "4563442423554324324264524243.32543234")}, "9fe1b90bbd9965bdf77bac517c7d2495"},
		{"Binary", []engine.MessageAttribute{{Name: "binaryAttribute", DataType: "Binary", BinaryValue: []byte("Hello binary world!")}}, "31a92b15d92f8db860eda32aceb656c3"},
		{"three strings", []engine.MessageAttribute{str("General", "String", "Kenobi"), str("Hello", "String", "There"), str("Help.Me", "String", "Me")}, "4c360f3fdafd970e05fae2f149d997f5"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := MD5OfAttributes(tt.attrs); got != tt.want {
				t.Errorf("MD5OfAttributes = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestMD5Hex(t *testing.T) {
	if got, want := MD5Hex("msg"), "6e2baaf3b97dbeef01c0043275f9a0e7"; got != want {
		t.Errorf("MD5Hex(msg) = %q, want %q", got, want)
	}
}

func TestIsBinaryType(t *testing.T) {
	for dt, want := range map[string]bool{"Binary": true, "Binary.gif": true, "String": false, "Number.Binary": false, "BinaryX": false} {
		if got := IsBinaryType(dt); got != want {
			t.Errorf("IsBinaryType(%q) = %v", dt, got)
		}
	}
}
