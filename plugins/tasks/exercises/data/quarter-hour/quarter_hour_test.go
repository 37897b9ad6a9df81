package quarterhour

import "testing"

func TestRound(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		{"9:00", "09:00"},
		{"9:07", "09:00"},
		{"9:08", "09:15"},
		{"12:22", "12:15"},
		{"12:23", "12:30"},
		{"12:37", "12:30"},
		{"12:38", "12:45"},
		{"12:52", "12:45"},
		{"12:53", "13:00"},
		{"23:53", "00:00"},
		{"0:00", "00:00"},
		{"07:44", "07:45"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := Round(tt.in)
			if err != nil || got != tt.want {
				t.Errorf("Round(%q) = %q, %v, want %q", tt.in, got, err, tt.want)
			}
		})
	}
}

func TestRoundRejects(t *testing.T) {
	for _, in := range []string{"", "930", "24:00", "12:60", "ab:cd", "1:5", "-1:30", "123:00", "12:+5"} {
		t.Run(in, func(t *testing.T) {
			if got, err := Round(in); err == nil {
				t.Errorf("Round(%q) = %q, want an error", in, got)
			}
		})
	}
}
