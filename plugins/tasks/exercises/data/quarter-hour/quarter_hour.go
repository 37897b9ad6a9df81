package quarterhour

// Round rounds clock to the nearest quarter hour.
func Round(clock string) (string, error) {
	return "", nil
}
