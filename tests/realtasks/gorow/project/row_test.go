package gorow

import "testing"

func TestFieldReadsEachField(t *testing.T) {
	for i, want := range []string{"a", "b", "c"} {
		got, ok := Field("a, b ,c", i)
		if !ok || got != want {
			t.Fatalf("Field(%d) = %q, %v; want %q", i, got, ok, want)
		}
	}
}

func TestFieldRefusesANegativeIndex(t *testing.T) {
	if _, ok := Field("a", -1); ok {
		t.Fatal("Field(-1) found a field")
	}
}
