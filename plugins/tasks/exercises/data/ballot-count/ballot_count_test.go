package ballotcount

import "testing"

func TestWinner(t *testing.T) {
	tests := []struct {
		name    string
		ballots []string
		want    string
		wantOK  bool
	}{
		{"no ballots", nil, "", false},
		{"only spoiled", []string{"", "  "}, "", false},
		{"single vote", []string{"Ada"}, "ada", true},
		{"clear majority", []string{"ada", "Bob", "ADA", " ada "}, "ada", true},
		{"tie", []string{"ada", "bob"}, "", false},
		{"plurality is not enough", []string{"ada", "ada", "bob", "bob", "cy", "ada", "cy"}, "", false},
		{"spoiled do not count", []string{"bob", "", "bob", "ada", " "}, "bob", true},
		{"exactly half fails", []string{"ada", "ada", "bob", "cy"}, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := Winner(tt.ballots)
			if got != tt.want || ok != tt.wantOK {
				t.Errorf("Winner(%q) = %q, %v, want %q, %v", tt.ballots, got, ok, tt.want, tt.wantOK)
			}
		})
	}
}
