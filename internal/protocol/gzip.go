package protocol

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"strings"
)

// Some operations are sent compressed (CloudWatch's PutMetricData carries
// Smithy's requestCompression trait: the SDKs gzip bodies over 10 KiB by
// default, and always when told to).

// ErrUnsupportedEncoding answers a Content-Encoding other than gzip or
// identity.
var ErrUnsupportedEncoding = &Error{Shape: "UnsupportedMediaTypeException", Type: "com.amazon.coral.service#UnsupportedMediaTypeException",
	Code: "UnsupportedMediaTypeException", Status: http.StatusUnsupportedMediaType}

// decodeContentEncoding undoes the request's Content-Encoding (a list, the
// last applied last), keeping the result within limit bytes.
func (h *Handler) decodeContentEncoding(r *http.Request, body []byte, limit int64) ([]byte, error) {
	enc := r.Header.Values("Content-Encoding")
	if len(enc) == 0 {
		return body, nil
	}
	var codings []string
	for _, v := range enc {
		for c := range strings.SplitSeq(v, ",") {
			if c = strings.ToLower(strings.TrimSpace(c)); c != "" && c != "identity" {
				codings = append(codings, c)
			}
		}
	}
	if len(codings) == 0 {
		return body, nil
	}
	out := h.buffer()
	defer h.release(out)
	for i := len(codings) - 1; i >= 0; i-- {
		if codings[i] != "gzip" && codings[i] != "x-gzip" {
			return nil, ErrUnsupportedEncoding.WithMessage("The Content-Encoding %s is not supported.", codings[i])
		}
		zr, err := gzip.NewReader(bytes.NewReader(body))
		if err != nil {
			return nil, ErrSerialization.WithMessage("The request body is not valid gzip.")
		}
		out.Reset()
		if _, err := out.ReadFrom(io.LimitReader(zr, limit+1)); err != nil {
			return nil, ErrSerialization.WithMessage("The request body is not valid gzip.")
		}
		if int64(out.Len()) > limit {
			return nil, ErrRequestTooLarge
		}
		body = bytes.Clone(out.Bytes())
	}
	return body, nil
}
