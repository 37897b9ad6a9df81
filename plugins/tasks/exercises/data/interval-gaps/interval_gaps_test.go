package intervalgaps

import (
	"reflect"
	"testing"
)

func TestGaps(t *testing.T) {
	day := Span{540, 1020} // 9:00 to 17:00
	tests := []struct {
		name string
		busy []Span
		min  int
		want []Span
	}{
		{"free all day", nil, 30, []Span{{540, 1020}}},
		{"one meeting", []Span{{600, 660}}, 30, []Span{{540, 600}, {660, 1020}}},
		{"too short gap dropped", []Span{{540, 600}, {620, 1020}}, 30, nil},
		{"exact fit kept", []Span{{540, 600}, {630, 1020}}, 30, []Span{{600, 630}}},
		{"overlapping and unsorted", []Span{{700, 800}, {600, 720}, {610, 650}}, 15, []Span{{540, 600}, {800, 1020}}},
		{"touching", []Span{{600, 660}, {660, 720}}, 60, []Span{{540, 600}, {720, 1020}}},
		{"outside the day", []Span{{0, 570}, {1000, 1440}}, 10, []Span{{570, 1000}}},
		{"empty spans ignored", []Span{{700, 700}, {800, 750}}, 480, []Span{{540, 1020}}},
		{"busy all day", []Span{{500, 1100}}, 1, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Gaps(day, tt.busy, tt.min)
			if len(got) == 0 && len(tt.want) == 0 {
				return
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Gaps(%v, %v, %d) = %v, want %v", day, tt.busy, tt.min, got, tt.want)
			}
		})
	}
}
