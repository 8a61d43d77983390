package snsjson

import (
	"bytes"
	"encoding/json"
)

// IsNull reports whether a member is absent (nil) or JSON null.
func IsNull(raw json.RawMessage) bool {
	return raw == nil || bytes.Equal(bytes.TrimSpace(raw), []byte("null"))
}
