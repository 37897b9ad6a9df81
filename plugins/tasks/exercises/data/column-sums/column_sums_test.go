package columnsums

import (
	"reflect"
	"strings"
	"testing"
)

func TestSums(t *testing.T) {
	tests := []struct {
		name string
		text string
		want []int
	}{
		{"empty", "", nil},
		{"blank lines only", "\n  \n", nil},
		{"one line", "1,2,3", []int{1, 2, 3}},
		{"two lines", "1,2,3\n4,5,6\n", []int{5, 7, 9}},
		{"spaces and blanks", " 10 , -2\n\n 5,2 \n", []int{15, 0}},
		{"single column", "7\n8\n9", []int{24}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Sums(tt.text)
			if err != nil {
				t.Fatalf("Sums(%q) error: %v", tt.text, err)
			}
			if len(got) == 0 && len(tt.want) == 0 {
				return
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Sums(%q) = %v, want %v", tt.text, got, tt.want)
			}
		})
	}
}

func TestSumsErrors(t *testing.T) {
	tests := []struct {
		name, text, wantIn string
	}{
		{"ragged", "1,2,3\n4,5,6\n7,8", "line 3"},
		{"ragged after blank", "1,2\n\n3", "line 3"},
		{"not a number", "1,2\n3,x", "line 2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Sums(tt.text)
			if err == nil || !strings.Contains(err.Error(), tt.wantIn) {
				t.Errorf("Sums(%q) error = %v, want one containing %q", tt.text, err, tt.wantIn)
			}
		})
	}
}
