package jsonscan

import "testing"

func TestValueEnd(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want string
	}{
		{`"a\"b" ,`, `"a\"b"`},
		{`{"a":[1,{"b":"}"}]} x`, `{"a":[1,{"b":"}"}]}`},
		{`[["]"],2],`, `[["]"],2]`},
		{`123,`, `123`},
		{`true}`, `true`},
		{`null `, `null`},
		{`{"open":`, `{"open":`},
	} {
		if got := tc.in[:ValueEnd([]byte(tc.in), 0)]; got != tc.want {
			t.Errorf("ValueEnd(%q) took %q, want %q", tc.in, got, tc.want)
		}
	}
	if got := SkipSpace([]byte(" \t\r\n x"), 0); got != 5 {
		t.Errorf("SkipSpace = %d, want 5", got)
	}
	if got := ValueEnd(nil, 0); got != 0 {
		t.Errorf("ValueEnd(nil) = %d, want 0", got)
	}
}
