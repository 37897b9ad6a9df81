package ballotcount

import "strings"

// Winner returns the name with a strict majority of the valid ballots.
func Winner(ballots []string) (string, bool) {
	counts := map[string]int{}
	valid := 0
	for _, b := range ballots {
		name := strings.ToLower(strings.TrimSpace(b))
		if name == "" {
			continue
		}
		counts[name]++
		valid++
	}
	for name, n := range counts {
		if 2*n > valid {
			return name, true
		}
	}
	return "", false
}
