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
	t.Parallel()
	tests := []struct {
		name  string
		attrs []engine.MessageAttribute
		want  string
	}{
		{"none", nil, ""},
		{"Foo String Bar", []engine.MessageAttribute{str("Foo", "String", "Bar")}, "ae7155c6026991b6d54b11589678bf9c"},
		{"MyAttribute String foobar", []engine.MessageAttribute{str("MyAttribute", "String", "foobar")}, "adb59cd4678ea5a855436b949cd07ab6"},
		{"attr1 Number 99.12", []engine.MessageAttribute{str("attr1", "Number", "99.12")}, "d302007e9aa062660afc85fd0a482472"},
		{"attr1 Number 19.12", []engine.MessageAttribute{str("attr1", "Number", "19.12")}, "1f07082409022a373fa2a2601f82b3cb"},
		{"two numbers", []engine.MessageAttribute{str("attr1", "Number", "99.12"), str("attr2", "Number", "109.12")}, "9b720b3af309c1c4b0d395c53b08c502"},
		{"attribName1 String", []engine.MessageAttribute{str("attribName1", "String", "attribValue 1")}, "19e27d4e946b072f3f58da80d94fd778"},
		{"custom Number.float", []engine.MessageAttribute{str("customNumberTypeAttrib", "Number.float", "4563442423554324324264524243.32543234")}, "9fe1b90bbd9965bdf77bac517c7d2495"},
		{"Binary", []engine.MessageAttribute{{Name: "binaryAttribute", DataType: "Binary", BinaryValue: []byte("Hello binary world!")}}, "31a92b15d92f8db860eda32aceb656c3"},
		// Recorded on AWS: a receive filtered by MessageAttributeNames digests
		// only the attributes it returns.
		{"General Hello Help.Me", []engine.MessageAttribute{str("General", "String", "Kenobi"), str("Hello", "String", "There"), str("Help.Me", "String", "Me")}, "4c360f3fdafd970e05fae2f149d997f5"},
		{"General Hello", []engine.MessageAttribute{str("General", "String", "Kenobi"), str("Hello", "String", "There")}, "fca026605781cb4126a1e9044df24232"},
		{"Hello", []engine.MessageAttribute{str("Hello", "String", "There")}, "a311262e065454b75da111d535b8dacd"},
		{"Hello Help.Me", []engine.MessageAttribute{str("Hello", "String", "There"), str("Help.Me", "String", "Me")}, "83fee93c1bcd8b9a5a923ffacdc636c7"},
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
	t.Parallel()
	if got, want := MD5Hex("msg"), "6e2baaf3b97dbeef01c0043275f9a0e7"; got != want {
		t.Errorf("MD5Hex(msg) = %q, want %q", got, want)
	}
}

func TestIsBinaryType(t *testing.T) {
	t.Parallel()
	for dt, want := range map[string]bool{"Binary": true, "Binary.gif": true, "String": false, "Number.Binary": false, "BinaryX": false} {
		if got := IsBinaryType(dt); got != want {
			t.Errorf("IsBinaryType(%q) = %v", dt, got)
		}
	}
}
