package fuzzing

import "testing"

// An exhausted input reads zeros, so every input decodes to something.
func TestExhaustedReadsZero(t *testing.T) {
	in := New([]byte{7})
	if b := in.Byte(); b != 7 {
		t.Fatalf("first byte %d", b)
	}
	if in.Byte() != 0 || in.Intn(5) != 0 || in.Bool() || in.Raw(10) != "" || in.Word("a", "b") != "a" {
		t.Fatal("an exhausted input must read zero")
	}
}

func TestWordRawPastVocabulary(t *testing.T) {
	in := New([]byte{255, 3, 'x', '\n', 0})
	if w := in.Word("a"); w != "x\n\x00" {
		t.Fatalf("word %q", w)
	}
}
