package ballotcount

// Winner returns the name with a strict majority of the valid ballots.
func Winner(ballots []string) (string, bool) {
	return "", false
}
