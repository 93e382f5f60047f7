package argmax

import "testing"

func TestKey(t *testing.T) {
	cases := []struct {
		m    map[string]int
		keep func(string) bool
		want string
		ok   bool
	}{
		{map[string]int{"a": 1, "b": 3, "c": 2}, nil, "b", true},
		{map[string]int{"z": 2, "b": 2, "m": 2}, nil, "b", true}, // a tie goes to the smallest key
		{map[string]int{"a": 5, "b": 3}, func(k string) bool { return k != "a" }, "b", true},
		{map[string]int{"a": 5}, func(string) bool { return false }, "", false},
		{map[string]int{}, nil, "", false},
	}
	for _, c := range cases {
		for range 20 { // map order changes from one range to the next
			got, ok := Key(c.m, c.keep)
			if got != c.want || ok != c.ok {
				t.Fatalf("Key(%v) = %q, %v; want %q, %v", c.m, got, ok, c.want, c.ok)
			}
		}
	}
}
