package inventorymerge

import (
	"reflect"
	"testing"
)

func TestMerge(t *testing.T) {
	tests := []struct {
		name string
		a, b map[string]int
		want []string
	}{
		{"both nil", nil, nil, nil},
		{"one side", map[string]int{"nut": 2}, nil, []string{"nut:2"}},
		{"example", map[string]int{"Bolt": 3, "nut": 2}, map[string]int{"bolt ": 1, "nut": -2}, []string{"bolt:4"}},
		{"sorted by name", map[string]int{"washer": 1, "axle": 2}, map[string]int{"gear": 5}, []string{"axle:2", "gear:5", "washer:1"}},
		{"negative dropped", map[string]int{"pin": -3}, map[string]int{"pin": 1}, nil},
		{"same name twice in one map", map[string]int{"Cog": 1, " cog": 2}, nil, []string{"cog:3"}},
		{"prefix names sort by name", map[string]int{"ab": 1, "a": 10}, nil, []string{"a:10", "ab:1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Merge(tt.a, tt.b)
			if len(got) == 0 && len(tt.want) == 0 {
				return
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Merge(%v, %v) = %q, want %q", tt.a, tt.b, got, tt.want)
			}
		})
	}
}
