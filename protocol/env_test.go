package protocol

import "testing"

func TestCheckEnv(t *testing.T) {
	if err := CheckEnv(map[string]string{"A": "x", "_b1": "multi\nline $(v)", "EMPTY": ""}); err != nil {
		t.Fatalf("good env refused: %v", err)
	}
	for _, bad := range []map[string]string{
		{"A=B": "x"}, {"A\nB": "x"}, {"1A": "x"}, {"A-B": "x"}, {"": "x"}, {"A\x00": "x"}, {"Ä": "x"}, {"A": "nul\x00"},
	} {
		if err := CheckEnv(bad); err == nil {
			t.Errorf("CheckEnv accepted %q", bad)
		}
	}
}
