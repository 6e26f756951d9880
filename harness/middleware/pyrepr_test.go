package middleware

import "testing"

func TestPyRepr(t *testing.T) {
	tests := []struct{ in, want string }{
		{"/a.txt", `'/a.txt'`},
		{"", `''`},
		{"it's", `"it's"`},
		{`say "hi"`, `'say "hi"'`},
		{`both ' and "`, `'both \' and "'`},
		{`back\slash`, `'back\\slash'`},
		{"tab\tnew\nret\r", `'tab\tnew\nret\r'`},
		{"bell\x07", `'bell\x07'`},
		{"café ☕", `'café ☕'`},
		{"nbsp\u00a0", `'nbsp\xa0'`},
		{"zero\u200bwidth", `'zero\u200bwidth'`},
		{"bad\xffbyte", `'bad\xffbyte'`},
	}
	for _, tt := range tests {
		if got := pyRepr(tt.in); got != tt.want {
			t.Errorf("pyRepr(%q) = %s, want %s", tt.in, got, tt.want)
		}
	}
	if got := pyListRepr([]string{"/test.txt", "/test2.txt"}); got != `['/test.txt', '/test2.txt']` {
		t.Errorf("pyListRepr = %s", got)
	}
	if got := pyListRepr(nil); got != `[]` {
		t.Errorf("pyListRepr(nil) = %s", got)
	}
}
