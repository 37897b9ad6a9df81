package quarterhour

import (
	"fmt"
	"strconv"
	"strings"
)

// Round rounds clock to the nearest quarter hour.
func Round(clock string) (string, error) {
	hs, ms, ok := strings.Cut(clock, ":")
	if !ok || len(hs) < 1 || len(hs) > 2 || len(ms) != 2 {
		return "", fmt.Errorf("%q is not a clock time H:MM", clock)
	}
	h, err1 := strconv.Atoi(hs)
	m, err2 := strconv.Atoi(ms)
	if err1 != nil || err2 != nil || h < 0 || h > 23 || m < 0 || m > 59 || strings.ContainsAny(clock, "+-") {
		return "", fmt.Errorf("%q is not a clock time H:MM", clock)
	}
	q := (m + 7) / 15 * 15
	if q == 60 {
		q = 0
		h = (h + 1) % 24
	}
	return fmt.Sprintf("%02d:%02d", h, q), nil
}
