package rangecompress

import "testing"

func TestCompress(t *testing.T) {
	tests := []struct {
		name string
		nums []int
		want string
	}{
		{"nil", nil, ""},
		{"empty", []int{}, ""},
		{"single", []int{7}, "7"},
		{"pair stays apart", []int{4, 5}, "4,5"},
		{"run of three", []int{1, 2, 3}, "1-3"},
		{"mixed", []int{1, 2, 3, 5, 7, 8, 9, 10}, "1-3,5,7-10"},
		{"unsorted with duplicates", []int{9, 3, 1, 2, 3, 2, 9}, "1-3,9"},
		{"negative run", []int{-1, -3, -2, 0}, "-3-0"},
		{"gaps everywhere", []int{10, 20, 30}, "10,20,30"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Compress(tt.nums); got != tt.want {
				t.Errorf("Compress(%v) = %q, want %q", tt.nums, got, tt.want)
			}
		})
	}
}

func TestCompressLeavesInputAlone(t *testing.T) {
	nums := []int{3, 1, 2}
	Compress(nums)
	if nums[0] != 3 || nums[1] != 1 || nums[2] != 2 {
		t.Errorf("Compress changed its input to %v", nums)
	}
}
