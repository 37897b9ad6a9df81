package rangecompress

// Compress returns the shelf label of nums.
func Compress(nums []int) string {
	panic("TODO: implement Compress")
}
