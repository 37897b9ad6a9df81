package snakecase

// Snake converts a CamelCase identifier to snake_case.
func Snake(name string) string {
	return name
}
