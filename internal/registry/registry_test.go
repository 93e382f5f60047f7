package registry

import (
	"slices"
	"testing"
)

func TestRegistry(t *testing.T) {
	r := New[string, int]("thing")
	r.Register("b", 2)
	r.Register("a", 1)
	if v, ok := r.Lookup("a"); !ok || v != 1 {
		t.Fatalf("Lookup(a) = %d, %v", v, ok)
	}
	if _, ok := r.Lookup("c"); ok {
		t.Fatal("Lookup(c) found something")
	}
	if got := r.All(); !slices.Equal(got, []int{1, 2}) {
		t.Fatalf("All() = %v", got)
	}
	if got := r.Kinds(); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("Kinds() = %v", got)
	}
	defer func() {
		if recover() == nil {
			t.Fatal("a second registration of a kind did not panic")
		}
	}()
	r.Register("a", 3)
}
