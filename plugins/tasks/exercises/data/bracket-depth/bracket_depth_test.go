package bracketdepth

import "testing"

func TestDepth(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want int
	}{
		{"no brackets", "hello", 0},
		{"empty", "", 0},
		{"one pair", "f(x)", 1},
		{"nested kinds", "(a[b])", 2},
		{"siblings", "()[]{}", 1},
		{"deep", "{[(([]))]}", 5},
		{"unclosed", "((x)", -1},
		{"unopened", "x)", -1},
		{"crossed", "([)]", -1},
		{"closing first", ")(", -1},
		{"text around", "if (a[i] > b) { c(d(e)) }", 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Depth(tt.in); got != tt.want {
				t.Errorf("Depth(%q) = %d, want %d", tt.in, got, tt.want)
			}
		})
	}
}
