package delivery

import "testing"

func TestMaskEndpoint(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{"http://user:secret@example.com/path", "http://user:****@example.com/path"},
		{"https://user:secret@example.com:8443/p?q=1#f", "https://user:****@example.com:8443/p?q=1#f"},
		{"HTTPS://User:Secret@Example.com", "HTTPS://User:****@Example.com"},
		{"http://user:p@ss:w0rd@host/", "http://user:****@host/"}, // the last '@' ends the user information
		{"http://user:s%40cret@host/", "http://user:****@host/"},
		{"http://user:@host/", "http://user:****@host/"},
		{"http://user@host/", "http://user@host/"},
		{"http://host/", "http://host/"},
		{"http://host/a:b@c", "http://host/a:b@c"},
		{"http://host?x=a:b@c", "http://host?x=a:b@c"},
		{"http://host#a:b@c", "http://host#a:b@c"},
		{"arn:aws:sqs:us-east-1:000000000000:q", "arn:aws:sqs:us-east-1:000000000000:q"},
		{"someone@example.com", "someone@example.com"},
		{"+15555550100", "+15555550100"},
	} {
		if got := MaskEndpoint(tc.in); got != tc.want {
			t.Errorf("MaskEndpoint(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
